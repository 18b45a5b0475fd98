'use strict';
// kube-watch on "real cluster" concerns, against simulated API servers: resource names from
// API discovery (aggregated and legacy) and its cache, --field-selector, exec credential
// plugins with renewal after a 401, and the one-line hints for first-run failures.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const { createSimulator } = require('../packages/kube-watch-native/sim');
const { writeKubeconfig, runKubeWatch } = require('./kube-watch-child');

const PLUGINS = path.join(__dirname, 'fixtures', 'exec', 'plugins');
const TOKEN = 'cli-cluster-token-SHOULD-NEVER-BE-PRINTED';
const PATH = [path.dirname(process.execPath), process.env.PATH].join(path.delimiter);

let tmp;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-cluster-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Runs kube-watch to its end (killed after 60 s) with its own discovery cache unless given one. */
async function run(args, env = {}) {
  const { code, stdout, stderr } = await runKubeWatch(args, {
    KUBE_WATCH_CACHE_DIR: fs.mkdtempSync(path.join(tmp, 'cache-')),
    PATH,
    ...env,
  });
  assert.ok(!`${stdout}${stderr}`.includes('SHOULD-NEVER-BE-PRINTED'), `a secret was printed:\n${stderr}`);
  return { code, stdout, stderr };
}

let n = 0;
/** A kubeconfig for `server` with `user` (YAML lines under `user:`), in its own file. */
function kubeconfig(server, userLines, { ca = true, namespace = 'default' } = {}) {
  return writeKubeconfig(path.join(tmp, `config-${++n}.yaml`), {
    server,
    userLines,
    ca,
    cluster: 'sim-cluster',
    contexts: [{ name: 'sim', namespace }],
  });
}

const podObject = (namespace, name, phase = 'Running') => ({
  metadata: { namespace, name, labels: { app: name.split('-')[0] } },
  spec: { containers: [{ name: 'main', image: 'nginx' }] },
  status: { phase },
});

async function simulator(options) {
  const sim = await createSimulator({ token: TOKEN, ...options });
  sim.defineResource('stable.example.com/v1/crontabs', { kind: 'CronTab', shortNames: ['ct'] });
  sim.defineResource('example.com/v1/clusterwidgets', {
    kind: 'ClusterWidget',
    namespaced: false,
    shortNames: ['cw'],
  });
  sim.create('pods', podObject('default', 'web-1'));
  sim.create('pods', podObject('default', 'db-1', 'Pending'));
  sim.create('example.com/v1/clusterwidgets', { metadata: { name: 'widget-a' } });
  return sim;
}

const watchPaths = (sim, from) =>
  sim.requests
    .slice(from)
    .filter((q) => q.query.watch === 'true')
    .map((q) => q.path);
const discoveryRequests = (sim, from) =>
  sim.requests.slice(from).filter((q) => q.query.watch === undefined && /^\/apis?(\/|$)/.test(q.path));

