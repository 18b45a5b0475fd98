'use strict';
// Packaging: the main tarball (JavaScript only, every platform package an optional dependency
// at its own version) and this platform's tarball install into a fresh project with no cargo
// on PATH and no network (`npm install --offline` from the two files), and
// `require('kube-watch-native')` there watches the simulator with the platform package's binary.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const { packMain, packPlatform } = require('../packages/kube-watch-native/scripts/packaging');
const {
  tempDir,
  watchOnce,
  NATIVE_ROOT: root,
  MODULES: modules,
  NPM: npm,
  VERSION: version,
  HOST: platform,
  NO_HOST,
  PLATFORMS,
  binaryName,
  packageName,
} = require('./pkg-helpers');

/** PATH without any directory that holds a `cargo`, so nothing can be compiled. */
function pathWithoutCargo() {
  return (process.env.PATH || '')
    .split(path.delimiter)
    .filter((dir) => dir && !fs.existsSync(path.join(dir, 'cargo')))
    .join(path.delimiter);
}

test(
  'the main and platform tarballs install offline with no cargo, and the installed package watches',
  { timeout: 180_000, skip: NO_HOST },
  async (t) => {
    const work = tempDir(t, 'kwn-pack-');
    const main = packMain(work);
    for (const needed of ['index.js', 'index.d.ts', 'lib/watcher.js', 'lib/native.js', 'bin/kube-watch.js']) {
      assert.ok(main.files.includes(needed), `the main tarball ships ${needed}`);
    }
    assert.deepEqual(
      main.files.filter((f) => f.endsWith('.node') || f.startsWith('src/') || f === 'Cargo.toml'),
      [],
      'no binary and no Rust sources in the main tarball',
    );
    // The binary just built from these sources, as this platform's package.
    const own = packPlatform(platform, work, path.join(root, binaryName()));
    assert.deepEqual(own.files.sort(), [binaryName(), 'README.md', 'package.json'].sort());

    // The main package's one dependency, from the copy the checkout installed: npm needs no
    // registry and no cache.
    const [yaml] = JSON.parse(
      execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', work], {
        cwd: path.join(modules, 'yaml'),
        encoding: 'utf8',
      }),
    );

    const project = path.join(work, 'consumer');
    fs.mkdirSync(project);
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
    const env = {
      ...process.env,
      PATH: pathWithoutCargo(),
      // Any registry request fails at once: only the two tarballs (and npm's cache) are there.
      npm_config_registry: 'http://127.0.0.1:9/',
      npm_config_cache: path.join(work, 'npm-cache'),
      npm_config_update_notifier: 'false',
    };
    const output = execFileSync(
      npm,
      [
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--foreground-scripts',
        main.file,
        own.file,
        path.join(work, yaml.filename),
      ],
      { cwd: project, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
    );
    assert.match(output, new RegExp(`using the prebuilt binary from ${packageName()}`), output);
    assert.doesNotMatch(output, /cargo build/, 'nothing was compiled');

    const installed = JSON.parse(
      fs.readFileSync(path.join(project, 'node_modules/kube-watch-native/package.json'), 'utf8'),
    );
    assert.deepEqual(
      installed.optionalDependencies,
      Object.fromEntries(PLATFORMS.map((p) => [packageName(p.id), version])),
      'every platform package is an optional dependency at the same version',
    );
    assert.equal(installed.devDependencies, undefined);
    assert.ok(!fs.existsSync(path.join(project, 'node_modules/kube-watch-native/Cargo.toml')));

    const sim = await createSimulator({});
    t.after(() => sim.close());
    sim.create('pods', { metadata: { name: 'from-tarball', namespace: 'default' } });
    const { event, version: info } = await watchOnce({
      command: process.execPath,
      cwd: project,
      url: sim.url,
      env,
    });
    assert.equal(event, 'ADDED from-tarball');
    assert.equal(info.binary, path.join(project, 'node_modules', packageName(), binaryName()));
    assert.equal(info.package, version);
    assert.equal(info.target, platform.triple);

    // The demo, from the installed package on a fresh directory: no TLS fixture, no fault.
    const demo = execFileSync(
      process.execPath,
      [
        path.join(project, 'node_modules/kube-watch-native/bin/kube-watch.js'),
        '--demo',
        '--demo-seconds',
        '2',
      ],
      { cwd: project, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 },
    );
    assert.match(demo, /ADDED/, demo);
  },
);

/** What only the repository's tests and benchmarks use: never in the package users install. */
const TEST_ONLY = [
  /^__test__\//,
  /^bench\//,
  /^sim\/certs\//,
  /^sim\/(faults|server-faults|chaos|proxies|client)\.js$/,
  /\.pem$/,
];

