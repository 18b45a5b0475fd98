'use strict';
// loadKubeconfig: file resolution, every supported field, every refusal, in-cluster fallback.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { loadKubeconfig, KubeconfigError } = require('../packages/kube-watch-native/lib/kubeconfig');

const FIXTURES = path.join(__dirname, 'fixtures', 'kubeconfig');
const CONFIG = path.join(FIXTURES, 'config.yaml');
const REFUSED = path.join(FIXTURES, 'refused.yaml');
const fixture = (name) => path.join(FIXTURES, name);
const read = (name) => fs.readFileSync(fixture(name), 'utf8');

// Every secret in the fixtures carries this marker, so one check covers them all.
const SECRET_MARKER = 'SHOULD-NEVER-BE-PRINTED';

/**
 * Loads with an empty environment and a home directory that has no kubeconfig; checks that
 * `getCredential` is there and returns the rest.
 */
function load(options) {
  const { getCredential, ...rest } = loadKubeconfig({
    env: {},
    homedir: emptyHome,
    serviceAccountDir: path.join(emptyHome, 'no-sa'),
    ...options,
  });
  assert.equal(typeof getCredential, 'function');
  return rest;
}

/** Asserts that loading throws a KubeconfigError matching `pattern`, with no secret in it. */
function assertRefused(options, pattern) {
  let caught;
  assert.throws(
    () => load(options),
    (err) => {
      caught = err;
      return true;
    },
  );
  assert.ok(caught instanceof KubeconfigError, `expected a KubeconfigError, got ${caught}`);
  assert.match(caught.message, pattern);
  assert.ok(!caught.message.includes(SECRET_MARKER), `secret leaked into: ${caught.message}`);
  assert.ok(!String(caught.stack).includes(SECRET_MARKER), 'secret leaked into the stack');
  return caught;
}

