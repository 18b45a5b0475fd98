#!/usr/bin/env node
'use strict';
// Cross-builds the addon for platforms from lib/platform.js into npm/<id>/, from this Linux
// machine: zig (cargo-zigbuild) links the Linux and macOS targets, Debian's MinGW-w64 the
// Windows one. Usage: node scripts/build-targets.js [ID…] (default: every platform).
// Each target keeps its own directory under target/ (cargo's layout), so building again only
// recompiles what changed.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { PLATFORMS, binaryName } = require('../lib/platform');
const toolchain = require('./toolchain');

const root = path.join(__dirname, '..');

/**
 * A directory with the import library that napi's build script links on windows-gnu
 * (`-lnode`, found through LIBNODE_PATH, which must hold a `libnode.dll`). Official Node.js for
 * Windows ships no libnode: node.exe itself exports Node-API. So the import library is made
 * with MinGW's dlltool from a module definition naming node.exe and every Node-API function
 * napi-sys declares. napi-sys's default `dyn-symbols` feature then looks the functions up in
 * the host process at load time, so the binary ends up importing nothing from it.
 */
function libnodeDir(triple) {
  const meta = JSON.parse(
    execFileSync('cargo', ['metadata', '--format-version', '1', '--filter-platform', triple], {
      cwd: root,
      encoding: 'utf8',
      maxBuffer: 64 << 20,
    }),
  );
  const sys = meta.packages.find((p) => p.name === 'napi-sys');
  const source = fs.readFileSync(path.join(path.dirname(sys.manifest_path), 'src', 'functions.rs'), 'utf8');
  const names = [
    ...new Set([...source.matchAll(/\bfn ((?:napi|node_api|uv)_\w+)\(/g)].map((m) => m[1])),
  ].sort();
  if (names.length < 100)
    throw new Error(`found only ${names.length} Node-API functions in napi-sys ${sys.version}`);
  const dir = path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), triple, 'libnode');
  fs.mkdirSync(dir, { recursive: true });
  const def = path.join(dir, 'libnode.def');
  fs.writeFileSync(def, `LIBRARY node.exe\nEXPORTS\n${names.map((n) => `  ${n}\n`).join('')}`);
  toolchain.run('x86_64-w64-mingw32-dlltool', ['-d', def, '-l', path.join(dir, 'libnode.dll.a')]);
  // napi-build only checks that this file exists; ld prefers libnode.dll.a for `-lnode`.
  fs.copyFileSync(path.join(dir, 'libnode.dll.a'), path.join(dir, 'libnode.dll'));
  return dir;
}

/** The cargo invocation and environment that build one platform. */
function buildCommand(platform) {
  const { id, triple } = platform;
  if (id === 'win32-x64') {
    toolchain.aptPackages(toolchain.MINGW_PACKAGES);
    const key = triple.toUpperCase().replaceAll('-', '_');
    return {
      args: ['build', '--release', '--lib', '--target', triple],
      env: {
        ...process.env,
        [`CARGO_TARGET_${key}_LINKER`]: 'x86_64-w64-mingw32-gcc',
        [`CC_${triple.replaceAll('-', '_')}`]: 'x86_64-w64-mingw32-gcc',
        [`AR_${triple.replaceAll('-', '_')}`]: 'x86_64-w64-mingw32-ar',
        LIBNODE_PATH: libnodeDir(triple),
      },
    };
  }
  const env = toolchain.zigEnv();
  // glibc 2.17 (CentOS 7, Amazon Linux 2) is the oldest glibc the gnu binaries may need:
  // zig links against that version's symbol set.
  const zigTarget = platform.libc === 'glibc' ? `${triple}.2.17` : triple;
  if (platform.libc === 'musl') {
    // Rust's musl targets link libc statically by default, which a shared library (the addon,
    // loaded into Node's process with its own libc) cannot do.
    env[`CARGO_TARGET_${triple.toUpperCase().replaceAll('-', '_')}_RUSTFLAGS`] =
      '-C target-feature=-crt-static';
  }
  return { args: ['zigbuild', '--release', '--lib', '--target', zigTarget], env };
}

/** The library cargo writes for a target. */
function cargoOutput(platform) {
  const dir = path.join(
    process.env.CARGO_TARGET_DIR || path.join(root, 'target'),
    platform.triple,
    'release',
  );
  const name = {
    linux: 'libkube_watch_native.so',
    darwin: 'libkube_watch_native.dylib',
    win32: 'kube_watch_native.dll',
  }[platform.os];
  return path.join(dir, name);
}

/** Where the platform package keeps its binary. */
function packagedBinary(platform) {
  return path.join(root, 'npm', platform.id, binaryName(platform.id));
}

function build(platform) {
  toolchain.rustTargets([platform.triple]);
  const { args, env } = buildCommand(platform);
  console.log(`\n=== ${platform.id}: cargo ${args.join(' ')}`);
  const started = Date.now();
  toolchain.run('cargo', args, { cwd: root, env });
  const out = packagedBinary(platform);
  fs.copyFileSync(cargoOutput(platform), `${out}.tmp`);
  fs.renameSync(`${out}.tmp`, out);
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  console.log(
    `=== ${platform.id}: ${path.relative(root, out)} (${fs.statSync(out).size} bytes, ${seconds} s)`,
  );
  return out;
}

function main(ids) {
  const unknown = ids.filter((id) => !PLATFORMS.some((p) => p.id === id));
  if (unknown.length) {
    console.error(`unknown platform ${unknown.join(', ')}; known: ${PLATFORMS.map((p) => p.id).join(', ')}`);
    process.exit(2);
  }
  const chosen = ids.length ? PLATFORMS.filter((p) => ids.includes(p.id)) : PLATFORMS;
  for (const platform of chosen) build(platform);
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { build, packagedBinary };
