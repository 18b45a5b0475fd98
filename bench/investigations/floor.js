#!/usr/bin/env node
'use strict';
// `node bench/investigations/floor.js [--sizes=small,medium,large] [--rounds=60]`
//
// Where the main thread's time goes on the native path, without the network: the same watch
// lines pushed through each step the JavaScript side of NativeKubernetesWatcher takes, in ONE
// process, the variants interleaved in short segments round after round (so a noisy machine's
// drift hits all of them alike); medians of per-round ratios to `line`. Main-thread CPU
// (schedstat) per event, for:
//   line        JSON.parse(line) per event — the bound of bench/run.js
//   batch       JSON.parse('[' + 64 KiB of lines (with resourceVersion appended) + ']'), the
//               same strings every round
//   fresh       + a fresh one-byte string per batch (Buffer#latin1Slice: the copy the addon makes
//               of every batch)
//   stream      + lib/event-stream.js (the AsyncGenerator watchResource returns) over a stand-in
//               for the native watch that hands out those batches, consumed with `for await`
//   async gen   the same through an `async function*` instead, for comparison
// Every variant lets the event loop turn every 2 ms, as the stream does, so the garbage
// collections V8 schedules as tasks run in the variant that made the garbage.

const { lines } = require('../pods');
const { mainThreadCpuNs } = require('../../testbed/proc');
const { EventStream } = require('../../packages/kube-watch-native/lib/event-stream');

const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const SIZES = opt('sizes') ? opt('sizes').split(',') : ['small', 'medium', 'large'];
const ROUNDS = Number(opt('rounds') ?? 60);
const BATCH_BYTES = 64 * 1024;
const SEGMENT = { small: 1000, medium: 200, large: 20 };
const TURN_MS = 2;

const turn = () => new Promise((resolve) => setImmediate(resolve));

/** Batches of the lines as the addon builds them: a JSON array of events with resourceVersion. */
function batchesOf(texts) {
  const out = [];
  let group = [];
  let bytes = 0;
  for (let round = 0; round < 4; round++) {
    for (const [i, t] of texts.entries()) {
      const event = `${t.slice(0, -1)},"resourceVersion":"${round * texts.length + i}"}`;
      if (group.length && bytes + event.length > BATCH_BYTES) {
        out.push(`[${group.join(',')}]`);
        group = [];
        bytes = 0;
      }
      group.push(event);
      bytes += event.length + 1;
    }
  }
  if (group.length) out.push(`[${group.join(',')}]`);
  return out.map((text) => ({ text, bytes: Buffer.from(text, 'latin1') }));
}

async function measureSize(size) {
  const texts = lines(size, 64).map((l) => l.slice(0, -1));
  const batches = batchesOf(texts);
  const n = SEGMENT[size];
  let sink = 0;
  let next = 0;
  const freshBatch = () => batches[next++ % batches.length].bytes.latin1Slice();
  // A stand-in for NativeWatch: every batch is ready at once, as under load.
  const fakeWatch = () => ({
    takeBatch: () => ({ events: freshBatch(), warnings: [], done: false }),
    wait: () => ({ events: freshBatch(), warnings: [], done: false }),
    cancel() {},
  });
  const stream = new EventStream(fakeWatch, undefined, () => {});
  async function* asyncGen() {
    for (;;) for (const event of JSON.parse(await Promise.resolve(freshBatch()))) yield event;
  }
  const viaGen = asyncGen();

  /** Runs `step` until it has read `n` events, turning the event loop every TURN_MS. */
  async function loop(step) {
    let done = 0;
    let turnAt = performance.now() + TURN_MS;
    while (done < n) {
      done += step();
      if (performance.now() >= turnAt) {
        await turn();
        turnAt = performance.now() + TURN_MS;
      }
    }
  }
  const parseBatch = (text) => {
    const events = JSON.parse(text);
    for (const ev of events) sink += ev.object.metadata.name.length;
    return events.length;
  };
  const consume = async (iterable) => {
    let done = 0;
    for await (const ev of iterable) {
      sink += ev.object.metadata.name.length;
      if (++done === n) break;
    }
  };
  // for-await would call return() on break: hand it an iterator that only forwards next().
  const keepOpen = (source) => ({ [Symbol.asyncIterator]: () => ({ next: () => source.next() }) });
  const variants = {
    line: () => {
      let i = 0;
      return loop(() => {
        sink += JSON.parse(texts[i++ % texts.length]).object.metadata.name.length;
        return 1;
      });
    },
    batch: () => loop(() => parseBatch(batches[next++ % batches.length].text)),
    fresh: () => loop(() => parseBatch(freshBatch())),
    stream: () => consume(keepOpen(stream)),
    'async gen': () => consume(keepOpen(viaGen)),
  };
  const ratios = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
  const perEvent = { line: [] };
  for (let round = 0; round < ROUNDS + 4; round++) {
    const ns = {};
    for (const [name, run] of Object.entries(variants)) {
      const t0 = mainThreadCpuNs();
      await run();
      ns[name] = mainThreadCpuNs() - t0;
    }
    // The first rounds warm the JIT up.
    if (round < 4) continue;
    perEvent.line.push(ns.line / n / 1000);
    for (const name of Object.keys(variants)) ratios[name].push(ns[name] / ns.line);
  }
  if (!sink) throw new Error('nothing read');
  const median = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
  return {
    size,
    lineBytes: texts.reduce((a, t) => a + t.length, 0) / texts.length,
    eventsPerBatch: JSON.parse(batches[0].text).length,
    lineUs: median(perEvent.line),
    ratios: Object.fromEntries(Object.entries(ratios).map(([k, v]) => [k, median(v)])),
  };
}

async function main() {
  console.log(
    `Main-thread CPU per event ÷ \`line\` (medians of ${ROUNDS} rounds; \`node bench/investigations/floor.js\`)\n`,
  );
  console.log('| size | line bytes | events/batch | line µs/ev | batch | fresh | stream | async gen |');
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const size of SIZES) {
    const r = await measureSize(size);
    const f = (x) => x.toFixed(3);
    console.log(
      `| ${size} | ${Math.round(r.lineBytes)} | ${r.eventsPerBatch} | ${r.lineUs.toFixed(2)} | ` +
        `${f(r.ratios.batch)} | ${f(r.ratios.fresh)} | ${f(r.ratios.stream)} | ${f(r.ratios['async gen'])} |`,
    );
  }
}

main();
