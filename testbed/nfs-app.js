'use strict';
// The new frontend system's app of __test__/live-browser-nfs.test.js (fixtures/nfs-app), bundled
// as backstage-cli bundles a create-app 0.9.2 app's packages/app:
// - app.packages: all, as the CLI's package detection does it: each dependency of the app's
//   package.json whose `backstage.role` is frontend-plugin or frontend-plugin-module becomes
//   `{ name, export, default }` in window['__@backstage/discovered__'] (its main entry, and its
//   ./alpha when it has one), which @backstage/frontend-defaults' createApp installs;
// - the app-config as the CLI injects it (process.env.APP_CONFIG);
// - the versions the template ships: a dependency `^X.Y.Z` whose root copy is another line is
//   bundled from the npm alias `<name>-X.Y.Z` of the repository's devDependencies, for every
//   importer (the live module's peers too, as yarn hoists them in that app); what is bundled is
//   returned, name → versions.

const fs = require('node:fs');
const path = require('node:path');
const { loadConfig } = require('@backstage/config-loader');
const { build } = require('./live-helpers');

const APP = path.join(__dirname, 'fixtures', 'nfs-app');
const ROOT = path.join(__dirname, '..');
const DETECTED = '__backstage-autodetected-plugins__';

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

/** Whether `version` is in the caret range `^base` (the template's ranges are all carets). */
function inCaret(version, range) {
  const [v, b] = [version, range.replace(/^\^/, '')].map((s) => s.split('.').map(Number));
  const fixed = b[0] > 0 ? 1 : b[1] > 0 ? 2 : 3; // ^1.2.3: 1.x.x; ^0.2.3: 0.2.x; ^0.0.3: 0.0.3
  for (let i = 0; i < fixed; i++) if (v[i] !== b[i]) return false;
  for (let i = fixed; i < 3; i++) if (v[i] !== b[i]) return v[i] > b[i];
  return true;
}

/** The package.json of `name` as the app resolves it. */
const manifest = (name) => readJson(require.resolve(`${name}/package.json`, { paths: [APP] }));

/**
 * The template's versions where the repository's own are another line: the root's npm aliases
 * `<name>-<version>` (`npm:<name>@<version>`), name → alias. Each app dependency must then be in
 * its range (as the template's yarn.lock would have it).
 */
function templateAliases(dependencies) {
  const aliases = {};
  for (const [alias, spec] of Object.entries(readJson(path.join(ROOT, 'package.json')).devDependencies)) {
    const match = /^npm:(.+)@([^@]+)$/.exec(spec);
    if (match && alias === `${match[1]}-${match[2]}`) aliases[match[1]] = alias;
  }
  for (const [name, range] of Object.entries(dependencies)) {
    const { version } = manifest(aliases[name] ?? name);
    if (!inCaret(version, range)) throw new Error(`the app's ${name}@${range} would bundle ${version}`);
  }
  return aliases;
}

/** The CLI's package detection over the app's dependencies: the detected module's source. */
function detectedModule(dependencies) {
  const entries = Object.keys(dependencies).flatMap((name) => {
    const pkg = manifest(name);
    if (!['frontend-plugin', 'frontend-plugin-module'].includes(pkg.backstage?.role)) return [];
    const alpha = pkg.exports && typeof pkg.exports === 'object' && './alpha' in pkg.exports;
    return [{ name, import: name }, ...(alpha ? [{ name, export: './alpha', import: `${name}/alpha` }] : [])];
  });
  const modules = entries.map(
    (e) =>
      `{ name: ${JSON.stringify(e.name)}, export: ${JSON.stringify(e.export)}, default: require(${JSON.stringify(e.import)}).default }`,
  );
  return `window['__@backstage/discovered__'] = { modules: [${modules.join(',')}] };`;
}

/** The packages a bundle holds, from its metafile: name → the versions bundled. */
function bundledVersions(metafile) {
  const versions = {};
  for (const input of Object.keys(metafile.inputs)) {
    const match = /^([^(]*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (!match) continue;
    const { name, version } = readJson(path.join(ROOT, match[1], 'package.json'));
    (versions[name] ??= new Set()).add(version);
  }
  return Object.fromEntries(Object.entries(versions).map(([n, v]) => [n, [...v].sort()]));
}

/** The app's bundle: `{ files, versions }`, the output files by name (app.js) and what it holds. */
async function bundleNfsApp() {
  const { dependencies } = readJson(path.join(APP, 'package.json'));
  const { appConfigs } = await loadConfig({
    configRoot: APP,
    configTargets: [{ path: path.join(APP, 'app-config.yaml') }],
  });
  const source = detectedModule(dependencies);
  const detection = {
    name: 'app.packages',
    setup(b) {
      b.onResolve({ filter: new RegExp(`^${DETECTED}$`) }, () => ({ path: DETECTED, namespace: DETECTED }));
      b.onLoad({ filter: /.*/, namespace: DETECTED }, () => ({ contents: source, resolveDir: APP }));
    },
  };
  const { files, metafile } = await build(path.join(APP, 'entry.js'), {
    entryNames: 'app',
    // The CLI's fallback for Node's `stream` (node-libs-browser's stream-browserify is
    // readable-stream) and its provided Buffer.
    alias: { ...templateAliases(dependencies), stream: 'readable-stream' },
    inject: [path.join(APP, 'provide.js')],
    plugins: [detection],
    define: {
      'process.env.APP_CONFIG': JSON.stringify(appConfigs.map(({ data, context }) => ({ data, context }))),
    },
  });
  return { files, versions: bundledVersions(metafile) };
}

module.exports = { bundleNfsApp };
