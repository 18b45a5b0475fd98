'use strict';
// Proxies and tls-server-name, end to end: watches over HTTPS + HTTP/2, HTTPS + HTTP/1.1 and
// plain HTTP through the test bed's HTTP CONNECT and SOCKS5 proxies (sim/proxies.js), which
// record every tunnel; HTTPS_PROXY / HTTP_PROXY / NO_PROXY in child processes (so that the
// variables never reach this process's other watches); a server certificate for another name
// (kube.internal) and tlsServerName; and a kubeconfig with proxy-url and tls-server-name
// driving kube-watch.
//
// Every proxy dials 127.0.0.1 whatever name it is asked for, so `kube.test` is never looked up.
// Cases that would connect to a name without a proxy (NO_PROXY naming `kube.test`) would need
// DNS, whose resolver may be off the machine: NO_PROXY is tested here with `0.0.0.0`, which is
// not loopback (so the environment's proxy applies to it, as in Go) yet reaches 127.0.0.1
// without any lookup; the domain forms of NO_PROXY are covered by the Rust unit tests
// (src/proxy.rs).

const { test, describe } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { createHttpProxy, createSocks5Proxy } = require('../packages/kube-watch-native/sim/proxies');
const certs = require('../packages/kube-watch-native/sim/certs');
const { TOKEN, paramsFor, collect, watcherWithLogger, pod } = require('./helpers');
const { writeKubeconfig, runKubeWatch, runNode } = require('./kube-watch-child');

const PROXY_USER = 'proxy-user';
const PROXY_PASSWORD = 'proxy-pw-8c41e7d2';
const WRONG_PASSWORD = 'wrong-pw-3b9f0a6e';
const SECRETS = [PROXY_PASSWORD, WRONG_PASSWORD, TOKEN];
const CA = Buffer.from(certs.ca).toString('base64');
const RESOURCE_PATH = '/api/v1/namespaces/default/pods';
const SYSTEM_ERROR_0 = [
  { type: 'ERROR', error: { errorType: 'SYSTEM_ERROR', statusCode: 0, resourcePath: RESOURCE_PATH } },
];
const PROXY_VARIABLES = ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'];
const CHILD = path.join(__dirname, 'fixtures', 'proxy', 'watch.js');
/** Any child still running after this long is killed and its test fails. */
const CHILD_LIMIT_MS = 20_000;

const SERVERS = {
  'HTTPS + HTTP/2': { tls: true, http2: true },
  'HTTPS + HTTP/1.1': { tls: true },
  'plain HTTP': {},
};
const PROXIES = {
  http: createHttpProxy,
  socks5: createSocks5Proxy,
};
const REQUIRED = { auth: { username: PROXY_USER, password: PROXY_PASSWORD } };

/** `text` with every secret of these tests masked, for assertion messages. */
const shown = (text) => SECRETS.reduce((acc, secret) => acc.split(secret).join('[secret]'), String(text));

/** Asserts that no secret appears in `text`, without ever printing one. */
function assertNoSecret(text, what) {
  for (const [i, secret] of SECRETS.entries())
    assert.equal(String(text).includes(secret), false, `${what} holds secret #${i}: ${shown(text)}`);
}

/** A simulator holding pod p1 (options `simOptions`, token TOKEN), closed when `t` ends. */
async function simFor(t, simOptions = {}) {
  const sim = await createSimulator({ token: TOKEN, ...simOptions });
  t.after(() => sim.close());
  sim.create('pods', pod('p1'));
  return sim;
}

/** A proxy of `kind` ('http' or 'socks5'), requiring PROXY_USER unless told, closed when `t` ends. */
async function proxyFor(t, kind, options = REQUIRED) {
  const proxy = await PROXIES[kind](options);
  t.after(() => proxy.close());
  return proxy;
}

/** One watch of default/pods: its first event (or every event up to `count`) and the logger. */
async function watchOnce(sim, clusterDetails, { count = 1 } = {}) {
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim, { clusterDetails }), { namespace: 'default' }),
    { count },
  );
  return { events, logger };
}

/** Yields `generator`'s events, creating pod p2 once p1 has arrived: a live event must follow. */
async function* withLiveEvent(generator, sim) {
  for await (const event of generator) {
    yield event;
    if (event.type === 'ADDED' && event.object.metadata.name === 'p1') sim.create('pods', pod('p2'));
  }
}

