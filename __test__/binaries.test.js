'use strict';
// The cross-built binaries (npm/<id>/, made by `npm run pack:all`): each one's format and
// architecture, its exported `napi_register_module_v1`, the libraries it links (the system's
// only), and for Linux gnu no glibc symbol newer than 2.17; read with LLVM's llvm-readobj
// (rustup's llvm-tools). The linux-x64-gnu binary then watches the simulator here, and the
// linux-arm64-gnu one under qemu-user with an arm64 Node.js 22.
// Every one must be built from the commit checked out (build.rs embeds it; the binaries that
// run here also report it through the `version` export). A platform whose binary has not been
// built is skipped, saying so.

const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { createSimulator } = require('../packages/kube-watch-native/sim');
const toolchain = require('../packages/kube-watch-native/scripts/toolchain');
const {
  tempDir,
  installedLayout,
  watchOnce,
  NATIVE_ROOT: root,
  HOST: host,
  NO_HOST,
  PLATFORMS,
  platformId,
  binaryName,
  packageName,
} = require('./pkg-helpers');

const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
const built = (p) => path.join(root, 'npm', p.id, binaryName(p.id));
/** Whether `file` embeds commit `head`: build.rs puts the commit built from in every binary. */
const embedsHead = (file) => fs.readFileSync(file).includes(head);
const notBuilt = (p) => (fs.existsSync(built(p)) ? false : `${p.id} binary not built: run npm run pack:all`);

/** What each platform's binary must be, in llvm-readobj's words. */
const EXPECTED = {
  'linux-x64-gnu': { format: 'elf64-x86-64', arch: 'x86_64' },
  'linux-arm64-gnu': { format: 'elf64-littleaarch64', arch: 'aarch64' },
  'linux-x64-musl': { format: 'elf64-x86-64', arch: 'x86_64' },
  'linux-arm64-musl': { format: 'elf64-littleaarch64', arch: 'aarch64' },
  'darwin-x64': { format: 'Mach-O 64-bit x86-64', arch: 'x86_64' },
  'darwin-arm64': { format: 'Mach-O arm64', arch: 'aarch64' },
  'win32-x64': { format: 'COFF-x86-64', arch: 'x86_64' },
};

/** The libraries a binary may link: those every machine of its platform has. */
const SYSTEM_LIBRARIES = {
  glibc:
    /^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libgcc_s\.so\.1|ld-linux-(x86-64|aarch64)\.so\.[12])$/,
  // musl's dynamic linker answers for libc.so itself; libgcc_s comes with Node.js on Alpine.
  musl: /^(libc\.so|libgcc_s\.so\.1)$/,
  darwin: /^\/usr\/lib\/(libSystem\.B|libiconv\.2|libcharset\.1|libresolv\.9|libc\+\+\.1)\.dylib$/,
  win32:
    /^((kernel32|ntdll|ws2_32|advapi32|userenv|crypt32|bcrypt|bcryptprimitives|msvcrt)\.dll|api-ms-win-[a-z0-9-]+\.dll)$/i,
};

function readobj(file, flags) {
  const tool = toolchain.llvmReadobj();
  assert.ok(tool, 'llvm-readobj (rustup component llvm-tools) is needed');
  return execFileSync(tool, [...flags, file], { encoding: 'utf8', maxBuffer: 256 << 20 });
}

/** The names listed in `Block [ … ]` (one per line) of llvm-readobj's output. */
function listBlock(text, block) {
  const m = new RegExp(`^${block} \\[\\n([\\s\\S]*?)^\\]`, 'm').exec(text);
  return m
    ? m[1]
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean)
    : [];
}

