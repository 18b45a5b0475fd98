'use strict';
// live-frontend's pod-log.mjs and pod-events.mjs, the live logs' parts that are not React: the
// stamps, the resume that shows no line twice and loses none, the follow's reads (a line cut
// across chunks or by a body's end, a wake, a failure's pause) over Responses made here, and the
// events' rows and polling. The browser test (live-browser-logs.test.js) runs them for real.

const test = require('node:test');
const assert = require('node:assert/strict');

const loadLog = () => import('../packages/live-frontend/pod-log.mjs');
const loadEvents = () => import('../packages/live-frontend/pod-events.mjs');

/** A Response whose body is `chunks` (strings), then ends (or stays open with `open`). */
function bodyOf(chunks, { open = false } = {}) {
  const encoder = new TextEncoder();
  const stream = new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      if (!open) controller.close();
    },
  });
  return new Response(stream, { status: 200 });
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 10));

test('stamps: RFC3339Nano of any fraction and zone compare as instants; sinceTime is the whole second in UTC', async () => {
  const { splitStamp, compareStamps, sinceTimeOf } = await loadLog();
  const a = splitStamp('2026-01-02T03:04:05.5Z hello world');
  assert.equal(a.text, 'hello world');
  assert.equal(compareStamps(a.stamp, splitStamp('2026-01-02T03:04:05.500000000Z x').stamp), 0);
  assert.ok(compareStamps(a.stamp, splitStamp('2026-01-02T03:04:05.49999Z x').stamp) > 0);
  assert.equal(
    compareStamps(
      splitStamp('2026-01-02T04:04:05+01:00 x').stamp,
      splitStamp('2026-01-02T03:04:05Z x').stamp,
    ),
    0,
  );
  assert.equal(sinceTimeOf(a.stamp), '2026-01-02T03:04:05Z');
  assert.deepEqual(splitStamp('no stamp here'), { stamp: null, text: 'no stamp here' });
});

test('a resumed read drops the lines of its second shown already: those stamped earlier, and the first k at the last stamp', async () => {
  const { LogLines } = await loadLog();
  const lines = new LogLines();
  assert.deepEqual(lines.resume(100), { tailLines: 100 });
  for (const raw of [
    '2026-01-02T03:04:04.9Z before',
    '2026-01-02T03:04:05.1Z a',
    '2026-01-02T03:04:05.2Z b',
    '2026-01-02T03:04:05.2Z c',
  ])
    assert.ok(lines.push(raw));
  assert.deepEqual(lines.resume(100), { sinceTime: '2026-01-02T03:04:05Z' });
  // What the API server sends from the second's start: a, b, c again, then a fourth line at c's stamp.
  const shown = ['a', 'b', 'c', 'd'].map((t, i) =>
    lines.push(`2026-01-02T03:04:05.${i === 0 ? 1 : 2}Z ${t}`),
  );
  assert.deepEqual(shown, [false, false, false, true]);
  assert.ok(lines.push('2026-01-02T03:04:06Z e'));
  assert.equal(lines.text(), 'before\na\nb\nc\nd\ne');
  assert.equal(lines.text({ timestamps: true }).split('\n')[1], '2026-01-02T03:04:05.1Z a');
  // A read resumed at d's stamp (three shown at it: b, c, d) once e came: e's second.
  assert.deepEqual(lines.resume(100), { sinceTime: '2026-01-02T03:04:06Z' });
  assert.equal(lines.push('2026-01-02T03:04:06Z e'), false);
});

test('the lines kept are bounded; the count of lines shown is not; the text grows by appending between drops', async () => {
  const { LogLines } = await loadLog();
  const lines = new LogLines(100);
  let [last, rewritten, drops] = ['', 0, 0];
  for (let i = 0; i < 1000; i++) {
    const kept = lines.lines.length;
    lines.push(`2026-01-02T03:04:05.${String(i).padStart(3, '0')}Z line-${i}`);
    if (lines.lines.length < kept) drops += 1;
    const text = lines.text();
    assert.equal(text, lines.lines.map((line) => line.text).join('\n'));
    // The LogViewer reads an appended text by its new part: only the drops rewrite it.
    if (!text.startsWith(last)) rewritten += 1;
    last = text;
  }
  assert.ok(lines.lines.length <= 150);
  assert.equal(lines.total, 1000);
  assert.ok(drops <= 18, `${drops} drops: old lines go 50 at a time`);
  assert.equal(rewritten, drops, 'the text rewritten only where old lines were dropped');
  const text = lines.text().split('\n');
  assert.ok(text.length >= 100 && text.length <= 150, `${text.length} lines kept`);
  assert.equal(text.at(-1), 'line-999');
  assert.equal(lines.text({ timestamps: true }).split('\n').at(-1), '2026-01-02T03:04:05.999Z line-999');
});