for (const mode of ['aggregated', 'legacy']) {
  describe(`resource names from ${mode} discovery`, () => {
    let sim;
    let config;
    before(async () => {
      sim = await simulator({ discovery: mode });
      config = kubeconfig(sim.url, [`token: ${TOKEN}`]);
    });
    after(() => sim.close());

    const cases = [
      ['po', '/api/v1/namespaces/default/pods'],
      ['Pod', '/api/v1/namespaces/default/pods'],
      ['deploy', '/apis/apps/v1/namespaces/default/deployments'],
      ['svc', '/api/v1/namespaces/default/services'],
      ['cm', '/api/v1/namespaces/default/configmaps'],
      ['hpa', '/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers'],
      ['ct', '/apis/stable.example.com/v1/namespaces/default/crontabs'],
      ['crontab', '/apis/stable.example.com/v1/namespaces/default/crontabs'],
      ['CronTab', '/apis/stable.example.com/v1/namespaces/default/crontabs'],
      ['crontabs.stable.example.com', '/apis/stable.example.com/v1/namespaces/default/crontabs'],
      ['crontabs.v1.stable.example.com', '/apis/stable.example.com/v1/namespaces/default/crontabs'],
      // Cluster-scoped, known only from discovery: watched cluster-wide without -A.
      ['cw', '/apis/example.com/v1/clusterwidgets'],
    ];
    test('short names, singulars, kinds, with and without group and version', async () => {
      const results = await Promise.all(
        cases.map(async ([arg]) => {
          const from = sim.requests.length;
          const r = await run([arg, '--kubeconfig', config, '--timeout', '1', '-o', 'json']);
          return { arg, r, from };
        }),
      );
      const watched = new Set(watchPaths(sim, 0));
      for (const { arg, r } of results) assert.equal(r.code, 0, `${arg}: ${r.stderr}`);
      for (const [, want] of cases) assert.ok(watched.has(want), `${want} was watched`);
      const cw = results.find((x) => x.arg === 'cw').r;
      assert.deepEqual(
        cw.stdout
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).object.metadata.name),
        ['widget-a'],
      );
      const discovery = discoveryRequests(sim, 0);
      if (mode === 'aggregated') {
        assert.deepEqual([...new Set(discovery.map((q) => q.path))].sort(), ['/api', '/apis']);
        for (const q of discovery)
          assert.match(q.headers.accept, /g=apidiscovery\.k8s\.io;v=v2;as=APIGroupDiscoveryList/);
      } else {
        const paths = new Set(discovery.map((q) => q.path));
        for (const p of ['/api', '/apis', '/api/v1', '/apis/apps/v1', '/apis/stable.example.com/v1']) {
          assert.ok(paths.has(p), `legacy discovery asked for ${p}`);
        }
      }
    });

    test('unknown and ambiguous names list candidates', async () => {
      sim.defineResource('cert-manager.io/v1/certificates', { kind: 'Certificate' });
      sim.defineResource('networking.internal.knative.dev/v1alpha1/certificates', { kind: 'Certificate' });
      const [unknown, ambiguous, wrongVersion] = await Promise.all([
        run(['deploymnt', '--kubeconfig', config]),
        run(['certificates', '--kubeconfig', config]),
        run(['deployments.apps/v2', '--kubeconfig', config]),
      ]);
      assert.equal(unknown.code, 2);
      assert.match(
        unknown.stderr,
        /the server doesn't have a resource type "deploymnt"; did you mean deployments\.apps\?/,
      );
      assert.equal(ambiguous.code, 2);
      assert.match(
        ambiguous.stderr,
        /"certificates" is ambiguous: the server has certificates\.cert-manager\.io, certificates\.networking\.internal\.knative\.dev; name one with its group/,
      );
      assert.equal(wrongVersion.code, 2);
      assert.match(
        wrongVersion.stderr,
        /the server does not serve deployments\.apps in version v2; it serves v1/,
      );
    });
  });
}

describe('discovery cache', () => {
  test('kept per server under KUBE_WATCH_CACHE_DIR; a name it lacks makes it ask again', async () => {
    const sim = await simulator();
    try {
      const config = kubeconfig(sim.url, [`token: ${TOKEN}`]);
      const cache = fs.mkdtempSync(path.join(tmp, 'shared-cache-'));
      const env = { KUBE_WATCH_CACHE_DIR: cache };
      let from = sim.requests.length;
      assert.equal((await run(['po', '--kubeconfig', config, '--timeout', '1'], env)).code, 0);
      assert.equal(discoveryRequests(sim, from).length, 2, 'aggregated: /api and /apis');
      const files = fs.readdirSync(cache);
      assert.equal(files.length, 1);
      assert.match(files[0], /^127\.0\.0\.1_\d+-[0-9a-f]{12}\.json$/);
      assert.ok(!fs.readFileSync(path.join(cache, files[0]), 'utf8').includes(TOKEN));

      from = sim.requests.length;
      assert.equal((await run(['deploy', '--kubeconfig', config, '--timeout', '1'], env)).code, 0);
      assert.equal(discoveryRequests(sim, from).length, 0, 'answered from the cache');

      sim.defineResource('new.example.com/v1/gadgets', { kind: 'Gadget', shortNames: ['gd'] });
      from = sim.requests.length;
      const r = await run(['gd', '--kubeconfig', config, '--timeout', '1'], env);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(discoveryRequests(sim, from).length, 2, 'asked again for the new CRD');
      assert.deepEqual(watchPaths(sim, from), ['/apis/new.example.com/v1/namespaces/default/gadgets']);
    } finally {
      await sim.close();
    }
  });
});

describe('--field-selector', () => {
  test('is sent and filters', async () => {
    const sim = await simulator();
    try {
      const config = kubeconfig(sim.url, [`token: ${TOKEN}`]);
      const from = sim.requests.length;
      const r = await run([
        'pods',
        '--kubeconfig',
        config,
        '--timeout',
        '1',
        '-o',
        'json',
        '--field-selector',
        'status.phase=Pending',
      ]);
      assert.equal(r.code, 0, r.stderr);
      const names = r.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).object.metadata.name);
      assert.deepEqual(names, ['db-1']);
      const watch = sim.requests.slice(from).find((q) => q.query.watch === 'true');
      assert.equal(watch.query.fieldSelector, 'status.phase=Pending');
    } finally {
      await sim.close();
    }
  });
});

