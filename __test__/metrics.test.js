'use strict';
// OpenTelemetry metrics (lib/metrics.js) read with the SDK's own reader: an informer on the
// simulator over HTTP/2, driven through a reconnect (a cut), a 410 relist and a credential
// refresh (401, then getCredential), with every figure checked against what the consumer and
// the simulator saw; and without an SDK, nothing is read at all.

const test = require('node:test');
const assert = require('node:assert/strict');
const api = require('@opentelemetry/api');
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
const { certs } = require('../packages/kube-watch-native/sim');
const { METRICS, registerMetrics } = require('kube-watch-native');
const { SNAPSHOT, formatMetrics, MetricsReader } = require('../packages/kube-watch-native/lib/metrics');
const v8 = require('node:v8');
const vm = require('node:vm');
const { cm, consume, delay, params, recordingWatcher, sim } = require('./informer-helpers');
const { until } = require('../testbed/wait');

/** The CLI of the native package. */
const CLI = require('node:path').join(
  __dirname,
  '..',
  'packages',
  'kube-watch-native',
  'bin',
  'kube-watch.js',
);

const TOKENS = ['tok-secret-first', 'tok-secret-second'];

/** A reader that collects only when asked (no timer), as a Prometheus scrape does. */
class PullReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

function sdk(t) {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  t.after(() => provider.shutdown());
  return { reader, provider };
}

/** Collects once: `{ points: [{ name, unit, attributes, value }], text }`. */
async function collect(reader) {
  const { resourceMetrics, errors } = await reader.collect();
  assert.deepEqual(errors, []);
  const points = [];
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      for (const p of metric.dataPoints) {
        points.push({
          name: metric.descriptor.name,
          unit: metric.descriptor.unit,
          attributes: p.attributes,
          value: p.value,
        });
      }
    }
  }
  return { points, text: JSON.stringify(points) };
}

/**
 * Collects until `ready(points)` holds, every 10 ms; fails with `what` after 200 tries.
 * Resolves with that collection.
 */
async function collectUntil(reader, ready, what) {
  for (let tries = 0; ; tries++) {
    const collected = await collect(reader);
    if (ready(collected.points)) return collected;
    assert.ok(tries < 200, what);
    await delay(10);
  }
}

/** The one value of `name` whose attributes include `where`; fails if there is not exactly one. */
function value(points, name, where = {}) {
  const found = points.filter(
    (p) => p.name === name && Object.entries(where).every(([k, v]) => p.attributes[k] === v),
  );
  assert.equal(found.length, 1, `${name} ${JSON.stringify(where)}: ${found.length} points`);
  return found[0].value;
}

/** Failure warnings (one per failure the reflector counts), by what they say. */
const failures = (log) => log.warn.filter((m) => /retrying in|giving up/.test(m));