test('RenderPacer: one render for any number of changes, paced by what the last render cost, within 50–500 ms', async () => {
  const { RenderPacer, RENDER_MIN_MS, RENDER_MAX_MS } = await loadLog();
  let now = 0;
  const timers = [];
  const fire = () => {
    const { fn, at } = timers.shift();
    now = Math.max(now, at);
    fn();
  };
  let renders = 0;
  const pacer = new RenderPacer({
    render: () => (renders += 1),
    now: () => now,
    setTimer: (fn, ms) => {
      const timer = { fn, at: now + ms };
      timers.push(timer);
      return () => timers.splice(timers.indexOf(timer), 1);
    },
  });
  // The first change renders at once; ten more meanwhile make one render.
  pacer.changed();
  assert.equal(timers[0].at, 0);
  fire();
  for (let i = 0; i < 10; i++) pacer.changed();
  assert.equal(timers.length, 1, 'one render pending for ten changes');
  now += 5;
  pacer.rendered(); // a 5 ms render: the next waits the least
  assert.equal(pacer.gapMs, RENDER_MIN_MS);
  fire();
  assert.equal(now, RENDER_MIN_MS);
  assert.equal(renders, 2);
  now += 30;
  pacer.rendered(); // 30 ms (a loaded machine): the next waits ten times that
  assert.equal(pacer.gapMs, 300);
  pacer.changed();
  assert.equal(timers[0].at, RENDER_MIN_MS + 300);
  fire();
  now += 200;
  pacer.rendered();
  assert.equal(pacer.gapMs, RENDER_MAX_MS, 'never put off more than the most');
  pacer.changed();
  pacer.stop();
  assert.equal(timers.length, 0, 'stop() cancels the pending render');
  assert.equal(renders, 3);
});

test('followLog: a line split across chunks shows whole; one cut by the body’s end comes whole from the next read, resumed at its second', async () => {
  const { LogLines, followLog } = await loadLog();
  const lines = new LogLines();
  const queries = [];
  const bodies = [
    ['2026-01-02T03:04:05.1Z on', 'e\n2026-01-02T03:04:05.2Z tw', 'o\n2026-01-02T03:04:05.3Z thr'],
    ['2026-01-02T03:04:05.1Z one\n2026-01-02T03:04:05.2Z two\n2026-01-02T03:04:05.3Z three\n'],
  ];
  const timers = [];
  const stop = followLog({
    lines,
    tailLines: 10,
    open: async (query) => {
      queries.push(query);
      return bodies.length ? bodyOf(bodies.shift()) : bodyOf([], { open: true });
    },
    setTimer: (fn, ms) => {
      timers.push(ms);
      setTimeout(fn, 0);
      return () => {};
    },
  });
  await settle();
  await settle();
  stop();
  assert.deepEqual(queries.slice(0, 2), [{ tailLines: 10 }, { sinceTime: '2026-01-02T03:04:05Z' }]);
  assert.equal(lines.text(), 'one\ntwo\nthree');
  assert.equal(timers[0], 250, 'a body that ended after new lines is read again soon');
});

test('followLog: a wake aborts the read out and reads again at once; a failure waits a growing pause; stop() ends it', async () => {
  const { LogLines, followLog } = await loadLog();
  const lines = new LogLines();
  let wake;
  const signals = [];
  const answers = [
    () => new Response(JSON.stringify({ message: 'container "main" is waiting to start' }), { status: 400 }),
    () => new Response(JSON.stringify({ message: 'still waiting' }), { status: 400 }),
    () => bodyOf(['2026-01-02T03:04:05Z up\n'], { open: true }),
    () => bodyOf(['2026-01-02T03:04:05Z up\n2026-01-02T03:04:06Z later\n'], { open: true }),
  ];
  const pauses = [];
  const statuses = [];
  const stop = followLog({
    lines,
    open: async (query, signal) => {
      signals.push(signal);
      return answers.shift()();
    },
    wakes: (onWake) => {
      wake = onWake;
      return () => (wake = null);
    },
    onStatus: (s) => statuses.push(s.error ? `${s.state}: ${s.error.message}` : s.state),
    setTimer: (fn, ms) => {
      pauses.push(ms);
      setTimeout(fn, 0);
      return () => {};
    },
  });
  for (let i = 0; i < 5; i++) await settle();
  assert.deepEqual(pauses, [1000, 2000]);
  assert.ok(statuses.includes('retrying: container "main" is waiting to start'));
  assert.equal(lines.text(), 'up');
  wake('online');
  for (let i = 0; i < 3; i++) await settle();
  assert.equal(signals[2].aborted, true, 'the read open across the wake is aborted');
  assert.deepEqual(pauses, [1000, 2000], 'read again at once');
  assert.equal(lines.text(), 'up\nlater');
  stop();
  stop();
  assert.equal(signals[3].aborted, true);
  assert.equal(wake, null, 'the wakes are stopped');
});

