'use strict';
// `node bench/investigations/backstage-live-profile.js [--tabs=N] [--seconds=N] [--refresh=MS]`
//
// Where an idle tab's browser CPU goes, stock against live (issue 26): the setup of
// bench/backstage-live.js (the six simulated clusters, a fresh backend per variant, the page of
// testbed/fixtures/live-tab), N idle tabs (default 5), then for `seconds` (default 20) with no
// change: the CPU of each kind of Chromium process (browser, renderer, GPU, utility) from /proc,
// and in one tab Chrome's own task counters (Performance.getMetrics: script, layout, style
// recalculation, task time) and a V8 CPU profile, its functions with the most self time.
// Loopback only; the browser and every child end with this process.

const fs = require('node:fs');
const { bundle } = require('../../testbed/live-helpers');
const { failRun } = require('../children');
const { startFleet } = require('../backstage-common');
const { startVariant, CHROMIUM } = require('../backstage-live');

const TICK = 100;
const log = (...a) => console.error(...a);

/** CPU seconds of every Chromium process, by its --type (the browser process has none). */
function chromiumCpuByType() {
  const byType = {};
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    let cmdline;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (!cmdline.startsWith(CHROMIUM) && !cmdline.includes('/chromium/chromium')) continue;
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const type = /--type=([a-z-]+)/.exec(cmdline)?.[1] ?? 'browser';
    const sub = /--utility-sub-type=([\w.]+)/.exec(cmdline)?.[1];
    const key = sub ? `${type}:${sub}` : type;
    byType[key] = (byType[key] ?? 0) + (Number(fields[11]) + Number(fields[12])) / TICK;
  }
  return byType;
}

function summarize(profile, top = 25) {
  const self = new Map();
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const dt = profile.timeDeltas;
  const counts = new Map();
  profile.samples.forEach((id, i) => counts.set(id, (counts.get(id) ?? 0) + (dt[i] ?? 0)));
  let total = 0;
  for (const [id, us] of counts) {
    const { callFrame: f } = byId.get(id);
    const url = f.url.replace(/^.*\//, '');
    const key = `${f.functionName || '(anonymous)'} ${url}:${f.lineNumber + 1}:${f.columnNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + us);
    total += us;
  }
  const rows = [...self].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { total, rows };
}

async function variantProfile(info, files, variant, { tabs, seconds, refreshMs }) {
  const { tab, close } = await startVariant(info, files, variant, refreshMs);
  try {
    const pages = [];
    for (let i = 0; i < tabs; i++) pages.push(await tab(info.withPods[i * 7]));
    await new Promise((r) => setTimeout(r, 5000));
    const cdp = await pages[0].context().newCDPSession(pages[0]);
    await cdp.send('Performance.enable');
    await cdp.send('Profiler.enable');
    await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
    const metric = async () =>
      Object.fromEntries((await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value]));
    const m0 = await metric();
    const cpu0 = chromiumCpuByType();
    await cdp.send('Profiler.start');
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const { profile } = await cdp.send('Profiler.stop');
    const cpu1 = chromiumCpuByType();
    const m1 = await metric();
    const perMinute = (v) => (v * 60) / seconds;
    const processes = Object.fromEntries(
      Object.keys(cpu1).map((k) => [k, +perMinute(cpu1[k] - (cpu0[k] ?? 0)).toFixed(2)]),
    );
    const counters = {};
    for (const k of ['TaskDuration', 'ScriptDuration', 'LayoutDuration', 'RecalcStyleDuration']) {
      counters[k] = +perMinute(m1[k] - m0[k]).toFixed(3);
    }
    for (const k of ['LayoutCount', 'RecalcStyleCount']) counters[k] = m1[k] - m0[k];
    return { processes, counters, profile: summarize(profile) };
  } finally {
    await close();
  }
}

async function main(argv) {
  const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const tabs = Number(opt('tabs') ?? 5);
  const seconds = Number(opt('seconds') ?? 20);
  const refreshMs = Number(opt('refresh') ?? 500);
  const { clusters, info } = await startFleet();
  const files = await bundle();
  for (const variant of ['stock', 'live']) {
    log(`${variant}: ${tabs} tabs, ${seconds} s idle…`);
    const r = await variantProfile(info, files, variant, { tabs, seconds, refreshMs });
    console.log(`## ${variant}`);
    console.log('Chromium CPU s/min by process type:', JSON.stringify(r.processes));
    console.log('one tab, s/min:', JSON.stringify(r.counters));
    console.log(
      `one tab's V8 profile: ${(r.profile.total / 1e3).toFixed(0)} ms sampled; top self time (ms):`,
    );
    for (const [k, us] of r.profile.rows) console.log(`  ${(us / 1e3).toFixed(1).padStart(8)}  ${k}`);
  }
  clusters.stop();
}

main(process.argv.slice(2)).catch(failRun);
