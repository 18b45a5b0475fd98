'use strict';
// Builds the npm packages: one per platform (npm/<id>/: its binary and a package.json whose
// `os`, `cpu` and `libc` let npm install only the matching one) and the main package, whose
// published package.json lists every platform package as an optional dependency at its own
// version. The checked-in package.json lists none: in a source checkout the addon is built
// locally, and npm must not look the platform packages up while developing.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS, binaryName, packageName } = require('../lib/platform');

const root = path.join(__dirname, '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function mainManifest() {
  return JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
}

/** The package.json of a platform package, derived from the main one. */
function platformManifest(platform, main = mainManifest()) {
  const manifest = {
    name: packageName(platform.id),
    version: main.version,
    description: `The ${platform.id} binary of kube-watch-native (built for ${platform.triple})`,
    main: binaryName(platform.id),
    files: [binaryName(platform.id)],
    license: main.license,
    engines: main.engines,
    os: [platform.os],
    cpu: [platform.cpu],
  };
  if (platform.libc) manifest.libc = [platform.libc];
  return manifest;
}

/** Writes npm/<id>/package.json for every platform. */
function writePlatformManifests() {
  const main = mainManifest();
  for (const platform of PLATFORMS) {
    const dir = path.join(root, 'npm', platform.id);
    const file = path.join(dir, 'package.json');
    const manifest = platformManifest(platform, main);
    // Rewritten only when it changed, so a file formatted since stays as it is.
    const current = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : null;
    if (JSON.stringify(current) === JSON.stringify(manifest)) continue;
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  }
}

/** The package.json published for the main package. */
function publishedMainManifest(main = mainManifest()) {
  const published = { ...main };
  delete published.devDependencies;
  // Only the install hook runs on users' machines; the other scripts are for the checkout.
  published.scripts = { install: main.scripts.install };
  published.optionalDependencies = Object.fromEntries(
    PLATFORMS.map((p) => [packageName(p.id), main.version]),
  );
  return published;
}

function pack(dir, destination) {
  fs.mkdirSync(destination, { recursive: true });
  const [result] = JSON.parse(
    execFileSync(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], {
      cwd: dir,
      encoding: 'utf8',
    }),
  );
  return { file: path.join(destination, result.filename), files: result.files.map((f) => f.path) };
}

/**
 * Packs a platform package into `destination`, with `binary` (default: the one in npm/<id>/,
 * made by scripts/build-targets.js) as its addon. Returns { file, files }.
 */
function packPlatform(
  platform,
  destination,
  binary = path.join(root, 'npm', platform.id, binaryName(platform.id)),
) {
  if (!fs.existsSync(binary)) throw new Error(`no ${platform.id} binary at ${binary}: run npm run pack:all`);
  fs.mkdirSync(destination, { recursive: true });
  const stage = fs.mkdtempSync(path.join(destination, `.stage-${platform.id}-`));
  try {
    fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(platformManifest(platform), null, 2));
    fs.copyFileSync(path.join(root, 'npm', platform.id, 'README.md'), path.join(stage, 'README.md'));
    fs.copyFileSync(binary, path.join(stage, binaryName(platform.id)));
    return pack(stage, destination);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

/** Packs the main package (JavaScript, types, CLI, simulator; no binary, no Rust sources). */
function packMain(destination) {
  const main = mainManifest();
  fs.mkdirSync(destination, { recursive: true });
  const stage = fs.mkdtempSync(path.join(destination, '.stage-main-'));
  try {
    for (const entry of [...main.files, 'README.md']) {
      fs.mkdirSync(path.dirname(path.join(stage, entry)), { recursive: true });
      fs.cpSync(path.join(root, entry), path.join(stage, entry), { recursive: true });
    }
    fs.writeFileSync(path.join(stage, 'package.json'), JSON.stringify(publishedMainManifest(main), null, 2));
    return pack(stage, destination);
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
}

module.exports = { platformManifest, publishedMainManifest, writePlatformManifests, packPlatform, packMain };
