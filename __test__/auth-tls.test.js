'use strict';
// Auth and TLS: bearer tokens, x509 client certificates over mutual TLS, caData and caFile,
// wrong CAs, skipTLSVerify, refused providers, the anonymous credential, in-cluster service
// accounts, redirects, and client pooling over HTTP/2.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const certs = require('../packages/kube-watch-native/sim/certs');
const native = require('../packages/kube-watch-native/lib/native');
const { paramsFor, collect, watcherWithLogger, pod, TOKEN } = require('./helpers');

const b64 = (pem) => Buffer.from(pem).toString('base64');
const resourcePath = '/api/v1/namespaces/default/pods';
const errorEvent = (errorType, statusCode, rp = resourcePath) => ({
  type: 'ERROR',
  error: { errorType, statusCode, resourcePath: rp },
});

async function withSim(options, fn) {
  const sim = await createSimulator(options);
  try {
    sim.create('pods', pod('p1'));
    return await fn(sim);
  } finally {
    await sim.close();
  }
}

async function firstEvents(sim, paramOverrides, { count = 1 } = {}) {
  const { watcher, logger } = watcherWithLogger();
  const events = await collect(
    watcher.watchResource(paramsFor(sim, paramOverrides), { namespace: 'default' }),
    {
      count,
    },
  );
  return { events, logger };
}

test('bearer token goes in the Authorization header; a wrong one is UNAUTHORIZED 401', () =>
  withSim({ token: TOKEN }, async (sim) => {
    const { events } = await firstEvents(sim, {});
    assert.equal(events[0].object.metadata.name, 'p1');
    assert.equal(sim.requests.at(-1).headers.authorization, `Bearer ${TOKEN}`);

    const { events: refused, logger } = await firstEvents(sim, {
      credential: { type: 'bearer token', token: 'wrong-token-value' },
    });
    assert.deepEqual(refused, [errorEvent('UNAUTHORIZED_ERROR', 401)]);
    assert.match(logger.warnings()[0], /HTTP 401/);
    assert.doesNotMatch(logger.warnings().join('\n'), /wrong-token-value/);
  }));

test('x509 client certificate over mutual TLS with caData', () =>
  withSim({ tls: true, requireClientCert: true, token: TOKEN }, async (sim) => {
    const { events } = await firstEvents(sim, {
      clusterDetails: { caData: b64(certs.ca) },
      credential: { type: 'x509 client certificate', cert: certs.client, key: certs.clientKey },
    });
    assert.equal(events[0].object.metadata.name, 'p1');
    const request = sim.requests.at(-1);
    assert.equal(request.clientCertCN, 'test-user');
    assert.equal(request.headers.authorization, undefined, 'no bearer header with a client certificate');
  }));

test('a client certificate the server does not trust fails as SYSTEM_ERROR 0', () =>
  withSim({ tls: true, requireClientCert: true, token: TOKEN }, async (sim) => {
    const { events, logger } = await firstEvents(sim, {
      clusterDetails: { caData: b64(certs.ca) },
      credential: { type: 'x509 client certificate', cert: certs.otherClient, key: certs.otherClientKey },
    });
    assert.deepEqual(events, [errorEvent('SYSTEM_ERROR', 0)]);
    const log = logger.warnings().join('\n');
    assert.match(log, /cluster 'sim'/);
    for (const keyLine of certs.otherClientKey
      .split('\n')
      .filter((l) => l.length > 20 && !l.startsWith('-'))) {
      assert.ok(!log.includes(keyLine), 'no key material in the log');
    }
  }));

test('caFile is read from disk', () =>
  withSim({ tls: true, token: TOKEN }, async (sim) => {
    const { events } = await firstEvents(sim, { clusterDetails: { caFile: certs.paths.ca } });
    assert.equal(events[0].object.metadata.name, 'p1');
  }));

test('a wrong CA fails as SYSTEM_ERROR 0 before any request reaches the server', () =>
  withSim({ tls: true, token: TOKEN }, async (sim) => {
    for (const clusterDetails of [{ caData: b64(certs.otherCa) }, {}]) {
      const before = sim.requests.length;
      const { events, logger } = await firstEvents(sim, { clusterDetails });
      assert.deepEqual(events, [errorEvent('SYSTEM_ERROR', 0)]);
      assert.equal(sim.requests.length, before, 'no HTTP request was sent');
      assert.match(logger.warnings()[0], /certificate|UnknownIssuer|invalid peer/i);
    }
  }));

test('a missing caFile or undecodable caData is SYSTEM_ERROR 0 with a warning naming it', () =>
  withSim({ tls: true, token: TOKEN }, async (sim) => {
    let { events, logger } = await firstEvents(sim, { clusterDetails: { caFile: '/nonexistent/ca.pem' } });
    assert.deepEqual(events, [errorEvent('SYSTEM_ERROR', 0)]);
    assert.match(logger.warnings()[0], /cannot read caFile \/nonexistent\/ca\.pem/);
    ({ events, logger } = await firstEvents(sim, { clusterDetails: { caData: '%%% not base64' } }));
    assert.deepEqual(events, [errorEvent('SYSTEM_ERROR', 0)]);
    assert.match(logger.warnings()[0], /caData is not base64/);
  }));