const summary = (events) =>
  events.map((e) =>
    e.type === 'ERROR' ? `ERROR ${e.error.errorType}` : `${e.type} ${e.object.metadata.name}`,
  );

/** Asserts that the proxy carried TLS only: neither the token nor the path nor a pod name. */
function assertOpaque(tunnels) {
  for (const tunnel of tunnels) {
    assert.equal(tunnel.saw(TOKEN), false, 'the proxy saw the bearer token');
    assert.equal(tunnel.saw(RESOURCE_PATH), false, 'the proxy saw the request path');
    assert.equal(tunnel.saw('"p2"'), false, 'the proxy saw an event');
  }
}

/**
 * Asserts that every request for the pods reached `sim` over one of `proxy`'s tunnels: from
 * the port of the proxy's own connection, not from a connection of the watcher's.
 */
function assertThroughProxy(sim, proxy) {
  const ports = new Set(proxy.tunnels.map((x) => x.upstreamPort));
  const requests = sim.requests.filter((r) => r.path === RESOURCE_PATH);
  assert.ok(requests.length >= 1, 'the server saw the watch');
  for (const request of requests)
    assert.ok(ports.has(request.remotePort), 'the request came through the proxy');
}

describe('clusterDetails.proxyUrl', () => {
  for (const [serverName, simOptions] of Object.entries(SERVERS)) {
    for (const kind of Object.keys(PROXIES)) {
      test(`${serverName} through a ${kind}:// proxy with credentials: events flow through the recorded tunnel`, async (t) => {
        const sim = await simFor(t, simOptions);
        const proxy = await proxyFor(t, kind);
        const { watcher, logger } = watcherWithLogger();
        const params = paramsFor(sim, {
          clusterDetails: { caData: CA, proxyUrl: proxy.urlWith(PROXY_USER, PROXY_PASSWORD) },
        });
        const events = await collect(
          withLiveEvent(watcher.watchResource(params, { namespace: 'default' }), sim),
          { count: 2 },
        );
        assert.deepEqual(summary(events), ['ADDED p1', 'ADDED p2']);
        assert.deepEqual(logger.warnings().map(shown), []);

        const target = `127.0.0.1:${sim.port}`;
        assert.ok(proxy.tunnels.length >= 1, 'the proxy carried the watch');
        for (const tunnel of proxy.tunnels) {
          assert.equal(tunnel.target, target);
          assert.equal(tunnel.credentials, 'matched');
          assert.equal(tunnel.accepted, true);
        }
        if (simOptions.http2) assert.equal(proxy.tunnels.length, 1, 'one HTTP/2 connection, one tunnel');
        assertThroughProxy(sim, proxy);
        const carrier = proxy.tunnels.at(-1);
        assert.ok(carrier.bytesUp > 0 && carrier.bytesDown > 0, 'bytes went both ways');
        // The request reached the API server, token and all.
        const watchRequest = sim.requests.find((r) => r.path === RESOURCE_PATH);
        assert.equal(watchRequest.headers.authorization, `Bearer ${TOKEN}`);
        assert.equal(watchRequest.http2, Boolean(simOptions.http2));

        if (simOptions.tls) assertOpaque(proxy.tunnels);
        else {
          // Plain HTTP is relayed in the clear, which shows that the check above can see it.
          assert.ok(proxy.tunnels.some((x) => x.saw(RESOURCE_PATH) && x.saw(TOKEN) && x.saw('"p2"')));
          if (kind === 'http') assert.equal(proxy.tunnels[0].protocol, 'forward');
        }
      });

      test(`${serverName} through a ${kind}:// proxy with a wrong password: SYSTEM_ERROR 0 naming the proxy, no secret`, async (t) => {
        const sim = await simFor(t, simOptions);
        const proxy = await proxyFor(t, kind);
        const { events, logger } = await watchOnce(sim, {
          caData: CA,
          proxyUrl: proxy.urlWith(PROXY_USER, WRONG_PASSWORD),
        });
        assert.deepEqual(events, SYSTEM_ERROR_0);
        const warnings = logger.warnings();
        assert.equal(warnings.length, 1, shown(warnings.join('\n')));
        assertNoSecret(warnings[0], 'the warning');
        assert.ok(
          warnings[0].includes(`proxy ${kind}://${PROXY_USER}:***@127.0.0.1:${proxy.port}`),
          `the warning names the proxy: ${shown(warnings[0])}`,
        );
        assert.match(warnings[0], kind === 'http' ? /407/ : /refused the user name and password|credentials/);
        assert.deepEqual(
          proxy.tunnels.map((x) => [x.credentials, x.accepted]),
          proxy.tunnels.map(() => ['mismatched', false]),
        );
        assert.ok(proxy.tunnels.length >= 1);
        assert.equal(sim.requests.length, 0, 'nothing reached the API server');
      });
    }
  }

  for (const kind of Object.keys(PROXIES)) {
    test(`a ${kind}:// proxy that wants credentials the URL does not carry: SYSTEM_ERROR 0 saying so`, async (t) => {
      const sim = await simFor(t, { tls: true, http2: true });
      const proxy = await proxyFor(t, kind);
      const { events, logger } = await watchOnce(sim, { caData: CA, proxyUrl: proxy.url });
      assert.deepEqual(events, SYSTEM_ERROR_0);
      assert.match(
        logger.warnings()[0],
        kind === 'http'
          ? /proxy http:\/\/127\.0\.0\.1:\d+: answered CONNECT 127\.0\.0\.1:\d+ with 'HTTP\/1\.1 407/
          : /proxy socks5:\/\/127\.0\.0\.1:\d+: accepts none of our authentication methods/,
      );
      assert.equal(sim.requests.length, 0);
    });
  }

  test('a proxy without credentials is used without any', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const proxy = await proxyFor(t, 'socks5', {});
    const { events } = await watchOnce(sim, { caData: CA, proxyUrl: proxy.url });
    assert.deepEqual(summary(events), ['ADDED p1']);
    assert.deepEqual(
      proxy.tunnels.map((x) => [x.target, x.credentials]),
      [[`127.0.0.1:${sim.port}`, 'none']],
    );
    assertThroughProxy(sim, proxy);
  });

  test('a proxy that cannot be reached: SYSTEM_ERROR 0 naming it, without its password', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const dead = await createHttpProxy();
    const url = dead.urlWith(PROXY_USER, PROXY_PASSWORD);
    await dead.close();
    const { events, logger } = await watchOnce(sim, { caData: CA, proxyUrl: url });
    assert.deepEqual(events, SYSTEM_ERROR_0);
    assertNoSecret(logger.warnings().join('\n'), 'the warning');
    assert.match(
      logger.warnings()[0],
      new RegExp(`proxy http://${PROXY_USER}:\\*\\*\\*@127\\.0\\.0\\.1:${dead.port}: cannot connect`),
    );
  });

  test('https:// and unparsable proxy URLs are refused with a clear message, before any connection', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const proxy = await proxyFor(t, 'http');
    const cases = [
      [
        proxy.urlWith(PROXY_USER, PROXY_PASSWORD).replace('http:', 'https:'),
        /https:\/\/ proxies .*are not supported; use http:\/\/ .*or socks5:\/\//,
      ],
      [
        `http://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:not-a-port`,
        /clusterDetails\.proxyUrl is not a usable proxy URL: invalid port/,
      ],
      [`ftp://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:21`, /scheme 'ftp' \(use http:\/\/ or socks5:\/\/\)/],
    ];
    for (const [proxyUrl, message] of cases) {
      const { events, logger } = await watchOnce(sim, { caData: CA, proxyUrl });
      assert.deepEqual(events, SYSTEM_ERROR_0);
      const warning = logger.warnings().join('\n');
      assertNoSecret(warning, 'the warning');
      assert.match(warning, message);
    }
    assert.deepEqual(proxy.tunnels, []);
    assert.equal(sim.requests.length, 0);
  });

  test('proxyUrl and tlsServerName of the wrong type throw a TypeError naming the field', () => {
    const { watcher } = watcherWithLogger();
    const sim = { url: 'https://127.0.0.1:1' };
    for (const field of ['proxyUrl', 'tlsServerName'])
      assert.throws(
        () => watcher.watchResource(paramsFor(sim, { clusterDetails: { [field]: 42 } }), {}),
        (err) => err instanceof TypeError && err.message.includes(`params.clusterDetails.${field}`),
      );
  });

  test('proxied and direct watches of one cluster never share a connection', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const proxy = await proxyFor(t, 'http');
    const { watcher } = watcherWithLogger();
    const proxied = { caData: CA, proxyUrl: proxy.urlWith(PROXY_USER, PROXY_PASSWORD) };
    const open = [];
    const start = async (clusterDetails) => {
      const generator = watcher.watchResource(paramsFor(sim, { clusterDetails }), { namespace: 'default' });
      open.push(generator);
      const first = await generator.next();
      assert.deepEqual(summary([first.value]), ['ADDED p1']);
    };
    try {
      await start(proxied);
      await start({ caData: CA });
      assert.equal(proxy.tunnels.length, 1, 'the direct watch did not use the proxied connection');
      assert.equal(sim.http2.opened, 2, 'two HTTP/2 connections: one proxied, one direct');
      await start(proxied);
      assert.equal(proxy.tunnels.length, 1, 'a second proxied watch shares the proxied connection');
      assert.equal(sim.http2.opened, 2);
    } finally {
      await Promise.all(open.map((g) => g.return()));
    }
  });
});

