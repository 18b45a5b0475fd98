'use strict';
// kube-watch: the resource argument, output formatting, and the command itself run as a
// child process against a simulated API server on 127.0.0.1.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { parseResourceArg, ResourceArgError } = require('../packages/kube-watch-native/cli/resource-arg');
const {
  createTableFormatter,
  eventStatus,
  formatTime,
  createLogger,
} = require('../packages/kube-watch-native/cli/format');
const { BIN, writeKubeconfig } = require('./kube-watch-child');

const TOKEN = 'cli-test-token-SHOULD-NEVER-BE-PRINTED';
// Discovery caches go here, never into the user's cache directory.
const CACHE_DIR = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-cache-'));
process.on('exit', () => fs.rmSync(CACHE_DIR, { recursive: true, force: true }));
// How long any child may live before the test kills it and fails: it only bounds a hang (a
// run takes a second or two, many times that on a loaded machine).
const CHILD_LIMIT_MS = 60_000;
// Preloaded into a child so that process.exit() does nothing: its fallbacks cannot end it.
const NO_EXIT_FALLBACK = path.join(__dirname, 'fixtures', 'cli', 'no-exit-fallback.js');

/**
 * Runs kube-watch as a child process (`nodeArgs` go to node before the script). `waitFor(pred)`
 * resolves once stdout/stderr satisfy `pred` (rejecting after `ms`); `done` resolves with the
 * exit status.
 */
function runCli(args, { env = {}, nodeArgs = [] } = {}) {
  const started = Date.now();
  const child = spawn(process.execPath, [...nodeArgs, BIN, ...args], {
    env: { ...process.env, KUBECONFIG: '', NO_COLOR: '1', KUBE_WATCH_CACHE_DIR: CACHE_DIR, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  const watchers = new Set();
  const check = () => {
    for (const w of watchers) if (w.pred(out)) w.resolve(out);
  };
  child.stdout.setEncoding('utf8').on('data', (d) => {
    out.stdout += d;
    check();
  });
  child.stderr.setEncoding('utf8').on('data', (d) => {
    out.stderr += d;
    check();
  });
  let killedByTest = false;
  const killer = setTimeout(() => {
    killedByTest = true;
    child.kill('SIGKILL');
  }, CHILD_LIMIT_MS);
  const done = new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      for (const w of watchers)
        w.reject(new Error(`child exited before the wait was satisfied:\n${out.stdout}\n${out.stderr}`));
      resolve({ code, signal, killedByTest, elapsedMs: Date.now() - started, ...out });
    });
  });
  function waitFor(pred, ms = 30_000) {
    if (pred(out)) return Promise.resolve(out);
    return new Promise((resolve, reject) => {
      const w = {
        pred,
        resolve: (v) => {
          clearTimeout(w.timer);
          watchers.delete(w);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(w.timer);
          watchers.delete(w);
          reject(e);
        },
      };
      w.timer = setTimeout(
        () => w.reject(new Error(`timed out after ${ms}ms; stdout:\n${out.stdout}\nstderr:\n${out.stderr}`)),
        ms,
      );
      watchers.add(w);
    });
  }
  return { child, out, done, waitFor };
}

/** Runs to completion and returns the exit status and output. */
async function runToEnd(args, options) {
  const result = await runCli(args, options).done;
  assert.equal(
    result.killedByTest,
    false,
    `kube-watch ${args.join(' ')} had to be killed:\n${result.stdout}\n${result.stderr}`,
  );
  return result;
}

const dataLines = (stdout) => stdout.split('\n').filter(Boolean).slice(1); // after the header
const jsonLines = (stdout) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));

