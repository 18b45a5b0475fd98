'use strict';
// Issue 49: Backstage's tooling finds the packages. The packed kube-watch-native-backstage (with
// the packed kube-watch-native, its platform package and kube-watch-native-protocol) installed as
// a backend's dependency is loaded by `backend.packages: all` with no `backend.add` line for it,
// and the entity's tab is answered from its informers (the live mark is its alone).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn, execFileSync } = require('node:child_process');
const { packMain, packPlatform } = require('../packages/kube-watch-native/scripts/packaging');
const { startCluster, postEntity, LIVE_SVC } = require('../testbed/live-helpers');
const { until } = require('../testbed/wait');
const { LIVE_HEADER } = require('kube-watch-native-protocol');
const { NPM: npm, HOST: platform, NO_HOST, binaryName, packageName } = require('./pkg-helpers');

const repo = path.join(__dirname, '..');

/** `tarball` unpacked as `node_modules/<name>` of `dir`, as npm would have installed it. */
function install(dir, name, tarball) {
  const into = path.join(dir, 'node_modules', name);
  fs.mkdirSync(into, { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', into, '--strip-components=1']);
}

/** `npm pack` of the workspace package at packages/`dir` into `out`: the tarball's path. */
function pack(dir, out) {
  const [packed] = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', out], {
      cwd: path.join(repo, 'packages', dir),
      encoding: 'utf8',
    }),
  );
  return path.join(out, packed.filename);
}

test(
  'backend.packages: all loads the packed kube-watch-native-backstage with no backend.add line, and it answers the tab',
  { timeout: 120_000, skip: NO_HOST },
  async (t) => {
    // Inside the repository, so that the Backstage packages resolve from its node_modules; the
    // module and the watcher resolve from the backend's own node_modules, unpacked from tarballs.
    const outputs = path.join(__dirname, 'output');
    fs.mkdirSync(outputs, { recursive: true });
    const backendDir = fs.mkdtempSync(path.join(outputs, 'discovery-'));
    t.after(() => fs.rmSync(backendDir, { recursive: true, force: true }));
    const tarballs = path.join(backendDir, 'tarballs');
    fs.mkdirSync(tarballs);
    install(backendDir, 'kube-watch-native', packMain(tarballs).file);
    install(
      backendDir,
      packageName(),
      packPlatform(platform, tarballs, path.join(repo, 'packages', 'kube-watch-native', binaryName())).file,
    );
    install(backendDir, 'kube-watch-native-protocol', pack('protocol', tarballs));
    install(backendDir, 'kube-watch-native-backstage', pack('backstage', tarballs));
    fs.writeFileSync(
      path.join(backendDir, 'package.json'),
      JSON.stringify({
        name: 'backend',
        private: true,
        dependencies: { 'kube-watch-native-backstage': '*', '@backstage/plugin-kubernetes-node': '*' },
      }),
    );

    const sim = await startCluster(t);
    // The backend: the Kubernetes and Signals plugins added as an app's backend adds them, the
    // module only through discovery (testbed/live-helpers.js, `native: 'discovered'`).
    fs.writeFileSync(
      path.join(backendDir, 'backend.js'),
      `const { startLiveBackend } = require(${JSON.stringify(path.join(repo, 'testbed', 'live-helpers'))});
startLiveBackend({ url: process.env.SIM_URL }, { native: 'discovered' }).then(
  (b) => console.log(JSON.stringify({ port: b.port })),
  (err) => { console.error(err); process.exit(1); },
);`,
    );
    const child = spawn(process.execPath, [path.join(backendDir, 'backend.js')], {
      cwd: backendDir,
      env: { ...process.env, SIM_URL: sim.url, LIVE_TEST_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    t.after(() => child.kill('SIGKILL'));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const { port } = await until(
      () => {
        const line = out.split('\n').find((l) => l.startsWith('{"port"'));
        return line && JSON.parse(line);
      },
      { ms: 60_000, what: `the backend to start:\n${out}` },
    );
    assert.match(out, /Detected: kube-watch-native-backstage/, 'found by discovery');
    const answer = await until(
      async () => {
        const res = await postEntity(`http://127.0.0.1:${port}`, 'mock-user-token', LIVE_SVC);
        return res.headers.get(LIVE_HEADER) === '1' && (await res.json());
      },
      { ms: 20_000, what: 'a live answer, which only the module gives' },
    );
    const pods = answer.items[0].resources.find((r) => r.type === 'pods').resources;
    assert.deepEqual(
      pods.map((p) => p.metadata.name),
      ['live-svc-1'],
    );
    // The module the backend loaded is the packed one, not the workspace's.
    assert.ok(
      fs.existsSync(path.join(backendDir, 'node_modules', 'kube-watch-native-backstage', 'index.js')),
    );
  },
);