describe('tlsServerName', () => {
  for (const [serverName, simOptions] of Object.entries(SERVERS)) {
    if (!simOptions.tls) continue;
    const options = { ...simOptions, serverCertificate: 'kube.internal' };

    test(`${serverName}: a certificate for kube.internal at 127.0.0.1 fails without tlsServerName, before any request`, async (t) => {
      const sim = await simFor(t, options);
      for (const clusterDetails of [{ caData: CA }, { caData: CA, tlsServerName: 'other.internal' }]) {
        const { events, logger } = await watchOnce(sim, clusterDetails);
        assert.deepEqual(events, SYSTEM_ERROR_0);
        const name = clusterDetails.tlsServerName ?? '127.0.0.1';
        assert.match(
          logger.warnings()[0],
          new RegExp(`certificate not valid for name "${name.replaceAll('.', '\\.')}"`),
        );
      }
      assert.equal(sim.requests.length, 0);
    });

    test(`${serverName}: tlsServerName 'kube.internal' verifies the certificate against that name`, async (t) => {
      const sim = await simFor(t, options);
      const { events, logger } = await watchOnce(sim, { caData: CA, tlsServerName: 'kube.internal' });
      assert.deepEqual(summary(events), ['ADDED p1']);
      assert.deepEqual(logger.warnings(), []);
      const request = sim.requests.find((r) => r.path === RESOURCE_PATH);
      assert.equal(request.http2, Boolean(simOptions.http2));
      // Our own HTTP/2 connections send it by SNI too (reqwest's HTTP/1.1 ones send the URL's
      // host, none for an IP address).
      if (simOptions.http2) assert.equal(request.servername, 'kube.internal');
    });
  }

  test('tlsServerName does not replace the CA: an unknown CA still fails', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true, serverCertificate: 'kube.internal' });
    const { events, logger } = await watchOnce(sim, {
      caData: Buffer.from(certs.otherCa).toString('base64'),
      tlsServerName: 'kube.internal',
    });
    assert.deepEqual(events, SYSTEM_ERROR_0);
    assert.match(logger.warnings()[0], /UnknownIssuer|unknown issuer|invalid peer certificate/i);
  });

  test('an invalid tlsServerName is SYSTEM_ERROR 0 naming it', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const { events, logger } = await watchOnce(sim, { caData: CA, tlsServerName: 'not a name!' });
    assert.deepEqual(events, SYSTEM_ERROR_0);
    assert.match(logger.warnings()[0], /tlsServerName 'not a name!' is not a valid TLS name/);
    assert.equal(sim.requests.length, 0);
  });

  test('through a socks5:// proxy to kube.test, verified as kube.internal', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true, serverCertificate: 'kube.internal' });
    const proxy = await proxyFor(t, 'socks5');
    const { events } = await watchOnce(sim, {
      url: `https://kube.test:${sim.port}`,
      caData: CA,
      tlsServerName: 'kube.internal',
      proxyUrl: proxy.urlWith(PROXY_USER, PROXY_PASSWORD),
    });
    assert.deepEqual(summary(events), ['ADDED p1']);
    assert.deepEqual(
      proxy.tunnels.map((x) => x.target),
      [`kube.test:${sim.port}`],
    );
    assert.equal(sim.requests.at(-1).servername, 'kube.internal');
    assertThroughProxy(sim, proxy);
    assertOpaque(proxy.tunnels);
  });
});