describe('resource argument', () => {
  const cases = [
    ['pods', { group: '', apiVersion: 'v1', plural: 'pods', namespaced: true }],
    ['po', { group: '', apiVersion: 'v1', plural: 'pods', namespaced: true }],
    ['Pod', { group: '', apiVersion: 'v1', plural: 'pods', namespaced: true }],
    ['deployments.apps', { group: 'apps', apiVersion: 'v1', plural: 'deployments', namespaced: true }],
    ['deploy', { group: 'apps', apiVersion: 'v1', plural: 'deployments', namespaced: true }],
    ['deployments.v1.apps', { group: 'apps', apiVersion: 'v1', plural: 'deployments', namespaced: true }],
    ['apps/v1/deployments', { group: 'apps', apiVersion: 'v1', plural: 'deployments', namespaced: true }],
    ['v1/pods', { group: '', apiVersion: 'v1', plural: 'pods', namespaced: true }],
    ['hpa', { group: 'autoscaling', apiVersion: 'v2', plural: 'horizontalpodautoscalers', namespaced: true }],
    ['cj', { group: 'batch', apiVersion: 'v1', plural: 'cronjobs', namespaced: true }],
    ['ing', { group: 'networking.k8s.io', apiVersion: 'v1', plural: 'ingresses', namespaced: true }],
    [
      'crd',
      {
        group: 'apiextensions.k8s.io',
        apiVersion: 'v1',
        plural: 'customresourcedefinitions',
        namespaced: false,
      },
    ],
    ['ns', { group: '', apiVersion: 'v1', plural: 'namespaces', namespaced: false }],
    ['no', { group: '', apiVersion: 'v1', plural: 'nodes', namespaced: false }],
    [
      'clusterroles.rbac.authorization.k8s.io',
      { group: 'rbac.authorization.k8s.io', apiVersion: 'v1', plural: 'clusterroles', namespaced: false },
    ],
    ['ev', { group: '', apiVersion: 'v1', plural: 'events', namespaced: true }],
    [
      'events.events.k8s.io',
      { group: 'events.k8s.io', apiVersion: 'v1', plural: 'events', namespaced: true },
    ],
    [
      'crontabs.stable.example.com/v1',
      { group: 'stable.example.com', apiVersion: 'v1', plural: 'crontabs', namespaced: true },
    ],
    [
      'stable.example.com/v1beta1/crontabs',
      { group: 'stable.example.com', apiVersion: 'v1beta1', plural: 'crontabs', namespaced: true },
    ],
    [
      'deployments.apps/v1beta2',
      { group: 'apps', apiVersion: 'v1beta2', plural: 'deployments', namespaced: true },
    ],
  ];
  for (const [arg, want] of cases) {
    test(arg, () => {
      const { group, apiVersion, plural, namespaced } = parseResourceArg(arg);
      assert.deepEqual({ group, apiVersion, plural, namespaced }, want);
    });
  }

  test('an unknown group needs a version, and the error says how', () => {
    assert.throws(
      () => parseResourceArg('crontabs.stable.example.com'),
      (err) => {
        assert.ok(err instanceof ResourceArgError);
        assert.match(
          err.message,
          /unknown API group "stable\.example\.com".*crontabs\.stable\.example\.com\/v1/,
        );
        return true;
      },
    );
    assert.throws(() => parseResourceArg('a/b/c/d'), ResourceArgError);
    assert.throws(() => parseResourceArg('pods/notaversion!'), ResourceArgError);
    assert.throws(() => parseResourceArg(''), ResourceArgError);
  });
});