test('followLog: a hidden page holds no request; shown again, it reads on from where the lines end', async () => {
  const { LogLines, followLog } = await loadLog();
  const lines = new LogLines();
  let visible = true;
  let changed;
  const queries = [];
  const signals = [];
  const statuses = [];
  const answers = [
    () => bodyOf(['2026-01-02T03:04:05Z before\n'], { open: true }),
    () => bodyOf(['2026-01-02T03:04:05Z before\n2026-01-02T03:04:07Z after\n'], { open: true }),
  ];
  const stop = followLog({
    lines,
    tailLines: 10,
    open: async (query, signal) => {
      queries.push(query);
      signals.push(signal);
      return answers.shift()();
    },
    shown: () => visible,
    visibility: (onChange) => {
      changed = onChange;
      return () => (changed = null);
    },
    onStatus: (s) => statuses.push(s.state),
    setTimer: (fn, ms) => {
      const timer = setTimeout(fn, Math.min(ms, 50));
      return () => clearTimeout(timer);
    },
  });
  for (let i = 0; i < 3; i++) await settle();
  assert.equal(lines.text(), 'before');
  visible = false;
  changed();
  for (let i = 0; i < 3; i++) await settle();
  assert.equal(signals[0].aborted, true, 'the read is aborted when the page is hidden');
  assert.equal(statuses.at(-1), 'paused');
  await new Promise((resolve) => setTimeout(resolve, 150));
  assert.equal(queries.length, 1, 'no request while hidden');
  visible = true;
  changed();
  for (let i = 0; i < 3; i++) await settle();
  assert.deepEqual(queries, [{ tailLines: 10 }, { sinceTime: '2026-01-02T03:04:05Z' }]);
  assert.equal(lines.text(), 'before\nafter');
  stop();
  assert.equal(changed, null, 'the visibility listener is removed');
});

test('events: rows of the pods’ events, newest first, other kinds of the same name left out', async () => {
  const { eventRows, podEventsPath } = await loadEvents();
  assert.equal(
    podEventsPath('default', 'web-1'),
    '/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb-1',
  );
  const event = (name, kind, lastTimestamp, extra = {}) => ({
    metadata: { name, namespace: 'default' },
    involvedObject: { kind, name: 'web-1' },
    type: 'Warning',
    reason: name,
    message: `${name} happened`,
    lastTimestamp,
    ...extra,
  });
  const rows = eventRows([
    {
      clusterName: 'c',
      pod: 'web-1',
      items: [
        event('Pulled', 'Pod', '2026-01-02T03:04:05Z', { type: 'Normal', count: 1 }),
        event('BackOff', 'Pod', '2026-01-02T03:05:00Z', { count: 7 }),
        event('Scaled', 'Deployment', '2026-01-02T03:06:00Z'),
      ],
    },
  ]);
  assert.deepEqual(
    rows.map((r) => [r.reason, r.count, r.type]),
    [
      ['BackOff', 7, 'Warning'],
      ['Pulled', 1, 'Normal'],
    ],
  );
});

test('events: polled every intervalMs while the page is shown, not while hidden, at once when shown again', async () => {
  const { followPodEvents } = await loadEvents();
  const listeners = new Set();
  const doc = {
    visibilityState: 'visible',
    addEventListener: (type, fn) => listeners.add(fn),
    removeEventListener: (type, fn) => listeners.delete(fn),
  };
  let asked = 0;
  const rounds = [];
  const stop = followPodEvents({
    pods: [{ clusterName: 'c', namespace: 'default', pod: 'web-1' }],
    fetchEvents: async () => {
      asked += 1;
      return { items: [], live: true }; // live, but no signals API: polled
    },
    onRows: (rows, errors) => rounds.push(errors),
    intervalMs: 20,
    doc,
  });
  await new Promise((resolve) => setTimeout(resolve, 70));
  assert.ok(asked >= 3, `asked ${asked} times in 70 ms`);
  doc.visibilityState = 'hidden';
  await new Promise((resolve) => setTimeout(resolve, 30));
  const hiddenAt = asked;
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.equal(asked, hiddenAt, 'nothing asked while hidden');
  doc.visibilityState = 'visible';
  for (const fn of listeners) fn();
  await settle();
  assert.equal(asked, hiddenAt + 1, 'asked at once when shown');
  stop();
  assert.equal(listeners.size, 0);
  assert.deepEqual(rounds[0], []);
});

/**
 * A signals API as @backstage/plugin-signals-react's: `subscribe(channel, onMessage)`; the test
 * sends on a channel with `send`, and beats the backend's heartbeat with `beat`.
 */