describe('exec credential plugins', () => {
  const execUser = (plugin) => [
    'exec:',
    '  apiVersion: client.authentication.k8s.io/v1',
    `  command: ${path.join(PLUGINS, plugin)}`,
    '  interactiveMode: Never',
  ];
  /** A state directory for the token plugin: it hands out `tokens`, one a run, in this order. */
  const tokenState = (...tokens) => {
    const state = fs.mkdtempSync(path.join(tmp, 'state-'));
    fs.writeFileSync(path.join(state, 'tokens'), tokens.map((token) => `${token}\n`).join(''));
    return state;
  };
  /** How many times the plugin ran with `state`. */
  const pluginRuns = (state) =>
    fs.readFileSync(path.join(state, 'runs.jsonl'), 'utf8').trim().split('\n').length;

  test('a token plugin, run again when discovery is refused (401)', async () => {
    const sim = await simulator({ token: 'exec-good-SHOULD-NEVER-BE-PRINTED' });
    try {
      const state = tokenState('exec-stale-SHOULD-NEVER-BE-PRINTED', 'exec-good-SHOULD-NEVER-BE-PRINTED');
      const config = kubeconfig(sim.url, execUser('token.js'));
      const r = await run(['po', '--kubeconfig', config, '--timeout', '1'], { EXEC_STATE_DIR: state });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /default\/web-1/);
      assert.equal(pluginRuns(state), 2);
    } finally {
      await sim.close();
    }
  });

  test('a token revoked between discovery and the watch: 401, the plugin runs again, the watch goes on', async () => {
    const sim = await simulator({ token: 'exec-first-SHOULD-NEVER-BE-PRINTED' });
    try {
      const state = tokenState('exec-first-SHOULD-NEVER-BE-PRINTED', 'exec-second-SHOULD-NEVER-BE-PRINTED');
      // The first watch request revokes the first token (before the server checks it).
      const onRequest = (q) => {
        if (q.query.watch === 'true') {
          sim.options.token = 'exec-second-SHOULD-NEVER-BE-PRINTED';
          sim.off('request', onRequest);
        }
      };
      sim.on('request', onRequest);
      const config = kubeconfig(sim.url, execUser('token.js'));
      const from = sim.requests.length;
      const r = await run(['po', '--kubeconfig', config, '--timeout', '1'], { EXEC_STATE_DIR: state });
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /default\/web-1/);
      assert.equal(watchPaths(sim, from).length, 2, 'watched twice');
      assert.equal(pluginRuns(state), 2);
    } finally {
      await sim.close();
    }
  });

  test('a client-certificate plugin over mutual TLS', async () => {
    const sim = await simulator({ tls: true, requireClientCert: true });
    try {
      const r = await run(['po', '--kubeconfig', kubeconfig(sim.url, execUser('cert.js')), '--timeout', '1']);
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /default\/web-1/);
      assert.ok(
        sim.requests.some((q) => q.clientCertCN),
        'the client certificate was presented',
      );
    } finally {
      await sim.close();
    }
  });

  test('a failing plugin: exit 2 with context, command and reason', async () => {
    const config = kubeconfig('https://127.0.0.1:9', execUser('fail.js'));
    const r = await run(['po', '--kubeconfig', config]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /context "sim": exec plugin ".*fail\.js" exited with code 3: error: the refresh token has expired/,
    );
  });
});

describe('hints for first-run failures', () => {
  let sim;
  before(async () => {
    sim = await simulator({ tls: true });
  });
  after(() => sim.close());

  test('no kubeconfig', async () => {
    const home = fs.mkdtempSync(path.join(tmp, 'home-'));
    const r = await run(['pods'], { HOME: home, KUBERNETES_SERVICE_HOST: '' });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /\n {2}hint: pass --kubeconfig PATH or set KUBECONFIG .*or try kube-watch --demo\n$/,
    );
  });

  test('context not found', async () => {
    const r = await run([
      'pods',
      '--kubeconfig',
      kubeconfig(sim.url, [`token: ${TOKEN}`]),
      '--context',
      'prod',
    ]);
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /context "prod" not found .*\n {2}hint: pick one of the available contexts with --context NAME/,
    );
  });

  test('certificate unknown: suggests the CA', async () => {
    const config = kubeconfig(sim.url, [`token: ${TOKEN}`], { ca: false });
    const r = await run(['pods', '--kubeconfig', config]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /\n {2}hint: the server's certificate is not trusted: set certificate-authority or certificate-authority-data of cluster "sim-cluster"/,
    );
  });

  test('401 suggests the credential', async () => {
    const r = await run(['pods', '--kubeconfig', kubeconfig(sim.url, ['token: wrong'])]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /hint: the cluster refused the credential of context "sim" \(a bearer token\)/);
  });

  test('403 names the verb watch and the resource', async () => {
    sim.nextWatchFault({ status: 403 });
    const r = await run([
      'deploy',
      '--kubeconfig',
      kubeconfig(sim.url, [`token: ${TOKEN}`], { namespace: 'team-a' }),
    ]);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      /hint: the user of context "sim" may not watch deployments\.apps in namespace "team-a" \(RBAC verb "watch"; check with: kubectl auth can-i watch deployments\.apps -n team-a\)/,
    );
  });
});