describe('output formatting', () => {
  const pod = (phase, readies, extra = {}) => ({
    kind: 'Pod',
    metadata: { name: 'p', namespace: 'ns', resourceVersion: '7', ...extra },
    spec: { containers: readies.map((_, i) => ({ name: `c${i}` })) },
    status: { phase, containerStatuses: readies.map((ready, i) => ({ name: `c${i}`, ready })) },
  });

  test('status: pods, workloads, generic phase, bookmarks', () => {
    assert.equal(eventStatus({ type: 'ADDED', object: pod('Running', [true, false]) }), 'Running 1/2');
    assert.equal(
      eventStatus({ type: 'ADDED', object: pod('Running', [true], { deletionTimestamp: 'x' }) }),
      'Terminating 1/1',
    );
    const crashing = pod('Running', [false]);
    crashing.status.containerStatuses[0].state = { waiting: { reason: 'CrashLoopBackOff' } };
    assert.equal(eventStatus({ type: 'MODIFIED', object: crashing }), 'CrashLoopBackOff 0/1');
    const deploy = {
      kind: 'Deployment',
      metadata: { name: 'd' },
      spec: { replicas: 3 },
      status: { readyReplicas: 2 },
    };
    assert.equal(eventStatus({ type: 'MODIFIED', object: deploy }), 'ready 2/3');
    assert.equal(
      eventStatus({ type: 'ADDED', object: { metadata: { name: 'n' } } }, 'deployments'),
      'ready 0/1',
    );
    assert.equal(
      eventStatus({
        type: 'ADDED',
        object: { kind: 'Namespace', metadata: { name: 'n' }, status: { phase: 'Active' } },
      }),
      'Active',
    );
    assert.equal(eventStatus({ type: 'ADDED', object: { kind: 'ConfigMap', metadata: { name: 'c' } } }), '-');
    assert.equal(
      eventStatus({ type: 'BOOKMARK', object: { kind: 'Pod', metadata: { resourceVersion: '9' } } }),
      '-',
    );
  });

  test('table lines stay aligned with the header and widen for long names', () => {
    const t = createTableFormatter({ plural: 'pods' });
    const header = t.header();
    const at = new Date(2024, 0, 2, 3, 4, 5, 6);
    const short = t.line({ type: 'ADDED', object: pod('Pending', [false]), resourceVersion: '7' }, at);
    const cols = ['TYPE', 'NAMESPACE/NAME', 'RV', 'STATUS'].map((c) => header.indexOf(c));
    assert.equal(short.slice(0, 12), '03:04:05.006');
    assert.equal(short.slice(cols[0]).split(' ')[0], 'ADDED');
    assert.equal(short.slice(cols[1]).split(' ')[0], 'ns/p');
    assert.equal(short.slice(cols[2]).split(' ')[0], '7');
    assert.equal(short.slice(cols[3]), 'Pending 0/1');
    const long = { ...pod('Running', [true]), metadata: { name: 'x'.repeat(60), namespace: 'ns' } };
    const wide = t.line({ type: 'MODIFIED', object: long, resourceVersion: '8' }, at);
    const after = t.line({ type: 'DELETED', object: pod('Running', [true]), resourceVersion: '9' }, at);
    assert.equal(wide.indexOf(' 8 '), after.indexOf(' 9 '), 'later lines take the widened column');
    assert.equal(
      t
        .line(
          { type: 'BOOKMARK', object: { metadata: { resourceVersion: '10' } }, resourceVersion: '10' },
          at,
        )
        .slice(cols[1])
        .split(' ')[0],
      '-',
    );
  });

  test('colors only when asked, padding computed without escape codes', () => {
    const t = createTableFormatter({ color: true });
    const line = t.line(
      { type: 'DELETED', object: pod('Running', [true]), resourceVersion: '3' },
      new Date(),
    );
    assert.match(line, /\x1b\[31mDELETED\x1b\[0m {3}ns\/p/);
    assert.doesNotMatch(
      createTableFormatter().line({ type: 'DELETED', object: pod('Running', [true]) }, new Date()),
      /\x1b/,
    );
  });

  test('time is local HH:MM:SS.mmm', () => {
    assert.equal(formatTime(new Date(2024, 5, 6, 23, 59, 58, 7)), '23:59:58.007');
  });

  test('the logger has the Backstage shape; debug only when verbose', () => {
    let written = '';
    const stream = { write: (s) => (written += s) };
    const quiet = createLogger({ stream });
    for (const m of ['error', 'warn', 'info', 'debug', 'child']) assert.equal(typeof quiet[m], 'function');
    quiet.child({ cluster: 'c1' }).warn('slow', { path: '/api/v1/pods' });
    quiet.debug('hidden');
    quiet.info('hidden too');
    assert.equal(written, 'warn: slow cluster=c1 path=/api/v1/pods\n');
    createLogger({ stream, verbose: true }).debug('shown');
    assert.match(written, /debug: shown\n$/);
  });
});

describe('usage errors (no cluster needed)', () => {
  const cases = [
    [[], /a resource type is required/],
    [['pods', '--bogus'], /Unknown option '--bogus'/],
    [['pods', '-o', 'yaml'], /--output must be table or json/],
    [['pods', '--timeout', 'soon'], /--timeout must be a whole number/],
    [['pods', 'services'], /expected one resource, got 2/],
    [['a/b/c/d'], /cannot read resource "a\/b\/c\/d"/],
    [['Pods!'], /cannot read resource "Pods!": "pods!" is not a resource name/],
    [['pods', '-n'], /argument missing/],
    [['pods', '--demo-seconds', '3'], /--demo-seconds only applies with --demo/],
  ];
  for (const [args, pattern] of cases) {
    test(`kube-watch ${args.join(' ')} → exit 2`, async () => {
      const r = await runToEnd(args);
      assert.equal(r.code, 2);
      assert.match(r.stderr, pattern);
      assert.match(r.stderr, /Run kube-watch --help for usage/);
      assert.equal(r.stdout, '');
    });
  }

  test('kubeconfig errors print the message and exit 2', async () => {
    const refused = path.join(__dirname, 'fixtures', 'kubeconfig', 'refused.yaml');
    const r = await runToEnd(['pods', '--kubeconfig', refused, '--context', 'oidc']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /user "oidc-user" uses the "oidc" auth-provider/);
    assert.ok(!r.stderr.includes('SHOULD-NEVER-BE-PRINTED'));
    const missing = await runToEnd(['pods', '--kubeconfig', path.join(os.tmpdir(), 'kube-watch-nope.yaml')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /kube-watch-nope\.yaml does not exist/);
  });

  test('no kubeconfig anywhere and not in a cluster: exit 2 saying where it looked', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-home-'));
    try {
      const r = await runToEnd(['pods'], { env: { HOME: home, KUBERNETES_SERVICE_HOST: '' } });
      assert.equal(r.code, 2);
      assert.ok(
        r.stderr.includes(`no kubeconfig found: looked at ${path.join(home, '.kube', 'config')}`),
        r.stderr,
      );
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  });

  test('--help and --version exit 0 on stdout', async () => {
    const help = await runToEnd(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /^Usage: kube-watch RESOURCE \[options\]/);
    assert.match(help.stdout, /--send-initial-events/);
    const version = await runToEnd(['--version']);
    assert.equal(version.code, 0);
    // The rest of the output (target, commit, binary) is tested in version.test.js.
    assert.equal(
      version.stdout.split('\n')[0],
      `kube-watch-native ${require('../packages/kube-watch-native/package.json').version}`,
    );
  });
});

describe('against the simulated API server', () => {
  const { createSimulator, certs } = require('../packages/kube-watch-native/sim');
  let sim;
  let tlsSim;
  let tmp;
  let kubeconfig;
  let wrongTokenKubeconfig;
  let certKubeconfig;

  const podObject = (namespace, name, labels, ready) => ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { namespace, name, labels },
    spec: { containers: [{ name: 'main', image: 'nginx' }] },
    status: { phase: 'Running', containerStatuses: [{ name: 'main', ready }] },
  });

  /** A kubeconfig in `tmp` whose user has `user`'s fields, with contexts `sim` and `sim-other`. */
  function kubeconfigWith(name, { server, user }) {
    return writeKubeconfig(path.join(tmp, name), {
      server,
      userLines: Object.entries(user).map(([k, v]) => `${k}: ${JSON.stringify(v)}`),
      contexts: [
        { name: 'sim', namespace: 'default' },
        { name: 'sim-other', namespace: 'other' },
      ],
    });
  }

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-cli-'));
    sim = await createSimulator({ token: TOKEN });
    sim.create('pods', podObject('default', 'web-1', { app: 'web' }, true));
    sim.create('pods', podObject('default', 'db-1', { app: 'db' }, false));
    sim.create('pods', podObject('other', 'web-2', { app: 'web' }, true));
    kubeconfig = kubeconfigWith('config.yaml', { server: sim.url, user: { token: TOKEN } });
    wrongTokenKubeconfig = kubeconfigWith('wrong.yaml', {
      server: sim.url,
      user: { token: 'not-the-token' },
    });
    tlsSim = await createSimulator({ tls: true, requireClientCert: true, token: TOKEN });
    tlsSim.create('pods', podObject('default', 'tls-pod', { app: 'tls' }, true));
    certKubeconfig = kubeconfigWith('cert.yaml', {
      server: tlsSim.url,
      user: { 'client-certificate': certs.paths.client, 'client-key': certs.paths.clientKey },
    });
  });
  after(async () => {
    await Promise.all([sim && sim.close(), tlsSim && tlsSim.close()]);
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const names = (stdout) =>
    dataLines(stdout)
      .map((l) => l.split(/\s+/)[2])
      .sort();

  test('table: aligned header and lines for the context namespace; --timeout ends with exit 0', async () => {
    const r = await runToEnd(['pods', '--kubeconfig', kubeconfig, '--timeout', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stderr, '');
    const [header, ...lines] = r.stdout.split('\n').filter(Boolean);
    assert.match(header, /^TIME {2,}TYPE {2,}NAMESPACE\/NAME {2,}RV {2,}STATUS$/);
    assert.deepEqual(names(r.stdout), ['default/db-1', 'default/web-1']);
    const cols = ['TYPE', 'NAMESPACE/NAME', 'RV', 'STATUS'].map((c) => header.indexOf(c));
    for (const line of lines) {
      assert.match(line, /^\d\d:\d\d:\d\d\.\d{3}  /);
      for (const col of cols) {
        assert.equal(line.slice(col - 2, col), '  ', `column at ${col} misaligned in\n${header}\n${line}`);
        assert.notEqual(line[col], ' ', `column at ${col} misaligned in\n${header}\n${line}`);
      }
      assert.equal(line.slice(cols[0]).split(' ')[0], 'ADDED');
      assert.match(line.slice(cols[2]).split(' ')[0], /^\d+$/);
    }
    const status = Object.fromEntries(lines.map((l) => [l.split(/\s+/)[2], l.slice(cols[3])]));
    assert.deepEqual(status, { 'default/web-1': 'Running 1/1', 'default/db-1': 'Running 0/1' });
  });

  test('-n picks the namespace, -A watches all of them, -l filters by label', async () => {
    const [ns, all, selected, context] = await Promise.all([
      runToEnd(['pods', '--kubeconfig', kubeconfig, '--timeout', '1', '-n', 'other']),
      runToEnd(['pods', '--timeout', '1', '-A'], {
        env: { KUBECONFIG: [path.join(tmp, 'absent.yaml'), kubeconfig].join(path.delimiter) },
      }),
      runToEnd(['po', '--kubeconfig', kubeconfig, '--timeout', '1', '--all-namespaces', '-l', 'app=web']),
      runToEnd(['pods', '--kubeconfig', kubeconfig, '--timeout', '1', '--context', 'sim-other']),
    ]);
    for (const r of [ns, all, selected, context]) assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(names(ns.stdout), ['other/web-2']);
    assert.deepEqual(names(context.stdout), ['other/web-2'], 'the context namespace');
    assert.deepEqual(names(all.stdout), ['default/db-1', 'default/web-1', 'other/web-2']);
    assert.deepEqual(names(selected.stdout), ['default/web-1', 'other/web-2']);
  });

  test('-o json streams each event as yielded, line by line while the watch runs', async () => {
    const run = runCli(['pods', '--kubeconfig', kubeconfig, '-o', 'json', '-n', 'default', '-l', 'app=web']);
    await run.waitFor((o) => o.stdout.includes('"web-1"'));
    assert.equal(run.child.exitCode, null, 'the first line arrived before the process ended');
    sim.create('pods', podObject('default', 'web-3', { app: 'web' }, false));
    sim.patch('pods', 'default', 'web-3', (p) => {
      p.status.containerStatuses[0].ready = true;
    });
    sim.remove('pods', 'default', 'web-3');
    await run.waitFor((o) => o.stdout.includes('"DELETED"'));
    run.child.kill('SIGINT');
    const r = await run.done;
    assert.equal(r.code, 0, r.stderr);
    const events = jsonLines(r.stdout);
    assert.deepEqual(
      events.map((e) => [e.type, e.object.metadata.name]),
      [
        ['ADDED', 'web-1'],
        ['ADDED', 'web-3'],
        ['MODIFIED', 'web-3'],
        ['DELETED', 'web-3'],
      ],
    );
    for (const e of events) {
      assert.deepEqual(Object.keys(e).sort(), ['object', 'resourceVersion', 'type']);
      assert.equal(e.resourceVersion, e.object.metadata.resourceVersion);
      assert.equal(e.object.kind, 'Pod');
    }
    const rvs = events.slice(1).map((e) => Number(e.resourceVersion));
    assert.deepEqual(
      rvs,
      [...rvs].sort((a, b) => a - b),
    );
    assert.equal(events[2].object.status.containerStatuses[0].ready, true);
  });

  /** Runs `kube-watch pods -o json -n <ns> <args> --timeout 1` on the simulator to its end. */
  const podsAsJson = (ns, ...args) =>
    runToEnd(['pods', '--kubeconfig', kubeconfig, '-o', 'json', '-n', ns, ...args, '--timeout', '1']);

  test('--send-initial-events ends the initial list with a bookmark', async () => {
    const r = await podsAsJson('other', '--send-initial-events');
    assert.equal(r.code, 0, r.stderr);
    const events = jsonLines(r.stdout);
    assert.deepEqual(events.map((e) => e.type).slice(0, 2), ['ADDED', 'BOOKMARK']);
    assert.equal(events[1].object.metadata.annotations['k8s.io/initial-events-end'], 'true');
    const request = sim.requests.filter((q) => q.path === '/api/v1/namespaces/other/pods').at(-1);
    assert.equal(request.query.allowWatchBookmarks, 'true');
    assert.equal(request.query.resourceVersionMatch, 'NotOlderThan');
  });

  test('--resource-version resumes after that version', async () => {
    const { metadata } = sim.create('pods', podObject('rv-test', 'first', {}, true));
    sim.create('pods', podObject('rv-test', 'second', {}, true));
    const r = await podsAsJson('rv-test', '--resource-version', metadata.resourceVersion);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(
      jsonLines(r.stdout).map((e) => e.object.metadata.name),
      ['second'],
    );
  });

  test('client certificate from the kubeconfig over mutual TLS', async () => {
    const r = await runToEnd(['pods', '--kubeconfig', certKubeconfig, '--timeout', '1']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(names(r.stdout), ['default/tls-pod']);
  });

  for (const signal of ['SIGINT', 'SIGTERM']) {
    test(`${signal} stops the watch quietly with exit 0, the process going by itself`, async () => {
      // The CLI's own last resort is a process.exit() 3 s after a signal; with process.exit()
      // made a no-op (no-exit-fallback.js) a process the aborted watch still held would run
      // until the test kills it, so its exit shows the watch let it go, however long a busy
      // machine took (told apart by what happened, not by a time bound).
      const run = runCli(['pods', '--kubeconfig', kubeconfig], { nodeArgs: ['--require', NO_EXIT_FALLBACK] });
      await run.waitFor((o) => o.stdout.includes('default/web-1'), CHILD_LIMIT_MS);
      run.child.kill(signal);
      const r = await run.done;
      assert.equal(r.killedByTest, false, 'the process ended by itself');
      assert.equal(r.code, 0);
      assert.equal(r.stderr, '');
    });
  }

  test('wrong token: UNAUTHORIZED_ERROR 401 on stderr, exit 1', async () => {
    const r = await runToEnd(['pods', '--kubeconfig', wrongTokenKubeconfig]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /watch failed: UNAUTHORIZED_ERROR \(status 401\) on \/api\/v1\/namespaces\/default\/pods/,
    );
    assert.match(
      r.stderr,
      /\n {2}hint: the cluster refused the credential of context "sim" \(a bearer token\): it may have expired/,
    );
    assert.ok(!r.stderr.includes('not-the-token'), 'the token is not printed');
    assert.ok(!r.stderr.includes(TOKEN));
  });

  test('with -o json the ERROR event is also printed as yielded', async () => {
    const r = await runToEnd(['deploy', '--kubeconfig', wrongTokenKubeconfig, '-o', 'json', '-A']);
    assert.equal(r.code, 1);
    assert.deepEqual(jsonLines(r.stdout), [
      {
        type: 'ERROR',
        error: {
          errorType: 'UNAUTHORIZED_ERROR',
          statusCode: 401,
          resourcePath: '/apis/apps/v1/deployments',
        },
      },
    ]);
  });

  test('unknown resource: discovery says so, exit 2, no watch', async () => {
    const before = sim.requests.length;
    const r = await runToEnd(['crontabs.stable.example.com/v1', '--kubeconfig', kubeconfig]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /the server doesn't have a resource type "crontabs\.stable\.example\.com\/v1"/);
    assert.equal(r.stdout, '', 'no header without a row');
    assert.ok(
      sim.requests.slice(before).every((q) => q.query.watch === undefined),
      'no watch was started',
    );
  });

  test('unknown resource when discovery fails: the watch reports NOT_FOUND 404, exit 1', async () => {
    // The wrong token makes discovery fail (401), so the built-in table stands in.
    const r = await runToEnd(['crontabs.stable.example.com/v1', '--kubeconfig', wrongTokenKubeconfig], {
      env: { KUBE_WATCH_CACHE_DIR: fs.mkdtempSync(path.join(tmp, 'cache-')) },
    });
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /UNAUTHORIZED_ERROR \(status 401\) on \/apis\/stable\.example\.com\/v1\/namespaces\/default\/crontabs/,
    );
  });

  test('cluster-scoped resources ignore the namespace', async () => {
    // The ERROR event's resourcePath shows which URL was watched.
    const r = await runToEnd(['ns', '-n', 'default', '--kubeconfig', wrongTokenKubeconfig]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /on \/api\/v1\/namespaces\n/);
  });

  test('--demo runs a simulated cluster, prints events and stops by itself', async () => {
    // The demo's clock starts with its simulator, before the watch: on a loaded machine the
    // start-up eats into it, so it runs long enough for the watch to see the workload.
    const r = await runToEnd(['--demo', '--demo-seconds', '4']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /simulated cluster .* at http:\/\/127\.0\.0\.1:\d+/);
    const lines = dataLines(r.stdout);
    // The workload starts 2 pods in each of 2 namespaces, then changes one every 250ms.
    assert.ok(lines.length >= 5, `expected the initial pods and some changes:\n${r.stdout}`);
    const namespaces = new Set(lines.map((l) => l.split(/\s+/)[2].split('/')[0]));
    assert.ok(namespaces.size >= 2, `all namespaces are watched: ${[...namespaces]}`);
    // It ran its 4 s and stopped by itself (runToEnd: not killed), before the default 30 s
    // would have: --demo-seconds is what ended it, however slow the start-up.
    assert.ok(r.elapsedMs >= 4000 && r.elapsedMs < 30_000, `demo took ${r.elapsedMs}ms`);
  });
});