let tmp;
let emptyHome;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kubeconfig-test-'));
  emptyHome = path.join(tmp, 'empty-home');
  fs.mkdirSync(emptyHome);
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('supported fields', () => {
  test('current-context with an inline CA and an inline token', () => {
    const got = load({ path: CONFIG });
    assert.deepEqual(got, {
      clusterDetails: {
        name: 'inline-ca',
        url: 'https://k8s.example.test:6443',
        authMetadata: {},
        caData: read('config.yaml').match(/certificate-authority-data: (\S+)/)[1],
      },
      credential: { type: 'bearer token', token: 'inline-token-SHOULD-NEVER-BE-PRINTED' },
      namespace: 'team-a',
      contextName: 'token-inline',
      source: 'kubeconfig',
    });
    // caData is passed through as kubeconfig has it: base64 of PEM.
    assert.match(Buffer.from(got.clusterDetails.caData, 'base64').toString(), /^-----BEGIN CERTIFICATE-----/);
  });

  test('a token that YAML would read as a number stays the exact text', () => {
    const got = load({ path: CONFIG, context: 'numeric-token' });
    assert.deepEqual(got.credential, { type: 'bearer token', token: '0x1F' });
  });

  test('tokenFile and certificate-authority resolve against the kubeconfig directory', () => {
    const got = load({ path: CONFIG, context: 'token-file' });
    assert.deepEqual(got.credential, { type: 'bearer token', token: 'file-token-SHOULD-NEVER-BE-PRINTED' });
    assert.deepEqual(got.clusterDetails, {
      name: 'file-ca',
      url: 'https://10.0.0.1:6443', // trailing slash dropped so resource paths append cleanly
      authMetadata: {},
      caFile: fixture('ca.crt'),
    });
    assert.equal(got.namespace, 'default');
  });

  test('inline client certificate and key are decoded to PEM; skip-verify is carried', () => {
    const got = load({ path: CONFIG, context: 'cert-data' });
    assert.equal(got.credential.type, 'x509 client certificate');
    assert.match(got.credential.cert, /^-----BEGIN CERTIFICATE-----\nSU5MSU5FLUNMSUVOVA==\n/);
    assert.match(got.credential.key, /^-----BEGIN PRIVATE KEY-----\nINLINE-KEY-MATERIAL/);
    assert.deepEqual(got.clusterDetails, {
      name: 'skip-verify',
      url: 'https://rancher.example.test/k8s/clusters/c-1',
      authMetadata: {},
      skipTLSVerify: true,
    });
    assert.equal(got.namespace, 'default', 'a null namespace means default');
  });

  test('client certificate and key files are read', () => {
    const got = load({ path: CONFIG, context: 'cert-files' });
    assert.deepEqual(got.credential, {
      type: 'x509 client certificate',
      cert: read('client.crt'),
      key: read('client.key'),
    });
    assert.equal(got.clusterDetails.caFile, fixture('ca.crt'));
  });

  test('relative paths follow the file that defines them, not the working directory', () => {
    assert.notEqual(process.cwd(), path.join(FIXTURES, 'nested'));
    const got = load({ path: path.join(FIXTURES, 'nested', 'config.yaml') });
    assert.equal(got.clusterDetails.caFile, fixture('ca.crt'));
    assert.equal(got.credential.cert, read('client.crt'));
    assert.equal(got.credential.key, read('client.key'));
    assert.equal(got.namespace, 'nested-ns');
    assert.equal(got.contextName, 'nested');
  });

  test('a user-less context on local plain HTTP is a kubectl proxy', () => {
    const got = load({ path: CONFIG, context: 'kubectl-proxy' });
    assert.deepEqual(got.credential, { type: 'anonymous' });
    assert.deepEqual(got.clusterDetails.authMetadata, { 'kubernetes.io/auth-provider': 'localKubectlProxy' });
    assert.equal(got.clusterDetails.url, 'http://127.0.0.1:8001');
  });

  test('a user-less context on a remote server stays plain anonymous', () => {
    const got = load({ path: CONFIG, context: 'anonymous-remote' });
    assert.deepEqual(got.credential, { type: 'anonymous' });
    assert.deepEqual(got.clusterDetails.authMetadata, {});
  });

  test('the context option overrides current-context', () => {
    assert.equal(load({ path: CONFIG }).contextName, 'token-inline');
    assert.equal(load({ path: CONFIG, context: 'cert-files' }).contextName, 'cert-files');
  });
});

describe('cluster extras for the native watcher', () => {
  const EXTRAS = fixture('cluster-extras.yaml');

  /** clusterDetails of `context` in EXTRAS. */
  const detailsOf = (context) => load({ path: EXTRAS, context }).clusterDetails;
  /** The clusterDetails of a cluster `name` at `url` with no authMetadata, and `extras`. */
  const details = (name, url, extras) => ({ name, url, authMetadata: {}, ...extras });

  test('tls-server-name becomes clusterDetails.tlsServerName', () => {
    assert.deepEqual(
      detailsOf('sni'),
      details('sni', 'https://10.0.0.2:6443', { tlsServerName: 'kubernetes.internal' }),
    );
  });

  test('proxy-url becomes clusterDetails.proxyUrl, credentials included, for the watcher to use', () => {
    assert.deepEqual(
      detailsOf('proxied'),
      details('proxied', 'https://10.0.0.3:6443', {
        proxyUrl: 'http://proxyuser:proxy-password-SHOULD-NEVER-BE-PRINTED@proxy.example.test:3128',
      }),
    );
    const socks = detailsOf('socks');
    assert.equal(socks.proxyUrl, 'socks5://127.0.0.1:1080');
    assert.equal(socks.tlsServerName, 'api.example.test');
  });
});

