'use strict';
// Packaging: `npm pack` ships the prebuilt binary, and the tarball installs into another
// project (offline, from npm's cache) where `require('kube-watch-native')` watches for real.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { createSimulator } = require('../sim');
const { platformSuffix } = require('../lib/platform');

const root = path.join(__dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

test(
  'npm pack ships the binary, and the tarball installs and works in another project',
  { timeout: 120_000 },
  async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'kwn-pack-'));
    const sim = await createSimulator({});
    try {
      const packed = JSON.parse(
        execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], { cwd: root }),
      );
      const files = packed[0].files.map((f) => f.path);
      const binary = `kube-watch-native.${platformSuffix()}.node`;
      assert.ok(files.includes(binary), `the tarball ships ${binary}`);
      for (const needed of [
        'index.js',
        'index.d.ts',
        'lib/watcher.js',
        'bin/kube-watch.js',
        'src/lib.rs',
        'Cargo.toml',
      ]) {
        assert.ok(files.includes(needed), `the tarball ships ${needed}`);
      }
      assert.ok(!files.some((f) => f.startsWith('__test__/') || f.startsWith('target/')));

      const project = path.join(work, 'consumer');
      fs.mkdirSync(project);
      fs.writeFileSync(
        path.join(project, 'package.json'),
        JSON.stringify({ name: 'consumer', private: true }),
      );
      const output = execFileSync(
        npm,
        ['install', '--offline', '--no-audit', '--no-fund', path.join(work, packed[0].filename)],
        { cwd: project, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
      assert.ok(fs.existsSync(path.join(project, 'node_modules/kube-watch-native', binary)));
      assert.doesNotMatch(output, /cargo build/, 'the prebuilt binary was used, nothing was compiled');

      sim.create('pods', { metadata: { name: 'from-tarball', namespace: 'default' } });
      const script = `
      const { NativeKubernetesWatcher } = require('kube-watch-native');
      (async () => {
        const w = new NativeKubernetesWatcher({ logger: console });
        const params = { clusterDetails: { name: 'sim', url: process.argv[1],
          authMetadata: { 'kubernetes.io/auth-provider': 'localKubectlProxy' } },
          credential: { type: 'anonymous' }, group: '', apiVersion: 'v1', plural: 'pods' };
        for await (const e of w.watchResource(params, { namespace: 'default' })) {
          console.log(e.type, e.object.metadata.name);
          break;
        }
      })();`;
      const { execFile } = require('node:child_process');
      const printed = await new Promise((resolve, reject) => {
        execFile(
          process.execPath,
          ['-e', script, sim.url],
          { cwd: project, timeout: 20_000 },
          (err, stdout) => (err ? reject(err) : resolve(stdout)),
        );
      });
      assert.equal(printed.trim(), 'ADDED from-tarball');
    } finally {
      await sim.close();
      fs.rmSync(work, { recursive: true, force: true });
    }
  },
);