/** Format, architecture, needed libraries, exported symbols and glibc versions of a binary. */
function inspect(platform, file) {
  const flags = ['--file-headers', '--needed-libs'];
  if (platform.os === 'linux') flags.push('--dyn-syms', '--version-info');
  if (platform.os === 'darwin') flags.push('--symbols');
  if (platform.os === 'win32') flags.push('--coff-exports');
  const text = readobj(file, flags);
  const symbols = [...text.matchAll(/Symbol \{\n([\s\S]*?)\n\s*\}/g)].map((m) => m[1]);
  let exported;
  if (platform.os === 'win32') {
    exported = [...text.matchAll(/Export \{[\s\S]*?Name: (\S+)/g)].map((m) => m[1]);
  } else if (platform.os === 'darwin') {
    // External and defined in a section (N_SECT), rather than undefined (N_UNDF).
    exported = symbols
      .filter((s) => /Extern/.test(s) && /Type: Section/.test(s))
      .map((s) => /Name: _(\S+)/.exec(s)?.[1]);
  } else {
    exported = symbols
      .filter((s) => /Binding: Global/.test(s) && !/Section: Undefined/.test(s))
      .map((s) => /Name: (\S+)/.exec(s)?.[1]);
  }
  let needed = [...new Set(listBlock(text, 'NeededLibraries'))];
  let id;
  let signed;
  if (platform.os === 'darwin') {
    // llvm-readobj lists a dylib's own install name among the libraries it needs.
    const objdump = path.join(path.dirname(toolchain.llvmReadobj()), 'llvm-objdump');
    const tool = (flags) => execFileSync(objdump, ['--macho', ...flags, file], { encoding: 'utf8' });
    id = tool(['--dylib-id']).split('\n')[1]?.trim();
    needed = needed.filter((lib) => lib !== id);
    signed = /cmd LC_CODE_SIGNATURE/.test(tool(['--private-headers']));
  }
  return {
    id,
    signed,
    needed,
    format: /^Format: (.+)$/m.exec(text)?.[1],
    arch: /^Arch: (.+)$/m.exec(text)?.[1],
    type: /^\s*Type: (\w+) \(0x[0-9A-F]+\)$/m.exec(text)?.[1],
    exported,
    glibc: [...text.matchAll(/Name: GLIBC_(\d+(?:\.\d+)+)/g)].map((m) => m[1]),
  };
}

const newer = (a, b) => {
  const [x, y] = [a, b].map((v) => v.split('.').map(Number));
  for (let i = 0; i < Math.max(x.length, y.length); i++)
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
  return false;
};

for (const platform of PLATFORMS) {
  test(
    `${platform.id}: built from HEAD; format, architecture, napi_register_module_v1 and system libraries only`,
    { skip: notBuilt(platform) },
    () => {
      assert.ok(embedsHead(built(platform)), `built from HEAD (${head}): run npm run pack:all again`);
      const info = inspect(platform, built(platform));
      assert.equal(info.format, EXPECTED[platform.id].format);
      assert.equal(info.arch, EXPECTED[platform.id].arch);
      if (platform.os === 'linux') assert.equal(info.type, 'SharedObject');
      assert.ok(info.exported.includes('napi_register_module_v1'), `exports: ${info.exported.join(', ')}`);
      assert.ok(info.needed.length > 0, 'lists the libraries it needs');
      const system = SYSTEM_LIBRARIES[platform.libc ?? platform.os];
      const foreign = info.needed.filter((lib) => !system.test(lib));
      assert.deepEqual(foreign, [], `only system libraries: ${info.needed.join(', ')}`);
      if (platform.os === 'darwin') {
        assert.equal(info.id, '@rpath/libkube_watch_native.dylib', 'no build path as its install name');
        // Apple Silicon refuses to map unsigned code; zig's linker signs ad hoc.
        if (platform.cpu === 'arm64') assert.ok(info.signed, 'has a code signature');
      }
      if (platform.libc === 'glibc') {
        assert.ok(info.glibc.length > 0, 'versioned glibc symbols were found');
        const tooNew = info.glibc.filter((v) => newer(v, '2.17'));
        assert.deepEqual(tooNew, [], 'needs no glibc newer than 2.17');
      }
    },
  );
}

const hostBuild = path.join(root, binaryName());
test(
  `the local build (${platformId()}): format, architecture, napi_register_module_v1 and system libraries only`,
  {
    skip: NO_HOST || (!fs.existsSync(hostBuild) && 'no local build: npm run build'),
  },
  () => {
    const info = inspect(host, hostBuild);
    assert.equal(info.format, EXPECTED[host.id].format);
    assert.ok(info.exported.includes('napi_register_module_v1'));
    const system = SYSTEM_LIBRARIES[host.libc ?? host.os];
    assert.deepEqual(
      info.needed.filter((lib) => !system.test(lib)),
      [],
    );
    // A plain cargo build on glibc ≥ 2.34 (pthread moved into libc) links GLIBC_2.34 symbols:
    // the 2.17 check above must be able to tell.
    const runtime = process.report.getReport().header.glibcVersionRuntime;
    if (host.libc === 'glibc' && runtime && !newer('2.34', runtime))
      assert.ok(
        info.glibc.some((v) => newer(v, '2.17')),
        info.glibc.join(', '),
      );
  },
);

/** Lays out `platform`'s package with its cross-built binary, and watches the simulator. */
async function watchWithBuilt(t, platform, { command, args = [] }) {
  const project = tempDir(t, `kwn-${platform.id}-`);
  installedLayout(project, { platform, binary: built(platform) });
  const sim = await createSimulator({});
  t.after(() => sim.close());
  sim.create('pods', { metadata: { name: `on-${platform.id}`, namespace: 'default' } });
  const { event, version } = await watchOnce({ command, args, cwd: project, url: sim.url, timeout: 120_000 });
  assert.equal(event, `ADDED on-${platform.id}`);
  assert.equal(version.platform, platform.id);
  assert.equal(version.target, platform.triple);
  assert.equal(version.commit, head, 'built from HEAD: run npm run pack:all again');
  assert.equal(
    version.binary,
    path.join(project, 'node_modules', packageName(platform.id), binaryName(platform.id)),
  );
}

const linuxX64 = PLATFORMS.find((p) => p.id === 'linux-x64-gnu');
test(
  'the cross-built linux-x64-gnu binary (glibc 2.17) watches the simulator',
  {
    skip:
      process.platform !== 'linux' || process.arch !== 'x64' ? 'not an x64 Linux host' : notBuilt(linuxX64),
    timeout: 120_000,
  },
  (t) => watchWithBuilt(t, linuxX64, { command: process.execPath }),
);

const linuxArm64 = PLATFORMS.find((p) => p.id === 'linux-arm64-gnu');
test(
  'the linux-arm64-gnu binary watches the simulator under qemu-user (arm64 Node.js 22)',
  { skip: process.platform !== 'linux' ? 'not a Linux host' : notBuilt(linuxArm64), timeout: 300_000 },
  async (t) => {
    toolchain.aptPackages(toolchain.QEMU_PACKAGES);
    const node = toolchain.nodeBinary(22, 'arm64');
    await watchWithBuilt(t, linuxArm64, {
      command: 'qemu-aarch64',
      args: ['-L', toolchain.ARM64_SYSROOT, node],
    });
  },
);