describe('getCredential', () => {
  test('a static token is returned again', async () => {
    const got = loadKubeconfig({ path: CONFIG, env: {}, homedir: emptyHome });
    assert.deepEqual(await got.getCredential(), got.credential);
  });

  test('tokenFile is read again on every call, so a rotated token is picked up', async () => {
    const dir = path.join(tmp, 'rotating');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'token'), 'first-SHOULD-NEVER-BE-PRINTED\n');
    const file = path.join(dir, 'config.yaml');
    fs.writeFileSync(
      file,
      'current-context: x\nclusters: [{name: c, cluster: {server: "https://h"}}]\n' +
        'users: [{name: u, user: {tokenFile: token}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n',
    );
    const got = loadKubeconfig({ path: file, env: {} });
    assert.equal(got.credential.token, 'first-SHOULD-NEVER-BE-PRINTED');
    fs.writeFileSync(path.join(dir, 'token'), 'second-SHOULD-NEVER-BE-PRINTED\n');
    assert.deepEqual(await got.getCredential(), {
      type: 'bearer token',
      token: 'second-SHOULD-NEVER-BE-PRINTED',
    });
    fs.writeFileSync(path.join(dir, 'token'), '  \n');
    await assert.rejects(got.getCredential(), (err) => {
      assert.ok(err instanceof KubeconfigError);
      assert.match(err.message, /tokenFile .*token is empty/);
      return true;
    });
    fs.rmSync(path.join(dir, 'token'));
    await assert.rejects(got.getCredential(), /tokenFile .*token cannot be read \(ENOENT\)/);
  });

  test('the in-cluster token is read again too (the kubelet rotates it)', async () => {
    const dir = path.join(tmp, 'sa-rotating');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'token'), 'sa-1');
    const got = loadKubeconfig({
      env: { KUBERNETES_SERVICE_HOST: '10.0.0.1' },
      homedir: emptyHome,
      serviceAccountDir: dir,
    });
    assert.equal(got.credential.token, 'sa-1');
    fs.writeFileSync(path.join(dir, 'token'), 'sa-2');
    assert.deepEqual(await got.getCredential(), { type: 'bearer token', token: 'sa-2' });
  });
});

describe('which file', () => {
  test('KUBECONFIG: missing entries are skipped and files merge first-wins', () => {
    const env = {
      KUBECONFIG: [path.join(tmp, 'missing.yaml'), fixture('merge-a.yaml'), fixture('merge-b.yaml')].join(
        path.delimiter,
      ),
    };
    // merge-a sets current-context from-b, which only merge-b defines.
    const got = load({ env });
    assert.equal(got.contextName, 'from-b');
    assert.equal(got.clusterDetails.url, 'https://b-only.example.test:6443');
    assert.equal(got.clusterDetails.caFile, fixture('ca.crt'));
    assert.equal(got.credential.token, 'token-b-SHOULD-NEVER-BE-PRINTED');
    assert.equal(got.namespace, 'b-ns');
    // Both files define cluster "shared": the first one (merge-a) wins.
    assert.equal(load({ env, context: 'shared-from-b' }).clusterDetails.url, 'https://a.example.test:6443');
    assert.equal(load({ env, context: 'from-a' }).credential.token, 'token-a-SHOULD-NEVER-BE-PRINTED');
  });

  test('KUBECONFIG order decides current-context', () => {
    const env = { KUBECONFIG: [fixture('merge-b.yaml'), fixture('merge-a.yaml')].join(path.delimiter) };
    const got = load({ env });
    assert.equal(got.contextName, 'from-a');
    assert.equal(got.clusterDetails.url, 'https://b.example.test:6443', 'merge-b now defines "shared" first');
  });

  test('the path option beats KUBECONFIG, and KUBECONFIG beats ~/.kube/config', () => {
    const home = path.join(tmp, 'home-with-config');
    fs.mkdirSync(path.join(home, '.kube'), { recursive: true });
    fs.copyFileSync(fixture('merge-a.yaml'), path.join(home, '.kube', 'config'));
    fs.copyFileSync(fixture('merge-b.yaml'), path.join(home, '.kube', 'merge-b.yaml'));
    const env = { KUBECONFIG: fixture('nested/config.yaml') };
    assert.equal(load({ path: CONFIG, env, homedir: home }).contextName, 'token-inline');
    assert.equal(load({ env, homedir: home }).contextName, 'nested');
    // ~/.kube/config alone: merge-a names from-b, which it does not define.
    assertRefused(
      { homedir: home },
      /context "from-b" \(the current-context of .*config\) not found .*available contexts: from-a/,
    );
    assert.equal(
      load({ homedir: home, context: 'from-a' }).clusterDetails.url,
      'https://a.example.test:6443',
    );
  });

  test('a missing path option is an error even when other configs exist', () => {
    assertRefused(
      { path: path.join(tmp, 'nope.yaml'), env: { KUBECONFIG: CONFIG } },
      /nope\.yaml does not exist/,
    );
  });

  test('no kubeconfig and not in a cluster: the error says where it looked', () => {
    const err = assertRefused({}, /no kubeconfig found/);
    assert.ok(err.message.includes(path.join(emptyHome, '.kube', 'config')), err.message);
    assert.match(err.message, /KUBERNETES_SERVICE_HOST is not set/);

    const env = { KUBECONFIG: [path.join(tmp, 'a'), path.join(tmp, 'b')].join(path.delimiter) };
    const err2 = assertRefused({ env }, /no kubeconfig found: looked at KUBECONFIG/);
    assert.ok(
      err2.message.includes(path.join(tmp, 'a')) && err2.message.includes(path.join(tmp, 'b')),
      err2.message,
    );
  });
});

