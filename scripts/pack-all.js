#!/usr/bin/env node
'use strict';
// `npm run pack:all`: cross-builds every platform's binary (scripts/build-targets.js), then
// packs every platform package and the main package into dist/. Publishing is
// `npm publish` of each platform tarball, then of the main one.

const path = require('node:path');
const { PLATFORMS } = require('../lib/platform');
const { build } = require('./build-targets');
const { writePlatformManifests, packPlatform, packMain } = require('./packaging');

const root = path.join(__dirname, '..');
const dist = path.join(root, 'dist');

writePlatformManifests();
for (const platform of PLATFORMS) build(platform);
const packed = [...PLATFORMS.map((p) => packPlatform(p, dist)), packMain(dist)];
console.log('\npacked:');
for (const { file } of packed) console.log(`  ${path.relative(root, file)}`);
