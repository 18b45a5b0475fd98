'use strict';
// Exec credential plugins in loadKubeconfig: the plugin scripts in fixtures/exec/plugins
// stand for `aws eks get-token`, `gke-gcloud-auth-plugin`, `kubelogin` and friends.

const { test, describe, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { loadKubeconfig, KubeconfigError } = require('../packages/kube-watch-native/lib/kubeconfig');
const { ExecPlugin, parseExecConfig } = require('../packages/kube-watch-native/lib/exec-credential');
const { certs } = require('../packages/kube-watch-native/sim');

const FIXTURES = path.join(__dirname, 'fixtures', 'exec');
const CONFIG = path.join(FIXTURES, 'config.yaml');
const SECRET_MARKER = 'SHOULD-NEVER-BE-PRINTED';
// The plugins are `#!/usr/bin/env node` scripts: the node running the tests must be on PATH.
const PATH = [path.dirname(process.execPath), process.env.PATH].join(path.delimiter);

let tmp;
let stateDir;
before(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'exec-credential-test-'));
});
after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fresh state directory for the token plugin's run log and token list. */
function freshState() {
  stateDir = fs.mkdtempSync(path.join(tmp, 'state-'));
  return stateDir;
}

function runs() {
  const file = path.join(stateDir, 'runs.jsonl');
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

function load(context, { env, ...options } = {}) {
  return loadKubeconfig({
    path: CONFIG,
    context,
    env: { PATH, EXEC_STATE_DIR: stateDir, ...env },
    terminal: false,
    ...options,
  });
}

/** Loading throws a KubeconfigError matching `pattern` that holds no secret; returns it. */
function assertFails(context, pattern, options) {
  let caught;
  assert.throws(
    () => load(context, options),
    (err) => {
      caught = err;
      return true;
    },
  );
  assert.ok(caught instanceof KubeconfigError, `expected a KubeconfigError, got ${caught && caught.stack}`);
  assert.match(caught.message, pattern);
  assert.ok(!String(caught.stack).includes(SECRET_MARKER), `secret leaked into: ${caught.message}`);
  return caught;
}

describe('a plugin that works', () => {
  test('v1: token, args, env, KUBERNETES_EXEC_INFO with the cluster, CA, server name and extension', () => {
    freshState();
    const got = load('token-v1');
    assert.deepEqual(got.credential, { type: 'bearer token', token: 'exec-token-0-SHOULD-NEVER-BE-PRINTED' });
    const [run] = runs();
    assert.deepEqual(run.argv, ['get-token', '--cluster-name', 'prod']);
    assert.equal(run.pluginSecretSet, true, 'the env entries of the exec config reach the plugin');
    assert.equal(run.stdinIsTTY, false);
    assert.deepEqual(run.info, {
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      spec: {
        interactive: false,
        cluster: {
          server: 'https://k8s.example.test:6443',
          'tls-server-name': 'api.internal.example.test',
          // The kubeconfig names a CA file: the plugin gets its contents, base64, as client-go sends them.
          'certificate-authority-data': fs
            .readFileSync(path.join(__dirname, 'fixtures', 'kubeconfig', 'ca.crt'))
            .toString('base64'),
          // Typed as YAML has them, not as strings.
          config: { audience: 'kube-watch-test', retries: 3, enabled: true },
        },
      },
    });
  });

  test('v1beta1: interactiveMode defaults to IfAvailable; no cluster info unless asked', () => {
    freshState();
    assert.notEqual(process.cwd(), FIXTURES);
    // `plugins/token.js` (a path with a separator) is relative to the kubeconfig, not the cwd.
    const got = load('token-v1beta1');
    assert.equal(got.credential.token, 'exec-token-0-SHOULD-NEVER-BE-PRINTED');
    assert.deepEqual(runs()[0].info, {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      spec: { interactive: false },
    });
  });

  test('a bare command is looked up on PATH', () => {
    freshState();
    const bin = fs.mkdtempSync(path.join(tmp, 'bin-'));
    fs.copyFileSync(
      path.join(FIXTURES, 'plugins', 'token.js'),
      path.join(bin, 'kube-watch-test-token-plugin'),
    );
    fs.chmodSync(path.join(bin, 'kube-watch-test-token-plugin'), 0o755);
    assertFails('on-path', /exec plugin "kube-watch-test-token-plugin" was not found on PATH/);
    const got = load('on-path', { env: { PATH: [bin, PATH].join(path.delimiter) } });
    assert.equal(got.credential.type, 'bearer token');
    assert.equal(runs().length, 1);
  });

  test('client certificate and key from the plugin', () => {
    const got = load('cert');
    assert.deepEqual(got.credential, {
      type: 'x509 client certificate',
      cert: certs.client,
      key: certs.clientKey,
    });
  });
});

describe('caching and renewal', () => {
  test('without expirationTimestamp the credential is kept for the process; forceRefresh runs again', async () => {
    freshState();
    const got = load('token-v1');
    assert.deepEqual(await got.getCredential(), got.credential);
    assert.deepEqual(await got.getCredential(), got.credential);
    assert.equal(runs().length, 1, 'getCredential used the cached credential');
    const refreshed = await got.getCredential({ forceRefresh: true });
    assert.equal(refreshed.token, 'exec-token-1-SHOULD-NEVER-BE-PRINTED');
    assert.equal(runs().length, 2);
    assert.deepEqual(await got.getCredential(), refreshed, 'the new one is cached in turn');
    assert.equal(runs().length, 2);
  });

  test('an expiring credential is renewed once a fifth of its lifetime is left, before it expires', async () => {
    freshState();
    // The plugin dates its token by the wall clock; the cache's clock is held still here and
    // moved by hand, so "cached, then renewed before expiry" is the order whatever the load.
    let clock = Date.now();
    const plugin = new ExecPlugin(
      parseExecConfig(
        {
          apiVersion: 'client.authentication.k8s.io/v1',
          command: './plugins/token.js',
          interactiveMode: 'Never',
        },
        { what: 'user "u"', dir: FIXTURES, bool: () => false, makeError: (m) => new KubeconfigError(m) },
      ),
      {
        contextName: 'renewal',
        env: { PATH, EXEC_STATE_DIR: stateDir, TOKEN_TTL_MS: '10000' },
        terminal: false,
        makeError: (m) => new KubeconfigError(m),
        now: () => clock,
      },
    );
    const storedAt = clock;
    assert.equal((await plugin.get()).token, 'exec-token-0-SHOULD-NEVER-BE-PRINTED');
    const expiresAt = Date.parse(runs()[0].expirationTimestamp);
    assert.ok(expiresAt - storedAt >= 10_000, 'the plugin gave a ten-second token');
    const renewAt = expiresAt - (expiresAt - storedAt) / 5;
    clock = Math.floor(renewAt) - 1;
    assert.equal((await plugin.get()).token, 'exec-token-0-SHOULD-NEVER-BE-PRINTED', 'still cached');
    assert.equal(runs().length, 1);
    clock = Math.ceil(renewAt);
    assert.ok(clock < expiresAt);
    assert.equal((await plugin.get()).token, 'exec-token-1-SHOULD-NEVER-BE-PRINTED', 'renewed before expiry');
    assert.equal(runs().length, 2);
  });

  test('callers asking at the same time share one run', async () => {
    freshState();
    const got = load('token-v1');
    const all = await Promise.all([1, 2, 3, 4].map(() => got.getCredential({ forceRefresh: true })));
    assert.equal(runs().length, 2, 'one at load, one for the four concurrent refreshes');
    for (const c of all) assert.equal(c.token, 'exec-token-1-SHOULD-NEVER-BE-PRINTED');
  });
});

describe('a plugin that does not work', () => {
  test('fails: context, command, exit code and its last stderr line; never stdout or args', () => {
    const err = assertFails(
      'fail',
      /^context "fail": exec plugin "\.\/plugins\/fail\.js" exited with code 3: error: the refresh token has expired; run `login` again$/,
    );
    assert.ok(!err.message.includes('partial-output'));
  });

  test('hangs: stopped after the time limit, synchronously and asynchronously', async () => {
    let started = Date.now();
    assertFails(
      'hang',
      /context "hang": exec plugin "\.\/plugins\/hang\.js" did not finish within 0\.5s and was stopped/,
      {
        execTimeoutMs: 500,
      },
    );
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);

    const config = parseExecConfig(
      {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: './plugins/hang.js',
        interactiveMode: 'Never',
      },
      { what: 'user "u"', dir: FIXTURES, bool: () => false, makeError: (m) => new KubeconfigError(m) },
    );
    const plugin = new ExecPlugin(config, {
      contextName: 'async-hang',
      env: { PATH },
      terminal: false,
      timeoutMs: 500,
      makeError: (m) => new KubeconfigError(m),
    });
    started = Date.now();
    await assert.rejects(
      plugin.get(),
      /context "async-hang": exec plugin "\.\/plugins\/hang\.js" did not finish within 0\.5s/,
    );
    assert.ok(Date.now() - started < 3000, `took ${Date.now() - started} ms`);
  });

  const garbage = [
    ['garbage-text', /printed something that is not an ExecCredential \(not JSON, \d+ bytes\)$/],
    ['garbage-json', /printed something that is not an ExecCredential \(its kind is not ExecCredential\)$/],
    [
      'garbage-version',
      /answered in apiVersion "client\.authentication\.k8s\.io\/v1alpha1", but the kubeconfig asks for client\.authentication\.k8s\.io\/v1$/,
    ],
    ['garbage-empty', /returned neither a token nor clientCertificateData and clientKeyData$/],
    ['garbage-expiry', /returned an expirationTimestamp that is not an RFC 3339 time$/],
  ];
  for (const [context, pattern] of garbage) {
    test(`${context}: named, without the output`, () => {
      const err = assertFails(context, pattern);
      assert.match(err.message, new RegExp(`^context "${context}": exec plugin "\\./plugins/garbage\\.js" `));
    });
  }

  test('missing command: the install hint is shown; args and env values are not', () => {
    const err = assertFails(
      'missing',
      /^context "missing": exec plugin "kube-watch-test-no-such-plugin" was not found on PATH\n\n.*not installed\.\nkube-watch-test-no-such-plugin is needed for this context\.\nInstall it with: pip install kube-watch-test-plugin$/s,
    );
    assert.ok(!err.message.includes('get-token') && !err.message.includes('AWS_SECRET'), err.message);
  });

  test('missing relative command: the resolved path is named', () => {
    assertFails(
      'missing-relative',
      new RegExp(
        `was not found \\(${path.join(FIXTURES, 'plugins', 'not-there.js').replace(/[.]/g, '\\.')}, relative to the kubeconfig file\\)`,
      ),
    );
  });

  test('bad exec configurations', () => {
    assertFails('exec-and-token', /user "exec-and-token" sets both an exec plugin and a token/);
    assertFails(
      'old-version',
      /exec apiVersion "client\.authentication\.k8s\.io\/v1alpha1" must be client\.authentication\.k8s\.io\/v1 or/,
    );
    assertFails('v1-no-mode', /exec interactiveMode must be set \(Never, IfAvailable or Always\)/);
  });
});