describe('in-cluster fallback', () => {
  let saDir;
  before(() => {
    saDir = path.join(tmp, 'serviceaccount');
    fs.mkdirSync(saDir);
    fs.writeFileSync(path.join(saDir, 'token'), '  sa-token-SHOULD-NEVER-BE-PRINTED\n');
    fs.writeFileSync(path.join(saDir, 'ca.crt'), read('ca.crt'));
    fs.writeFileSync(path.join(saDir, 'namespace'), 'backstage\n');
  });

  test('service host, port, token, CA and namespace come from the pod', () => {
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '6443' };
    assert.deepEqual(load({ env, serviceAccountDir: saDir }), {
      clusterDetails: {
        name: 'in-cluster',
        url: 'https://10.96.0.1:6443',
        authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount' },
        caFile: path.join(saDir, 'ca.crt'),
      },
      credential: { type: 'bearer token', token: 'sa-token-SHOULD-NEVER-BE-PRINTED' },
      namespace: 'backstage',
      contextName: 'in-cluster',
      source: 'in-cluster',
    });
  });

  test('port defaults to 443, IPv6 hosts are bracketed, namespace defaults to default', () => {
    const dir = path.join(tmp, 'sa-no-namespace');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'token'), 'tok');
    const got = load({ env: { KUBERNETES_SERVICE_HOST: 'fd00::1' }, serviceAccountDir: dir });
    assert.equal(got.clusterDetails.url, 'https://[fd00::1]:443');
    assert.equal(got.namespace, 'default');
  });

  test('a kubeconfig, when present, wins over in-cluster', () => {
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBECONFIG: CONFIG };
    assert.equal(load({ env, serviceAccountDir: saDir }).source, 'kubeconfig');
  });

  test('without a mounted token there is no fallback', () => {
    assertRefused(
      { env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, serviceAccountDir: path.join(tmp, 'absent') },
      /no kubeconfig found.*absent.token does not exist/,
    );
  });

  test('asking for a context in-cluster is an error', () => {
    assertRefused(
      { env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, serviceAccountDir: saDir, context: 'prod' },
      /context "prod" was requested, but no kubeconfig file exists/,
    );
  });
});

