#!/usr/bin/env node
'use strict';
// `node bench/batch-strings.js [--sizes=small,medium,large] [--rounds=600] [--proto=https]`
//
// How the batch texts become JavaScript strings (src/binding/strings.rs), compared in ONE
// process: two native watches on the load server, one whose batches are copied into fresh
// one-byte strings and one whose long batches become external strings (V8 reads the batch
// where Rust wrote it, its size reported with napi_adjust_external_memory), and the JSON.parse
// bound, each consumed in segments of 1000 small / 200 medium / 20 large events, in a random
// order every round. Medians and quartiles of the per-round ratios; `external ÷ copied` is the
// figure that matters. Per-segment noise on this machine is ±5 %, so it takes hundreds of
// rounds to see a 1 % difference.

const { lines } = require('./pods');
const { startLoadServer } = require('./load-client');
const { mainThreadCpuNs } = require('./measure');
const certs = require('../sim/certs');
const native = require('../lib/native');
const { toSpec } = require('../lib/watcher');
const { WatchEventStream } = require('../lib/event-stream');

const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const SIZES = (opt('sizes') ?? 'small,medium,large').split(',');
const ROUNDS = Number(opt('rounds') ?? 600);
const PROTO = opt('proto') ?? 'https';
const SEGMENT = { small: 1000, medium: 200, large: 20 };
const WARMUP_ROUNDS = 3;
const TURN_MS = 2;

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A native watch's stream over job `jobId`, making its batch strings the `batchStrings` way. */
function openStream(origin, jobId, batchStrings) {
  const params = {
    clusterDetails: {
      name: 'bench',
      url: `${origin}/job/${jobId}`,
      authMetadata: {},
      caData: PROTO === 'https' ? Buffer.from(certs.ca).toString('base64') : undefined,
    },
    credential: { type: 'bearer token', token: 'x' },
    group: '',
    apiVersion: 'v1',
    plural: 'pods',
  };
  const spec = { ...toSpec(params, { namespace: 'bench' }), batchStrings };
  const stream = new WatchEventStream(
    () => native.startWatch(spec),
    undefined,
    (w) => console.error(w),
  );
  // for await would call return() on break: hand it an iterator that only forwards next().
  return { [Symbol.asyncIterator]: () => ({ next: () => stream.next() }) };
}

async function measureSize(server, size) {
  const texts = lines(size, 64).map((l) => l.slice(0, -1));
  const n = SEGMENT[size];
  const count = n * (ROUNDS + WARMUP_ROUNDS + 1);
  const streams = {};
  for (const [name, batchStrings] of [
    ['copied', 'copy'],
    ['external', 'external'],
  ]) {
    const jobId = `strings-${size}-${name}`;
    await server.request({ cmd: 'job', job: { id: jobId, mode: 'stream', size, count, maxMs: 1800000 } });
    streams[name] = openStream(server.origin(PROTO), jobId, batchStrings);
  }
  let names = 0;
  const bound = async () => {
    let turnAt = performance.now() + TURN_MS;
    for (let i = 0; i < n; i++) {
      if (JSON.parse(texts[i % texts.length]).object.metadata.name) names++;
      if (performance.now() >= turnAt) {
        await turn();
        turnAt = performance.now() + TURN_MS;
      }
    }
  };
  const consume = async (iterable) => {
    let k = 0;
    for await (const event of iterable) {
      if (event.object.metadata.name) names++;
      if (++k === n) break;
    }
  };
  const run = { bound, copied: () => consume(streams.copied), external: () => consume(streams.external) };
  const ratios = { copied: [], external: [], 'external ÷ copied': [] };
  const boundUs = [];
  for (let round = 0; round < ROUNDS + WARMUP_ROUNDS; round++) {
    const order = Object.keys(run).sort(() => Math.random() - 0.5);
    const ns = {};
    for (const name of order) {
      const t0 = mainThreadCpuNs();
      await run[name]();
      ns[name] = mainThreadCpuNs() - t0;
    }
    if (round < WARMUP_ROUNDS) continue;
    ratios.copied.push(ns.copied / ns.bound);
    ratios.external.push(ns.external / ns.bound);
    ratios['external ÷ copied'].push(ns.external / ns.copied);
    boundUs.push(ns.bound / n / 1000);
  }
  if (!names) throw new Error('nothing read');
  const q = (xs, p) => xs.slice().sort((a, b) => a - b)[Math.round(p * (xs.length - 1))];
  const cell = (xs) => `${q(xs, 0.5).toFixed(3)} (${q(xs, 0.25).toFixed(3)}–${q(xs, 0.75).toFixed(3)})`;
  return `| ${size}/${PROTO} | ${q(boundUs, 0.5).toFixed(2)} | ${cell(ratios.copied)} | ${cell(ratios.external)} | ${cell(ratios['external ÷ copied'])} |`;
}

async function main() {
  const server = await startLoadServer((child) => process.on('exit', () => child.kill('SIGKILL')));
  console.log(
    `Main-thread CPU per event, ${ROUNDS} rounds (medians and quartiles of per-round ratios; ` +
      `\`${['node bench/batch-strings.js', ...argv].join(' ')}\`)\n`,
  );
  console.log('| size/proto | bound µs/ev | copied ÷ bound | external ÷ bound | external ÷ copied |');
  console.log('|---|---:|---:|---:|---:|');
  for (const size of SIZES) console.log(await measureSize(server, size));
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