test('every figure, through a cut, a 410 relist and a credential refresh', { timeout: 60_000 }, async (t) => {
  const s = await sim(t, { token: TOKENS[0], tls: true, http2: true });
  for (const name of ['a', 'b']) s.create('configmaps', cm(name));
  let token = TOKENS[0];
  const getCredential = async () => ({ type: 'bearer token', token });
  const { watcher, log } = recordingWatcher();
  const { reader, provider } = sdk(t);
  const metrics = watcher.metrics({ meterProvider: provider });
  t.after(() => metrics.close());
  const clusterDetails = { name: 'sim', url: `${s.url}/`, caData: Buffer.from(certs.ca).toString('base64') };
  const informer = watcher.informer(params(s, { clusterDetails, credential: undefined, getCredential }), {
    namespace: 'default',
    backoff: { initialSeconds: 0.05, maxSeconds: 0.2 },
  });
  t.after(() => informer.close());
  const c = consume(informer);
  const started = Date.now();
  await informer.synced;
  const syncedAt = Date.now();
  const series = { cluster: s.url, group: '', version: 'v1', resource: 'configmaps' };
  const at = (points, name) => value(points, `kube_watch.${name}`, series);
  let writes = 2;

  // Synced, watching, two objects; every event the consumer took is counted as delivered.
  await until(() => c.synced === 1, { what: 'SYNCED taken' });
  let { points, text } = await collectUntil(reader, (p) => at(p, 'watch.active') === 1, 'the watch opens');
  assert.equal(at(points, 'informer.count'), 1);
  assert.equal(at(points, 'informer.synced'), 1);
  assert.equal(at(points, 'informer.object.count'), 2);
  assert.equal(at(points, 'informer.cache.size'), informer.stats().cachedBytes);
  const cachedText = informer.list().reduce((n, o) => n + JSON.stringify(o).length, 0);
  assert.ok(at(points, 'informer.cache.size') >= cachedText * 0.9, 'about the JSON of the objects');
  assert.equal(at(points, 'events.received'), writes);
  assert.equal(at(points, 'events.delivered'), c.events.length);
  assert.equal(at(points, 'reconnects'), 0);
  assert.equal(at(points, 'relists'), 0);
  assert.equal(at(points, 'credential.refreshes'), 0);
  const io = value(points, 'kube_watch.network.io', { ...series, 'network.io.direction': 'receive' });
  assert.ok(io >= cachedText, `${io} bytes read for ${cachedText} bytes of objects`);
  assert.ok(!points.some((p) => p.name === 'kube_watch.errors'), 'no errors yet');
  assert.equal(value(points, 'kube_watch.http2.connection.count', { cluster: s.origin }), 1);
  assert.equal(value(points, 'kube_watch.http2.stream.count', { cluster: s.origin }), 1, 'the watch stream');
  assert.equal(value(points, 'kube_watch.http1.request.count', { cluster: s.origin }), 0);
  for (const p of points) {
    const metric = METRICS.find((m) => m.name === p.name);
    assert.ok(metric, `${p.name} is in the table`);
    assert.equal(p.unit, metric.unit, p.name);
  }

  // Quiet: the age of the last event grows (no bookmark comes within a minute).
  await delay(1200);
  const before = Date.now();
  ({ points } = await collect(reader));
  const after = Date.now();
  const age = at(points, 'informer.last_event.age');
  // The last event came between the informer's start and its sync.
  assert.ok(
    age >= (before - syncedAt) / 1000 - 0.01,
    `last event ${age} s ago, synced ${before - syncedAt} ms ago`,
  );
  assert.ok(
    age <= (after - started) / 1000 + 0.01,
    `last event ${age} s ago, started ${after - started} ms ago`,
  );

  // One change: the bytes read are its watch line, exactly.
  s.patch('configmaps', 'default', 'a', (o) => void (o.data.v = String(++writes)));
  const line = `{"type":"MODIFIED","object":${JSON.stringify(s.get('configmaps', 'default', 'a'))}}\n`;
  await until(() => c.view.get('default/a').data.v === String(writes), { what: 'the change' });
  ({ points } = await collect(reader));
  const ioAfter = value(points, 'kube_watch.network.io', { ...series, 'network.io.direction': 'receive' });
  assert.equal(ioAfter - io, Buffer.byteLength(line), 'the bytes of one watch line');

  // A consumer that stops reading: its pending changes, one per object however many writes.
  const slow = informer[Symbol.asyncIterator]();
  assert.equal((await slow.next()).value.type, 'ADDED');
  ({ points } = await collect(reader));
  // Its first batch, taken at once: the two cached objects and SYNCED.
  const slowTook = 3;
  assert.equal(at(points, 'events.delivered'), c.events.length + slowTook);
  for (const name of ['a', 'b', 'a', 'a']) {
    s.patch('configmaps', 'default', name, (o) => void (o.data.v = String(++writes)));
  }
  s.create('configmaps', cm('c'));
  writes++;
  await until(() => c.view.has('default/c'), { what: 'the writes at the reading consumer' });
  ({ points } = await collect(reader));
  assert.equal(at(points, 'informer.consumer.pending'), 3, 'a, b and c pending');
  assert.ok(at(points, 'informer.last_event.age') < age, 'the age starts over');
  await slow.return();
  ({ points } = await collect(reader));
  assert.equal(at(points, 'informer.consumer.pending'), 0, 'the slow consumer is gone');
  assert.equal(at(points, 'events.received'), writes);

  // A cut: one reconnect, one SYSTEM_ERROR.
  s.cutWatches();
  s.patch('configmaps', 'default', 'a', (o) => void (o.data.v = String(++writes)));
  await until(() => c.view.get('default/a').data.v === String(writes), { what: 'the change after the cut' });
  ({ points } = await collect(reader));
  assert.equal(at(points, 'reconnects'), 1);
  assert.equal(value(points, 'kube_watch.errors', { ...series, 'error.type': 'SYSTEM_ERROR' }), 1);
  assert.equal(failures(log).length, 1);
  assert.equal(at(points, 'events.received'), writes);
  await until(() => c.events.some((e) => e.type === 'ERROR'), { what: 'the ERROR of the cut' });
  ({ points } = await collect(reader));
  assert.equal(at(points, 'events.delivered'), c.events.length + slowTook, 'changes and the ERROR, as taken');

  // A 410: the resumed watch's resourceVersion has expired, so it relists.
  s.nextWatchFault({ stallAfterEvents: 0 });
  s.endWatches();
  // The path meant: the resumed watch is the stalled one (not one a busy machine starts
  // later) when the history moves on and its socket goes.
  await until(() => s.faultQueue.length === 0 && s.activeWatches() === 1, {
    what: 'the resumed watch to stall',
  });
  s.patch('configmaps', 'default', 'b', (o) => void (o.data.v = 'relisted'));
  s.compact();
  s.destroySockets();
  // Run at nice 10 beside busy loops, the relist (over TLS and HTTP/2) did not come in 10 s.
  await until(() => c.relists === 1, { ms: 30_000, what: 'the relist' });
  ({ points } = await collect(reader));
  assert.equal(at(points, 'relists'), 1);
  assert.equal(at(points, 'informer.synced'), 1);
  assert.equal(at(points, 'informer.object.count'), s.list('configmaps').length);
  const systemErrors = value(points, 'kube_watch.errors', { ...series, 'error.type': 'SYSTEM_ERROR' });
  assert.equal(systemErrors, failures(log).length, 'one error per failure warned about');

  // A rotated token: 401, then getCredential again.
  s.rotateToken(TOKENS[1]);
  token = TOKENS[1];
  s.endWatches();
  s.create('configmaps', cm('after-rotation'));
  await until(() => c.view.has('default/after-rotation'), { what: 'the watch with the fresh token' });
  ({ points, text } = await collect(reader));
  assert.equal(at(points, 'credential.refreshes'), 1);
  assert.equal(value(points, 'kube_watch.errors', { ...series, 'error.type': 'UNAUTHORIZED_ERROR' }), 1);
  assert.equal(at(points, 'watch.active'), 1);
  for (const secret of TOKENS) assert.ok(!text.includes(secret), 'no token in any attribute');
  assert.ok(!text.includes('"namespace"'), 'no namespace attribute');

  // Closed: its counters stay (never decreasing); its sums are 0.
  const received = at(points, 'events.received');
  informer.close();
  await c.done;
  ({ points } = await collect(reader));
  assert.equal(at(points, 'informer.count'), 0);
  assert.equal(at(points, 'watch.active'), 0);
  assert.equal(at(points, 'events.received'), received, 'carried after the close');
  assert.equal(at(points, 'relists'), 1);
});

