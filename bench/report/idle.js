'use strict';
// Idle: many concurrent watches that carry no events; memory, threads and connections.

const { fmt, section, LABEL, le, target, noResult } = require('./measurements');

const HEADER = (
  'proto|client|RSS KiB/watch|RSS MiB 1 → all|threads 0 / 1 / all|' +
  'TCP conns 1 / all|h2 sessions|open all s'
).split('|');

function idle({ plan, clients }, m) {
  const body = [];
  for (const client of clients.filter((c) => c !== 'native-fields')) {
    if (!m.resultsOf('idle', 'https', client).length) {
      body.push(['https', LABEL[client], noResult(m.errorsOf('idle', 'https', client))]);
      continue;
    }
    const med = (k) => m.med('idle', 'https', client, k);
    body.push([
      'https',
      LABEL[client],
      fmt(med('kibPerWatch'), 1),
      `${fmt(med('rssOneMiB'), 0)} → ${fmt(med('rssAllMiB'), 0)}`,
      `${fmt(med('threads0'), 0)} / ${fmt(med('threads1'), 0)} / ${fmt(med('threadsN'), 0)}`,
      `${fmt(med('connectionsAtOne'), 0)} / ${fmt(med('connectionsAtAll'), 0)}`,
      fmt(med('h2SessionsAtAll'), 0),
      fmt(med('openSeconds'), 2),
    ]);
  }
  return {
    lines: section(
      `${plan.idle.watches} concurrent idle watches over https (TCP connections counted by the server)`,
      HEADER,
      body,
    ),
    checks: checks(plan, m),
  };
}

function checks(plan, m) {
  const native = (k) => m.med('idle', 'https', 'native', k);
  const kib = native('kibPerWatch');
  const th1 = native('threads1');
  const thN = native('threadsN');
  const conns = native('connectionsAtAll');
  const baseConns = m.med('idle', 'https', 'baseline', 'connectionsAtAll');
  // The load server advertises kube-apiserver's 100 streams per connection; the native pool
  // puts at most 90 watches on one (a tenth stays free for short requests), so 1 000 watches
  // need 12 connections and the quick run's 300 need 4: at most ⌈n / 90⌉ + 1.
  const bound = Math.ceil(plan.idle.watches / 90) + 1;
  return [
    target(
      `idle: RSS per watch, ${plan.idle.watches} watches (native)`,
      `${fmt(kib, 1)} KiB`,
      le(kib, 32),
      '≤ 32 KiB',
    ),
    target(
      'idle: threads with 1 vs all watches (native)',
      `${fmt(th1, 0)} → ${fmt(thN, 0)}`,
      th1 === thN,
      'constant',
    ),
    target(
      `idle: TCP connections for ${plan.idle.watches} watches (native vs baseline)`,
      `${fmt(conns, 0)} vs ${fmt(baseConns, 0)}`,
      le(conns, bound),
      `≤ ⌈n / (100 − 10)⌉ + 1 = ${bound}`,
    ),
  ];
}

module.exports = { idle };