test('skipTLSVerify accepts a server certificate from an unknown CA, for that cluster only', () =>
  withSim({ tls: true, token: TOKEN }, async (sim) => {
    const { events } = await firstEvents(sim, { clusterDetails: { skipTLSVerify: true } });
    assert.equal(events[0].object.metadata.name, 'p1');
    const { events: strict } = await firstEvents(sim, { clusterDetails: { skipTLSVerify: false } });
    assert.deepEqual(strict, [errorEvent('SYSTEM_ERROR', 0)]);
  }));

test('client-side auth providers are refused with BAD_REQUEST and a warning, without a request', () =>
  withSim({ token: TOKEN }, async (sim) => {
    for (const provider of ['google', 'oidc', 'aks']) {
      const before = sim.requests.length;
      const { events, logger } = await firstEvents(sim, {
        clusterDetails: { authMetadata: { 'kubernetes.io/auth-provider': provider } },
      });
      assert.deepEqual(events, [errorEvent('BAD_REQUEST', 400)]);
      assert.equal(sim.requests.length, before);
      assert.match(logger.warnings()[0], new RegExp(`'${provider}'`));
    }
  }));

test('the anonymous credential is refused unless the cluster is a kubectl proxy', () =>
  withSim({}, async (sim) => {
    const before = sim.requests.length;
    const anonymous = { credential: { type: 'anonymous' } };
    const { events } = await firstEvents(sim, anonymous);
    assert.deepEqual(events, [errorEvent('UNAUTHORIZED_ERROR', 401)]);
    assert.equal(sim.requests.length, before, 'no request');

    const { events: proxied } = await firstEvents(sim, {
      ...anonymous,
      clusterDetails: { authMetadata: { 'kubernetes.io/auth-provider': 'localKubectlProxy' } },
    });
    assert.equal(proxied[0].object.metadata.name, 'p1');
    assert.equal(sim.requests.at(-1).headers.authorization, undefined);
  }));

test('in-cluster: serviceAccount without a token in authMetadata uses the service env and CA', () =>
  withSim({ tls: true, token: TOKEN }, async (sim) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kwn-sa-'));
    fs.copyFileSync(certs.paths.ca, path.join(dir, 'ca.crt'));
    const saved = { host: process.env.KUBERNETES_SERVICE_HOST, port: process.env.KUBERNETES_SERVICE_PORT };
    process.env.KUBERNETES_SERVICE_HOST = '127.0.0.1';
    process.env.KUBERNETES_SERVICE_PORT = String(sim.port);
    try {
      const { NativeKubernetesWatcher } = require('kube-watch-native');
      const watcher = new NativeKubernetesWatcher({
        logger: { warn() {}, error() {} },
        serviceAccountDir: dir,
      });
      const params = paramsFor(sim, {
        // The configured URL is wrong on purpose: in-cluster must not use it.
        clusterDetails: {
          url: 'https://192.0.2.1:1',
          authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount' },
        },
      });
      const [event] = await collect(watcher.watchResource(params, { namespace: 'default' }), { count: 1 });
      assert.equal(event.object.metadata.name, 'p1');
      assert.equal(sim.requests.at(-1).headers.authorization, `Bearer ${TOKEN}`);
    } finally {
      for (const [key, value] of Object.entries({
        KUBERNETES_SERVICE_HOST: saved.host,
        KUBERNETES_SERVICE_PORT: saved.port,
      })) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }));

test('redirects are not followed: the 3xx is the ERROR and the token goes nowhere else', () =>
  withSim({ token: TOKEN }, async (elsewhere) => {
    await withSim({ token: TOKEN }, async (sim) => {
      sim.nextWatchFault({
        status: 302,
        headers: { location: `${elsewhere.url}/api/v1/pods?watch=true` },
        body: '',
      });
      const { events } = await firstEvents(sim, {});
      assert.deepEqual(events, [errorEvent('UNKNOWN_ERROR', 302)]);
      assert.equal(elsewhere.requests.length, 0, 'the redirect target saw no request');
    });
  }));

test('watches to one cluster with one TLS identity share one HTTP/2 connection', () =>
  withSim({ tls: true, http2: true, token: TOKEN }, async (sim) => {
    const unique = `https://localhost:${sim.port}`; // a fresh pool key for this test
    const controller = new AbortController();
    const { watcher } = watcherWithLogger();
    const gens = Array.from({ length: 5 }, () =>
      watcher.watchResource(paramsFor(sim, { clusterDetails: { url: unique, caData: b64(certs.ca) } }), {
        namespace: 'default',
        signal: controller.signal,
      }),
    );
    const firsts = await Promise.all(gens.map((g) => g.next()));
    assert.ok(firsts.every((r) => r.value.object.metadata.name === 'p1'));
    const pooled = watcher.stats().clusters.filter((c) => c.origin === unique);
    assert.equal(pooled.length, 1, 'one pool entry for the origin');
    assert.deepEqual(
      pooled[0].connections.map((c) => [c.streams, c.streamLimit]),
      [[5, 100]],
      'five streams on one connection that knows the server limit',
    );
    const watchRequests = sim.requests.slice(-5);
    assert.ok(
      watchRequests.every((r) => r.http2),
      'HTTP/2 was negotiated',
    );
    assert.equal(
      new Set(watchRequests.map((r) => r.socketId)).size,
      1,
      'all five streams share one connection',
    );
    controller.abort();
    for (const g of gens) assert.deepEqual(await g.next(), { done: true, value: undefined });
  }));