test('without an SDK nothing is read; with one, one native snapshot per collection', async (t) => {
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const { watcher } = recordingWatcher();
  const informer = watcher.informer(params(s));
  t.after(() => informer.close());
  await informer.synced;
  let reads = 0;
  const snapshot = watcher[SNAPSHOT].bind(watcher);
  watcher[SNAPSHOT] = () => {
    reads++;
    return snapshot();
  };
  // The global provider is the API's no-op one: registering costs nothing and reads nothing.
  const noop = watcher.metrics();
  const alsoNoop = registerMetrics(watcher, { meter: api.metrics.getMeter('x') });
  await delay(300);
  assert.equal(reads, 0, 'no snapshot without an SDK reader');
  noop.close();
  alsoNoop.close();

  const { reader, provider } = sdk(t);
  const metrics = registerMetrics(watcher, { meterProvider: provider });
  await delay(300);
  assert.equal(reads, 0, 'nothing polls between collections');
  await collect(reader);
  await collect(reader);
  assert.equal(reads, 2, 'one native call per collection');
  metrics.close();
  metrics.close();
  await collect(reader);
  assert.equal(reads, 2, 'closed: the callback is gone');
});

test('bad options are refused with a message naming them; the stats lines name every figure', async (t) => {
  const { watcher } = recordingWatcher();
  assert.throws(
    () => watcher.metrics({ meterProvider: {} }),
    /options\.meterProvider must be a MeterProvider/,
  );
  assert.throws(() => watcher.metrics({ meter: {} }), /options\.meter must be an OpenTelemetry Meter/);
  assert.throws(() => watcher.metrics(5), /metrics options must be an object/);
  assert.throws(() => registerMetrics({}, {}), /needs a NativeKubernetesWatcher/);
  const s = await sim(t, { token: 'tok' });
  s.create('configmaps', cm('a'));
  const informer = watcher.informer(params(s));
  t.after(() => informer.close());
  await informer.synced;
  const lines = formatMetrics(new MetricsReader(watcher).read());
  const line = lines.find((l) => l.startsWith(`configmaps/v1 on ${s.url}: `));
  assert.ok(line, lines.join('\n'));
  assert.match(line, /informer\.object\.count=1 /);
  assert.match(line, /events\.received=1 /);
  assert.ok(lines.some((l) => l.startsWith(`connections to ${s.origin}: `)));
});