test('npm pack holds no private key and nothing test-only, and its simulator loads without them', () => {
  const [packed] = JSON.parse(
    execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8' }),
  );
  const files = packed.files.map((f) => f.path);
  assert.ok(files.includes('sim/index.js') && files.includes('bin/kube-watch.js'), 'the demo ships');
  assert.deepEqual(
    files.filter((f) => TEST_ONLY.some((pattern) => pattern.test(f))),
    [],
    'test-only files in the package',
  );
  const keys = files.filter((f) => /PRIVATE KEY-----/.test(fs.readFileSync(path.join(root, f), 'latin1')));
  assert.deepEqual(keys, [], 'private keys in the package');
  // Every module the shipped simulator requires at load is shipped.
  for (const file of files.filter((f) => f.startsWith('sim/'))) {
    const code = fs.readFileSync(path.join(root, file), 'utf8');
    for (const [, dep] of code.matchAll(/^const .* = require\('(\.\/[^']+)'\);$/gm)) {
      assert.ok(
        files.includes(path.posix.join('sim', `${dep.slice(2)}.js`)),
        `${file} requires ${dep} at load`,
      );
    }
  }
});

/** The packages of this repository (packages/*), by directory. */
const PACKAGES = ['kube-watch-native', 'protocol', 'backstage', 'live-frontend'];

test('each package imports only its dependencies and peer dependencies, and each is one Backstage tooling finds', () => {
  const builtins = new Set(require('node:module').builtinModules);
  const missing = [];
  for (const dir of PACKAGES) {
    const base = path.join(__dirname, '..', 'packages', dir);
    const pkg = JSON.parse(fs.readFileSync(path.join(base, 'package.json'), 'utf8'));
    const declared = new Set([
      ...Object.keys(pkg.dependencies ?? {}),
      ...Object.keys(pkg.peerDependencies ?? {}),
      ...Object.keys(pkg.optionalDependencies ?? {}),
    ]);
    const files = [];
    const walk = (sub) => {
      for (const name of fs.readdirSync(path.join(base, sub))) {
        const file = path.join(sub, name);
        if (['node_modules', 'target', 'src', 'npm', 'sim', 'examples', 'tests'].includes(name) && sub === '')
          continue;
        if (fs.statSync(path.join(base, file)).isDirectory()) walk(file);
        else if (/\.(js|mjs|ts)$/.test(name)) files.push(file);
      }
    };
    walk('');
    assert.ok(files.length > 0, `${dir}: files read`);
    for (const file of files) {
      // Comments name packages in examples (`backend.add(import('…'))`): only code counts.
      const text = fs
        .readFileSync(path.join(base, file), 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '');
      const specifiers = [
        ...text.matchAll(/require\(\s*['"]([^'"]+)['"]\s*\)/g),
        ...text.matchAll(/\bfrom\s+['"]([^'"]+)['"]/g),
        ...text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g),
      ].map((m) => m[1]);
      for (const specifier of specifiers) {
        if (specifier.startsWith('.') || specifier.startsWith('node:') || builtins.has(specifier)) continue;
        const name = specifier.startsWith('@')
          ? specifier.split('/').slice(0, 2).join('/')
          : specifier.split('/')[0];
        if (name === pkg.name || declared.has(name)) continue;
        missing.push(`${dir}/${file}: ${specifier}`);
      }
    }
  }
  assert.deepEqual(missing, []);
  const manifest = (dir) => require(`../packages/${dir}/package.json`);
  // Backstage's discovery: backend.packages: all loads a backend-plugin-module of the plugin,
  // app.packages: all a frontend-plugin-module.
  assert.deepEqual(manifest('backstage').backstage, {
    role: 'backend-plugin-module',
    pluginId: 'kubernetes',
    pluginPackage: '@backstage/plugin-kubernetes-backend',
  });
  assert.equal(manifest('live-frontend').backstage.role, 'frontend-plugin-module');
  assert.equal(manifest('live-frontend').backstage.pluginId, 'kubernetes');
  // The backend module's default export is the module itself (what discovery adds).
  const backend = require('kube-watch-native-backstage');
  assert.equal(backend.default, backend.kubernetesModuleNativeInformers);
  assert.equal(backend.default.$$type, '@backstage/BackendFeature');
  // The native package carries no Backstage peer, the frontend no native dependency.
  assert.deepEqual(
    Object.keys(manifest('kube-watch-native').peerDependencies ?? {}).filter((n) =>
      n.startsWith('@backstage/'),
    ),
    [],
  );
  assert.ok(!('kube-watch-native' in (manifest('live-frontend').dependencies ?? {})));
});