describe('refusals (never leaking secrets)', () => {
  const cases = [
    ['oidc', /user "oidc-user" uses the "oidc" auth-provider/],
    ['gcp', /user "gcp-user" uses the "gcp" auth-provider/],
    ['basic', /user "basic-user" uses basic authentication/],
    ['cert-no-key', /user "cert-no-key" has a client certificate but no client key/],
    ['key-no-cert', /user "key-no-cert" has a client key but no client certificate/],
    ['token-and-cert', /user "token-and-cert" sets both a bearer token and a client certificate/],
    ['impersonate', /user "impersonator" sets as \(impersonation\)/],
    [
      'bad-proxy',
      /context "bad-proxy": cluster "bad-proxy": proxy-url must be an http:\/\/ or socks5:\/\/ URL \(it is ftp:\/\/…\)/,
    ],
    [
      'tls-proxy',
      /context "tls-proxy": cluster "tls-proxy": proxy-url is an https:\/\/ proxy .* use http:\/\//,
    ],
    ['unparsable-proxy', /context "unparsable-proxy": cluster "unparsable-proxy": proxy-url is not a URL$/],
    ['missing-cluster', /context "missing-cluster" refers to cluster "nowhere", which .* does not define/],
    ['missing-user', /context "missing-user" refers to user "nobody"/],
    ['missing-token-file', /tokenFile .*does-not-exist\.txt cannot be read \(ENOENT\)/],
  ];
  for (const [context, pattern] of cases) {
    test(context, () => assertRefused({ path: REFUSED, context }, pattern));
  }

  test('an unknown context is named, with the available ones listed', () => {
    const err = assertRefused(
      { path: CONFIG, context: 'prod' },
      /context "prod" not found in .*config\.yaml/,
    );
    assert.match(
      err.message,
      /available contexts: token-inline, numeric-token, token-file, cert-data, cert-files, kubectl-proxy, anonymous-remote/,
    );
  });

  test('no current-context and no context option', () => {
    assertRefused(
      { path: fixture('no-current-context.yaml') },
      /has no current-context; choose one with --context NAME \(available contexts: only-one\)/,
    );
  });

  test('invalid YAML is reported by position without quoting the file', () => {
    assertRefused(
      { path: fixture('broken.yaml') },
      /broken\.yaml is not valid YAML \([A-Z_]+ at line 7, column \d+\)/,
    );
  });

  test('bad inline data and non-mapping files', () => {
    const dir = path.join(tmp, 'bad');
    fs.mkdirSync(dir);
    const write = (name, text) => {
      fs.writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    assertRefused({ path: write('list.yaml', '- a\n- b\n') }, /is not a YAML mapping/);
    assertRefused(
      {
        path: write(
          'bad-ca.yaml',
          'current-context: x\nclusters: [{name: c, cluster: {server: "https://h", certificate-authority-data: bm90LXBlbQ==}}]\ncontexts: [{name: x, context: {cluster: c}}]\n',
        ),
      },
      /cluster "c": certificate-authority-data is not base64 of a PEM certificate/,
    );
    assertRefused(
      {
        path: write(
          'bad-key.yaml',
          'current-context: x\nclusters: [{name: c, cluster: {server: "https://h"}}]\n' +
            `users: [{name: u, user: {client-certificate: ${fixture('client.crt')}, client-key-data: ${Buffer.from('raw-key-SHOULD-NEVER-BE-PRINTED').toString('base64')}}}]\n` +
            'contexts: [{name: x, context: {cluster: c, user: u}}]\n',
        ),
      },
      /user "u": client-key-data is not base64 of a PEM block/,
    );
    assertRefused(
      {
        path: write(
          'bad-server.yaml',
          'current-context: x\nclusters: [{name: c, cluster: {server: "ftp://h"}}]\ncontexts: [{name: x, context: {cluster: c}}]\n',
        ),
      },
      /server "ftp:\/\/h" must be an http:\/\/ or https:\/\/ URL/,
    );
    assertRefused(
      {
        path: write(
          'missing-ca-file.yaml',
          'current-context: x\nclusters: [{name: c, cluster: {server: "https://h", certificate-authority: nope.crt}}]\ncontexts: [{name: x, context: {cluster: c}}]\n',
        ),
      },
      /certificate-authority file .*bad.nope\.crt does not exist/,
    );
  });
});