describe('interactiveMode', () => {
  test('Always without a terminal fails clearly, without running the plugin', () => {
    freshState();
    assertFails(
      'always',
      /exec plugin "\.\/plugins\/token\.js" needs a terminal \(interactiveMode: Always\), but standard input is not a terminal/,
    );
    assert.equal(runs().length, 0);
  });

  // A real pseudo-terminal from script(1): loads `context` with the terminal found as usual
  // (from stdin), checks this program's stdin was the terminal, and returns the plugin's run.
  const hasScript = spawnSync('script', ['--version'], { stdio: 'ignore' }).status === 0;
  const noScript = !hasScript && 'script(1) not installed';
  function runInTerminal(context) {
    freshState();
    const program = [
      `const { loadKubeconfig } = require(${JSON.stringify(path.join(__dirname, '..', 'packages', 'kube-watch-native', 'lib', 'kubeconfig'))});`,
      `const got = loadKubeconfig({ path: ${JSON.stringify(CONFIG)}, context: ${JSON.stringify(context)},`,
      `  env: { PATH: ${JSON.stringify(PATH)}, EXEC_STATE_DIR: ${JSON.stringify(stateDir)} } });`,
      `process.stdout.write(got.credential.type + (process.stdin.isTTY ? ' tty' : ' no-tty'));`,
    ].join('\n');
    const programFile = path.join(stateDir, 'program.js');
    fs.writeFileSync(programFile, program);
    const r = spawnSync('script', ['-qec', `${process.execPath} ${programFile}`, '/dev/null'], {
      encoding: 'utf8',
      timeout: 15_000,
    });
    assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /bearer token tty/, `${context}: loaded with a terminal on stdin`);
    const all = runs();
    assert.equal(all.length, 1);
    return all[0];
  }

  test('Never keeps the plugin off the terminal even when there is one', { skip: noScript }, () => {
    const run = runInTerminal('token-v1');
    assert.equal(run.stdinIsTTY, false, "the plugin's stdin is not the terminal");
    assert.equal(run.stderrIsTTY, false, "the plugin's stderr is not the terminal");
    assert.equal(run.info.spec.interactive, false);
  });

  test('Always and IfAvailable pass a real terminal through', { skip: noScript }, () => {
    for (const context of ['always', 'token-v1beta1']) {
      const run = runInTerminal(context);
      assert.equal(run.stdinIsTTY, true, `${context}: the plugin's stdin is the terminal`);
      assert.equal(run.stderrIsTTY, true, `${context}: the plugin's stderr is the terminal`);
      assert.equal(run.info.spec.interactive, true);
    }
  });
});
