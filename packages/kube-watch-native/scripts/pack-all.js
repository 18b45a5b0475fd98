#!/usr/bin/env node
'use strict';
// `npm run pack:all`: cross-builds every platform's binary (scripts/build-targets.js), packs
// every platform package and the main package into dist/, and installs what the tests of the
// cross-built binaries need (llvm-readobj; qemu-user and an arm64 Node.js 22), so that
// `npm test` afterwards checks them all. Publishing is `npm publish` of each platform tarball,
// then of the main one.

const path = require('node:path');
const { PLATFORMS } = require('../lib/platform');
const { build } = require('./build-targets');
const { writePlatformManifests, packPlatform, packMain } = require('./packaging');
const toolchain = require('./toolchain');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');

writePlatformManifests();
for (const platform of PLATFORMS) build(platform);
const packed = [...PLATFORMS.map((p) => packPlatform(p, dist)), packMain(dist)];
console.log('\npacked:');
for (const { file } of packed) console.log(`  ${path.relative(root, file)}`);

toolchain.llvmReadobj();
toolchain.aptPackages(toolchain.QEMU_PACKAGES);
toolchain.nodeBinary(22, 'arm64');
console.log('\n`npm test` now checks every binary, and runs the linux-arm64-gnu one under qemu-user.');