/**
 * Runs the watch fixture in a child whose environment has no proxy variable but `env`, with
 * `watches` (see fixtures/proxy/watch.js). Resolves with one `{ events, warnings }` per watch.
 */
async function inChild(watches, env = {}) {
  const base = { ...process.env };
  for (const name of PROXY_VARIABLES) delete base[name];
  const { code, signal, stdout, stderr } = await runNode(
    [CHILD, JSON.stringify({ watches })],
    { ...base, ...env },
    CHILD_LIMIT_MS,
  );
  assert.equal(code, 0, `the child failed (${signal}): ${shown(stderr)}`);
  const results = stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
  assert.equal(results.length, watches.length);
  return results;
}

/** Watch params for the cluster at `url`, checked against the test CA. */
const paramsAt = (url, clusterDetails = {}) => ({
  clusterDetails: { name: 'sim', url, authMetadata: {}, caData: CA, ...clusterDetails },
  credential: { type: 'bearer token', token: TOKEN },
  group: '',
  apiVersion: 'v1',
  plural: 'pods',
});
const watchOf = (url, clusterDetails, extra = {}) => ({
  params: paramsAt(url, clusterDetails),
  options: { namespace: 'default' },
  ...extra,
});

describe('the environment (HTTPS_PROXY, HTTP_PROXY, NO_PROXY), in child processes', () => {
  for (const [serverName, simOptions] of Object.entries(SERVERS)) {
    if (!simOptions.tls) continue;
    test(`${serverName}: HTTPS_PROXY with credentials carries https://kube.test (tlsServerName localhost), TLS end to end`, async (t) => {
      const sim = await simFor(t, simOptions);
      const proxy = await proxyFor(t, 'http');
      const [result] = await inChild(
        [watchOf(`https://kube.test:${sim.port}`, { tlsServerName: 'localhost' })],
        {
          HTTPS_PROXY: proxy.urlWith(PROXY_USER, PROXY_PASSWORD),
        },
      );
      assert.deepEqual(summary(result.events), ['ADDED p1']);
      assert.deepEqual(result.warnings, []);
      assert.ok(proxy.tunnels.length >= 1);
      for (const tunnel of proxy.tunnels) {
        assert.equal(tunnel.target, `kube.test:${sim.port}`);
        assert.equal(tunnel.credentials, 'matched');
      }
      assertOpaque(proxy.tunnels);
      assertThroughProxy(sim, proxy);
      assert.equal(
        sim.requests.find((r) => r.path === RESOURCE_PATH).headers.authorization,
        `Bearer ${TOKEN}`,
      );
    });
  }

  test('https_proxy (lower case) set through process.env in the process, socks5://, read when each watch starts', async (t) => {
    const sims = [await simFor(t, { tls: true, http2: true }), await simFor(t, { tls: true, http2: true })];
    const third = await simFor(t, { tls: true, http2: true });
    const proxy = await proxyFor(t, 'socks5');
    // 0.0.0.0 is not loopback, so the environment's proxy applies; without one it still
    // reaches 127.0.0.1, with no name to resolve.
    const at = (sim) => watchOf(`https://0.0.0.0:${sim.port}`, { tlsServerName: 'localhost' });
    const results = await inChild([
      at(sims[0]),
      { ...at(sims[1]), setEnv: { https_proxy: proxy.urlWith(PROXY_USER, PROXY_PASSWORD) } },
      { ...at(third), setEnv: { https_proxy: null } },
    ]);
    assert.deepEqual(
      results.map((r) => summary(r.events)),
      [['ADDED p1'], ['ADDED p1'], ['ADDED p1']],
    );
    assert.deepEqual(
      proxy.tunnels.map((x) => [x.target, x.credentials]),
      [[`0.0.0.0:${sims[1].port}`, 'matched']],
      'only the watch started while https_proxy was set went through it',
    );
    assertThroughProxy(sims[1], proxy);
  });

  test('HTTP_PROXY carries http://kube.test (forwarded, in the clear); HTTPS_PROXY alone does not apply to http://', async (t) => {
    const sim = await simFor(t, {});
    const proxy = await proxyFor(t, 'http');
    const other = await proxyFor(t, 'http', {});
    const [viaHttpProxy] = await inChild([watchOf(`http://kube.test:${sim.port}`)], {
      HTTP_PROXY: proxy.urlWith(PROXY_USER, PROXY_PASSWORD),
      HTTPS_PROXY: other.url,
    });
    assert.deepEqual(summary(viaHttpProxy.events), ['ADDED p1']);
    assert.deepEqual(
      proxy.tunnels.map((x) => [x.protocol, x.target, x.path, x.credentials]),
      [['forward', `kube.test:${sim.port}`, RESOURCE_PATH, 'matched']],
    );
    assertThroughProxy(sim, proxy);
    const [direct] = await inChild([watchOf(`http://0.0.0.0:${sim.port}`)], { HTTPS_PROXY: other.url });
    assert.deepEqual(summary(direct.events), ['ADDED p1']);
    assert.deepEqual(other.tunnels, []);
  });

  test('loopback hosts are never proxied from the environment (a non-loopback control is)', async (t) => {
    const tlsSim = await simFor(t, { tls: true, http2: true });
    const plainSim = await simFor(t, {});
    const proxy = await proxyFor(t, 'http', {});
    const results = await inChild(
      [
        watchOf(`https://127.0.0.1:${tlsSim.port}`),
        watchOf(`https://localhost:${tlsSim.port}`),
        watchOf(`http://127.0.0.1:${plainSim.port}`),
        watchOf(`http://localhost:${plainSim.port}`),
        watchOf(`https://0.0.0.0:${tlsSim.port}`, { tlsServerName: 'localhost' }),
      ],
      { HTTPS_PROXY: proxy.url, HTTP_PROXY: proxy.url },
    );
    assert.deepEqual(
      results.map((r) => summary(r.events)),
      results.map(() => ['ADDED p1']),
    );
    assert.deepEqual(
      proxy.tunnels.map((x) => x.target),
      [`0.0.0.0:${tlsSim.port}`],
    );
  });

  test('NO_PROXY: address, CIDR, address:port and * keep the proxy out; other entries do not', async (t) => {
    const proxy = await proxyFor(t, 'http', {});
    const cases = [
      ['0.0.0.0', false],
      ['example.com, 0.0.0.0/8', false],
      ['0.0.0.0:PORT', false],
      ['*', false],
      ['0.0.0.0:1', true],
      ['10.0.0.0/8', true],
      ['kube.test,.0.0.0.0', true],
    ];
    const sims = [];
    for (const _ of cases) sims.push(await simFor(t, { tls: true, http2: true }));
    const watches = cases.map(([noProxy], i) =>
      watchOf(
        `https://0.0.0.0:${sims[i].port}`,
        { tlsServerName: 'localhost' },
        // The lower-case name for one case: Go reads both.
        {
          setEnv: {
            [i === 1 ? 'no_proxy' : 'NO_PROXY']: noProxy.replace('PORT', sims[i].port),
            ...(i === 1 && { NO_PROXY: null }),
          },
        },
      ),
    );
    const results = await inChild(watches, { HTTPS_PROXY: proxy.url });
    assert.deepEqual(
      results.map((r) => summary(r.events)),
      results.map(() => ['ADDED p1']),
    );
    const proxiedTargets = proxy.tunnels.map((x) => x.target);
    assert.deepEqual(
      proxiedTargets,
      cases.flatMap(([, proxied], i) => (proxied ? [`0.0.0.0:${sims[i].port}`] : [])),
    );
  });

  test("the cluster's proxyUrl wins over HTTPS_PROXY and NO_PROXY, even for loopback", async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const envProxy = await proxyFor(t, 'http', {});
    const socks = await proxyFor(t, 'socks5');
    const [result] = await inChild(
      [watchOf(sim.url, { proxyUrl: socks.urlWith(PROXY_USER, PROXY_PASSWORD) })],
      { HTTPS_PROXY: envProxy.url, NO_PROXY: '*' },
    );
    assert.deepEqual(summary(result.events), ['ADDED p1']);
    assert.deepEqual(envProxy.tunnels, []);
    assert.deepEqual(
      socks.tunnels.map((x) => x.target),
      [`127.0.0.1:${sim.port}`],
    );
    assertThroughProxy(sim, socks);
  });

  test('an unusable HTTPS_PROXY is SYSTEM_ERROR 0 naming the variable, never its password', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true });
    const [result] = await inChild([watchOf(`https://0.0.0.0:${sim.port}`, { tlsServerName: 'localhost' })], {
      HTTPS_PROXY: `https://${PROXY_USER}:${PROXY_PASSWORD}@127.0.0.1:3128`,
    });
    assert.deepEqual(result.events, SYSTEM_ERROR_0);
    assertNoSecret(result.warnings.join('\n'), 'the warning');
    assert.match(result.warnings[0], /HTTPS_PROXY is not a usable proxy URL: https:\/\/ proxies/);
    assert.equal(sim.requests.length, 0);
  });
});