function fakeSignals() {
  const { HEARTBEAT_CHANNEL } = require('kube-watch-native-protocol');
  const subscribers = new Map();
  let seq = 0;
  const api = {
    subscribed: [],
    subscribe(channel, onMessage) {
      api.subscribed.push(channel);
      if (!subscribers.has(channel)) subscribers.set(channel, new Set());
      const entry = { onMessage };
      subscribers.get(channel).add(entry);
      return { unsubscribe: () => subscribers.get(channel).delete(entry) };
    },
    send(channel, message) {
      for (const { onMessage } of subscribers.get(channel) ?? []) onMessage(message);
    },
    beat() {
      seq += 1;
      api.send(HEARTBEAT_CHANNEL, { replica: 'r1', seq, replicas: ['r1'] });
    },
    count: (channel) => subscribers.get(channel)?.size ?? 0,
  };
  return api;
}

test('events: kept until a signal while every answer is live and the heartbeat proves the connection; a signal asks again, one during a round asks once more after it; a lapse, a wake or an answer not live polls', async (ctx) => {
  const { followPodEvents } = await loadEvents();
  const { channelOf, eventsViewOf } = require('kube-watch-native-protocol');
  const ENTITY = 'component:default/web';
  const channel = channelOf(eventsViewOf(ENTITY));
  const signals = fakeSignals();
  let clock = 0;
  let live = true;
  let asked = 0;
  let hold = null; // a promise an answer waits for
  let onWake = null;
  const stop = followPodEvents({
    pods: [
      { clusterName: 'c', namespace: 'default', pod: 'web-1' },
      { clusterName: 'c', namespace: 'default', pod: 'web-2' },
    ],
    fetchEvents: async () => {
      asked += 1;
      if (hold) await hold;
      return { items: [], live };
    },
    onRows: () => {},
    intervalMs: 20,
    signalApi: signals,
    entityRef: ENTITY,
    wakes: (fn) => {
      onWake = fn;
      return () => (onWake = null);
    },
    now: () => clock,
    settleMs: 1000,
    checkMs: 10,
    doc: null,
  });
  ctx.after(stop); // also when an assertion fails: no timer left running
  assert.ok(signals.subscribed.includes(channel), "the entity's events channel is subscribed");
  const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  // Not proven yet (no heartbeat): polled, two requests a round.
  await wait(70);
  assert.ok(asked >= 6, `polled while unproven: ${asked} requests`);
  // Proven, and past the subscription's settling: the next round is kept.
  clock = 2000;
  signals.beat();
  await wait(50);
  const kept = asked;
  await wait(100);
  assert.equal(asked, kept, 'nothing asked while kept until a signal');
  // A signal: asked again at once, then kept.
  signals.send(channel, { clusters: ['c'], at: 1, id: 'a.1' });
  await settle();
  assert.equal(asked, kept + 2, 'one round (both pods) on a signal');
  signals.send(channel, { clusters: ['c'], at: 1, id: 'a.1' });
  await settle();
  assert.equal(asked, kept + 2, 'the same signal twice (two replicas) asks once');
  // A signal while a round is out: one round more after it.
  let release;
  hold = new Promise((resolve) => (release = resolve));
  signals.send(channel, { clusters: ['c'], at: 2, id: 'b.1' });
  await settle();
  signals.send(channel, { clusters: ['c'], at: 3, id: 'c.1' });
  signals.send(channel, { clusters: ['c'], at: 4, id: 'd.1' });
  hold = null;
  release();
  await wait(30);
  assert.equal(asked, kept + 6, 'the round out, then one more for the signals during it');
  await wait(60);
  assert.equal(asked, kept + 6, 'then kept');
  // The heartbeat lapses (15 s without a beat): polled again.
  clock = 20_000;
  await wait(60);
  assert.ok(asked >= kept + 8, `polled after a lapse: ${asked - kept - 6} more`);
  // Beats again, past the settling of the subscription the lapse made anew: kept again; a wake:
  // asked at once, then polled until proven again.
  clock = 21_500;
  signals.beat();
  await wait(60);
  const beforeWake = asked;
  await wait(40);
  assert.equal(asked, beforeWake, 'kept once proven again');
  onWake('resume');
  await wait(60);
  assert.ok(asked >= beforeWake + 4, 'a wake asks at once and polls until proven again');
  // An answer not live (the backend could not follow it): polled, whatever the heartbeat says.
  signals.beat();
  live = false;
  await wait(20);
  const notLive = asked;
  await wait(60);
  assert.ok(asked >= notLive + 4, 'an answer not live is polled');
  stop();
  assert.equal(signals.count(channel), 0, 'unsubscribed at stop');
  assert.equal(onWake, null, 'the wakes stopped');
});