/**
 * Runs kube-watch with `args` until its stderr shows `line` (a RegExp), then sends SIGINT;
 * resolves with `{ status, stdout, stderr }` once it has exited. Killed after `limitMs`.
 */
function runUntilStderr(args, line, limitMs) {
  const bin = CLI;
  const child = require('node:child_process').spawn(process.execPath, [bin, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const run = { status: null, stdout: '', stderr: '' };
  const killer = setTimeout(() => child.kill('SIGKILL'), limitMs);
  child.stdout.setEncoding('utf8').on('data', (d) => (run.stdout += d));
  child.stderr.setEncoding('utf8').on('data', (d) => {
    const seen = line.test(run.stderr);
    run.stderr += d;
    if (!seen && line.test(run.stderr)) child.kill('SIGINT');
  });
  return new Promise((resolve) =>
    child.on('close', (status) => {
      clearTimeout(killer);
      resolve({ ...run, status });
    }),
  );
}

test(
  'kube-watch --informer --stats prints the figures on stderr every 5 s and at the end',
  { timeout: 60_000 },
  async () => {
    const bin = CLI;
    // Stopped (Ctrl-C) once the first periodic line is out, rather than by the demo's clock,
    // which starts before the informer (and its stats timer) does: on a busy machine that gap
    // could push the 5 s line past a short demo. The next periodic one is then 5 s away.
    const periodicLine = /kube-watch: stats pods\/v1 on http:\/\/127\.0\.0\.1:\d+: .*\n/;
    const run = await runUntilStderr(
      ['--demo', '--informer', '--stats', '--demo-seconds', '60', '-o', 'json'],
      periodicLine,
      45_000,
    );
    assert.equal(run.status, 0, run.stderr);
    const lines = run.stderr
      .split('\n')
      .filter((l) => l.startsWith('kube-watch: stats pods/v1 on http://127.0.0.1:'));
    assert.equal(lines.length, 2, `one at 5 s, one at the end:\n${run.stderr}`);
    const figures = (line) =>
      Object.fromEntries(
        line
          .split(': ')
          .at(-1)
          .split(' ')
          .map((f) => f.split('=')),
      );
    const [periodic, last] = lines.map(figures);
    // At 5 s the informer runs: every figure; at the end it has closed: its counters, carried.
    for (const m of METRICS.filter((m) => !m.name.includes('http') && m.name !== 'kube_watch.errors')) {
      assert.ok(m.name.slice('kube_watch.'.length) in periodic, `${m.name} in ${lines[0]}`);
    }
    assert.equal(periodic['informer.synced'], '1');
    assert.equal(periodic['watch.active'], '1');
    assert.ok(Number(periodic['informer.object.count']) > 0);
    assert.equal(last['informer.count'], '0');
    const events = run.stdout.trim().split('\n');
    assert.ok(
      Number(last['events.delivered']) >= events.length,
      `${last['events.delivered']} >= ${events.length}`,
    );
    assert.ok(Number(last['events.received']) >= events.length - 1, 'every change shown was received');
    assert.ok(Number(periodic['events.received']) <= Number(last['events.received']));
    assert.ok(
      /kube-watch: stats connections to http:\/\/127\.0\.0\.1:\d+: http2\.connection\.count=0/.test(
        run.stderr,
      ),
    );
    const usage = require('node:child_process').spawnSync(process.execPath, [bin, 'pods', '--stats'], {
      encoding: 'utf8',
    });
    assert.equal(usage.status, 2);
    assert.match(usage.stderr, /--stats only applies with --informer/);
  },
);

test("docs/metrics.md's table lists every metric with its instrument and unit", () => {
  const readme = require('node:fs').readFileSync(
    require('node:path').join(__dirname, '..', 'docs', 'metrics.md'),
    'utf8',
  );
  const rows = readme.split('\n').filter((l) => l.startsWith('| `kube_watch.'));
  assert.equal(rows.length, METRICS.length);
  const instrument = { counter: 'Counter', upDownCounter: 'UpDownCounter', gauge: 'Gauge' };
  for (const m of METRICS) {
    const row = rows.find((r) => r.startsWith(`| \`${m.name}\` |`));
    assert.ok(row, `${m.name} has a row`);
    assert.ok(row.includes(`| ${instrument[m.kind]} | \`${m.unit}\` |`), `${m.name}: ${row}`);
  }
});

test('informers of one resource in several namespaces add up into one series', async (t) => {
  const s = await sim(t, { token: 'tok' });
  for (const [name, namespace] of [
    ['a', 'one'],
    ['b', 'two'],
    ['c', 'two'],
  ])
    s.create('configmaps', cm(name, {}, namespace));
  const { watcher } = recordingWatcher();
  const { reader, provider } = sdk(t);
  watcher.metrics({ meterProvider: provider });
  const one = watcher.informer(params(s), { namespace: 'one' });
  const two = watcher.informer(params(s), { namespace: 'two' });
  t.after(() => one.close());
  t.after(() => two.close());
  await Promise.all([one.synced, two.synced]);
  const series = { cluster: s.url, group: '', version: 'v1', resource: 'configmaps' };
  const at = (points, name) => value(points, `kube_watch.${name}`, series);
  let { points } = await collectUntil(reader, (p) => at(p, 'watch.active') === 2, 'both watches open');
  assert.equal(at(points, 'informer.count'), 2);
  assert.equal(at(points, 'informer.object.count'), 3);
  assert.equal(at(points, 'events.received'), 3);
  assert.equal(at(points, 'informer.cache.size'), one.stats().cachedBytes + two.stats().cachedBytes);
  assert.equal(at(points, 'informer.synced'), 1);
  // One that never syncs (a bad selector: 400) makes the series unsynced until it closes.
  const bad = watcher.informer(params(s), { namespace: 'three', labelSelector: 'a in (' });
  await assert.rejects(bad.synced);
  ({ points } = await collect(reader));
  assert.equal(at(points, 'informer.count'), 3);
  assert.equal(at(points, 'informer.synced'), 0, 'not every informer of the series is synced');
  assert.equal(value(points, 'kube_watch.errors', { ...series, 'error.type': 'BAD_REQUEST' }), 1);
  bad.close();
  ({ points } = await collect(reader));
  assert.equal(at(points, 'informer.count'), 2);
  assert.equal(at(points, 'informer.synced'), 1);
  assert.equal(value(points, 'kube_watch.errors', { ...series, 'error.type': 'BAD_REQUEST' }), 1, 'kept');
  assert.equal(at(points, 'events.received'), 3);
});

test('plain watches have series of their own, add into an informer series of theirs, and keep their counts', async (t) => {
  const s = await sim(t, { token: 'tok' });
  const { watcher } = recordingWatcher();
  const { reader, provider } = sdk(t);
  watcher.metrics({ meterProvider: provider });
  const cms = { cluster: s.url, group: '', version: 'v1', resource: 'configmaps' };
  const pods = { ...cms, resource: 'pods' };
  const at = (points, name, series) => value(points, `kube_watch.${name}`, series);
  const absent = (points, name, series) =>
    assert.equal(
      points.filter(
        (p) =>
          p.name === `kube_watch.${name}` && Object.entries(series).every(([k, v]) => p.attributes[k] === v),
      ).length,
      0,
      `no ${name} for ${series.resource}`,
    );
  // Two plain watches of configmaps (two namespaces: one series), one of pods; the objects come
  // once all three wait.
  let one = watcher.watchResource(params(s), { namespace: 'one' });
  let two = watcher.watchResource(params(s), { namespace: 'two' });
  let podWatch = watcher.watchResource(params(s, { plural: 'pods' }), { namespace: 'one' });
  const firsts = [one.next(), two.next(), podWatch.next()];
  await until(() => s.activeWatches() === 3, { what: 'three watches' });
  for (const [name, namespace] of [
    ['a', 'one'],
    ['b', 'two'],
    ['c', 'two'],
  ])
    s.create('configmaps', cm(name, {}, namespace));
  s.create('pods', { metadata: { name: 'p', namespace: 'one' } });
  const [a, b, p] = (await Promise.all(firsts)).map((r) => r.value);
  const taken = [a, b, (await two.next()).value, p];
  assert.deepEqual(
    taken.map((e) => `${e.type} ${e.object.metadata.name}`),
    ['ADDED a', 'ADDED b', 'ADDED c', 'ADDED p'],
  );
  let { points } = await collect(reader);
  assert.equal(at(points, 'watch.active', cms), 2);
  assert.equal(at(points, 'watch.active', pods), 1);
  assert.equal(at(points, 'events.received', cms), 3);
  assert.equal(at(points, 'events.delivered', cms), 3);
  assert.equal(at(points, 'events.received', pods), 1);
  const bytes = at(points, 'network.io', cms);
  const eventBytes = taken.slice(0, 3).reduce((n, e) => n + JSON.stringify(e.object).length, 0);
  assert.ok(bytes >= eventBytes, `network.io ${bytes} B covers the ${eventBytes} B of the events' objects`);
  for (const name of ['informer.count', 'informer.object.count', 'informer.synced', 'reconnects', 'relists'])
    absent(points, name, cms);
  // A refused watch (a bad selector: 400) counts an error in its series.
  const bad = watcher.watchResource(params(s), { namespace: 'one', labelSelector: 'a in (' });
  assert.equal((await bad.next()).value.error.errorType, 'BAD_REQUEST');
  // An informer of configmaps joins the watches' series: one series, figures added up.
  const informer = watcher.informer(params(s), { namespace: 'one' });
  t.after(() => informer.close());
  await informer.synced;
  ({ points } = await collectUntil(
    reader,
    (p) => at(p, 'watch.active', cms) === 3,
    'the informer watches too',
  ));
  assert.equal(at(points, 'informer.count', cms), 1);
  assert.equal(at(points, 'events.received', cms), 3 + 1, "the watches' and the informer's");
  assert.equal(value(points, 'kube_watch.errors', { ...cms, 'error.type': 'BAD_REQUEST' }), 1);
  // Ended and let go of (collected), the watches keep their counts; none is open.
  await Promise.all([one.return(), two.return(), podWatch.return()]);
  one = two = podWatch = null;
  v8.setFlagsFromString('--expose-gc');
  vm.runInNewContext('gc')();
  await delay(50);
  ({ points } = await collect(reader));
  assert.equal(at(points, 'watch.active', cms), 1, "the informer's");
  assert.equal(at(points, 'watch.active', pods), 0);
  assert.equal(at(points, 'events.received', cms), 4);
  assert.equal(at(points, 'events.delivered', pods), 1);
  assert.equal(at(points, 'network.io', pods) > 0, true);
  assert.equal(value(points, 'kube_watch.errors', { ...cms, 'error.type': 'BAD_REQUEST' }), 1, 'kept');
});