describe('discovery answered by something that is not an API server', () => {
  // A loopback server standing in for a proxy or another service at the cluster's URL: each
  // case lives under its own path prefix, answers discovery with `answers[path]` (else
  // `answers.other`), and serves every watch one ADDED pod named after the case.
  const json = (body) => ({ type: 'application/json', text: JSON.stringify(body) });
  const APIVERSIONS = json({ kind: 'APIVersions', versions: ['v1'] });
  const APIGROUPLIST = json({
    kind: 'APIGroupList',
    apiVersion: 'v1',
    groups: [{ name: 'apps', versions: [{ groupVersion: 'apps/v1', version: 'v1' }] }],
  });
  const cases = {
    hello: { other: json({ hello: 'world' }) },
    html: { other: { type: 'text/html; charset=utf-8', text: '<!doctype html><title>Sign in</title>' } },
    list: { '/api': json([{ name: 'pods' }]), other: json({ hello: 'world' }) },
    groups: { '/api': APIVERSIONS, '/apis': APIVERSIONS, other: json({ hello: 'world' }) },
    resources: {
      '/api': APIVERSIONS,
      '/apis': APIGROUPLIST,
      '/api/v1': json({ kind: 'Status', status: 'Success' }),
      other: json({ kind: 'APIResourceList', groupVersion: 'apps/v1', resources: [] }),
    },
  };
  let server;
  let base;
  const requests = [];
  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url, 'http://x');
      const [, name, ...rest] = url.pathname.split('/');
      const path = `/${rest.join('/')}`;
      requests.push({ name, path, watch: url.searchParams.get('watch') === 'true' });
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const object = {
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `${name}-pod`, resourceVersion: '7' },
        };
        res.end(`${JSON.stringify({ type: 'ADDED', object })}\n`);
        return;
      }
      const answer = cases[name]?.[path] ?? cases[name]?.other;
      if (!answer) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': answer.type }).end(answer.text);
    });
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${server.address().port}`;
  });
  after(() => new Promise((resolve) => server.close(resolve)));

  test('a warning names the URL and what it answered; the built-in table stands in and the watch runs', async () => {
    const runs = [
      ['hello', 'pods'],
      ['html', 'pods'],
      ['list', 'po'],
      ['groups', 'deploy'],
      ['resources', 'pods'],
    ];
    const cacheDirs = {};
    const results = await Promise.all(
      runs.map(([name, arg]) => {
        cacheDirs[name] = fs.mkdtempSync(path.join(tmp, 'cache-'));
        const config = kubeconfig(`${base}/${name}`, [`token: ${TOKEN}`]);
        return run([arg, '--kubeconfig', config, '-o', 'json'], { KUBE_WATCH_CACHE_DIR: cacheDirs[name] });
      }),
    );
    const byName = Object.fromEntries(runs.map(([name], i) => [name, results[i]]));
    const warning = (name, url, what) =>
      `warn: API discovery: GET ${base}/${name}${url} answered 200 with ${what}; using the built-in table of well-known resources\n`;
    const expected = {
      hello: warning(
        'hello',
        '/api',
        'a JSON object that is not an APIVersions document (kind: none, keys: hello)',
      ),
      html: warning('html', '/api', 'a text/html body that is not JSON'),
      list: warning('list', '/api', 'a JSON array of 1 item that is not an APIVersions document'),
      groups: warning(
        'groups',
        '/apis',
        'a JSON object that is not an APIGroupList document (kind: APIVersions, keys: kind, versions)',
      ),
      resources: warning(
        'resources',
        '/api/v1',
        'a JSON object that is not an APIResourceList document (kind: Status, keys: kind, status)',
      ),
    };
    for (const [name, arg] of runs) {
      const r = byName[name];
      assert.equal(r.code, 0, `${name}: ${r.stderr}`);
      assert.equal(r.stderr, expected[name], name);
      assert.doesNotMatch(r.stderr, /doesn't have a resource type/);
      assert.equal(JSON.parse(r.stdout).object.metadata.name, `${name}-pod`, `${name}: the watch ran`);
      const watched = requests.filter((q) => q.name === name && q.watch).map((q) => q.path);
      const want =
        arg === 'deploy' ? '/apis/apps/v1/namespaces/default/deployments' : '/api/v1/namespaces/default/pods';
      assert.deepEqual(watched, [want], `${name}: the table's path`);
      assert.deepEqual(fs.readdirSync(cacheDirs[name]), [], `${name}: nothing cached`);
    }
  });
});