describe('kube-watch with a kubeconfig', () => {
  /** Runs kube-watch to its end with a clean environment (no proxy variables). */
  function kubeWatch(args, cacheDir) {
    const noProxy = Object.fromEntries(PROXY_VARIABLES.map((name) => [name, undefined]));
    return runKubeWatch(args, { ...noProxy, KUBE_WATCH_CACHE_DIR: cacheDir }, { limitMs: CHILD_LIMIT_MS });
  }

  /**
   * Runs `kube-watch pods --timeout 1` to its end with a kubeconfig (written in `dir`) whose
   * cluster is `sim`, reached through `proxyUrl` and named kube.internal; asserts that nothing
   * it printed holds a secret.
   */
  async function watchPodsThrough(dir, sim, proxyUrl) {
    const config = writeKubeconfig(path.join(dir, 'config.yaml'), {
      server: `https://127.0.0.1:${sim.port}`,
      userLines: [`token: ${TOKEN}`],
      clusterLines: [`proxy-url: ${proxyUrl}`, 'tls-server-name: kube.internal'],
    });
    const r = await kubeWatch(['pods', '--kubeconfig', config, '--timeout', '1'], dir);
    assertNoSecret(r.stdout + r.stderr, 'the output');
    return r;
  }

  test('proxy-url and tls-server-name take the watch through the proxy to a kube.internal certificate', async (t) => {
    const sim = await simFor(t, { tls: true, http2: true, serverCertificate: 'kube.internal' });
    const proxy = await proxyFor(t, 'http');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kube-watch-proxy-'));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));

    const r = await watchPodsThrough(dir, sim, proxy.urlWith(PROXY_USER, PROXY_PASSWORD));
    assert.equal(r.code, 0, shown(r.stderr));
    assert.match(r.stdout, /ADDED\s+default\/p1\b/);
    assert.ok(proxy.tunnels.length >= 1, 'the watch went through the proxy');
    for (const tunnel of proxy.tunnels) {
      assert.equal(tunnel.target, `127.0.0.1:${sim.port}`);
      assert.equal(tunnel.credentials, 'matched');
    }
    assertOpaque(proxy.tunnels);
    assertThroughProxy(sim, proxy);
    // Discovery too: it goes through the native addon, so through the same proxy and name.
    const ports = new Set(proxy.tunnels.map((x) => x.upstreamPort));
    const discovery = sim.requests.filter((q) => q.path === '/api' || q.path === '/apis');
    assert.equal(discovery.length, 2, 'discovery asked /api and /apis');
    for (const request of discovery) {
      assert.ok(ports.has(request.remotePort), `${request.path} came through the proxy`);
      assert.equal(request.servername, 'kube.internal');
    }
    const watches = sim.requests.filter((q) => q.path === RESOURCE_PATH && q.query.watch);
    assert.ok(watches.length >= 1);
    for (const request of watches) {
      assert.equal(request.servername, 'kube.internal');
      assert.equal(request.headers.authorization, `Bearer ${TOKEN}`);
    }

    // A wrong password in proxy-url: the CLI fails naming the proxy, not the password.
    const failed = await watchPodsThrough(dir, sim, proxy.urlWith(PROXY_USER, WRONG_PASSWORD));
    assert.equal(failed.code, 1, shown(failed.stderr));
    assert.match(failed.stderr, /SYSTEM_ERROR/);
    assert.ok(
      failed.stderr.includes(`proxy http://${PROXY_USER}:***@127.0.0.1:${proxy.port}`),
      shown(failed.stderr),
    );
  });
});
