#!/usr/bin/env node
'use strict';
// `node bench/floor.js [--sizes=small,medium,large] [--ms=3000]`
//
// Where the main thread's time goes on the native path, without the network: the same watch
// lines pushed through each step the JavaScript side of NativeKubernetesWatcher takes, measured
// in ONE process with the variants interleaved in short slices (so a noisy machine's drift hits
// all of them alike). Main-thread CPU per event (schedstat), for:
//   line          JSON.parse(line) per event — the bound of bench/run.js
//   batch         JSON.parse('[' + up to 256 KiB of lines + ']') per batch, text reused
//   decode        + a fresh batch text made from UTF-8 bytes each time (Buffer#toString; the
//                 addon's napi string creation does the same kind of copy and allocation)
//   generator     + every event yielded one by one through an async generator into `for await`,
//                 wrapped as {type, object, resourceVersion} (what lib/watcher.js does)
//   … 64K         the same with batches capped at 64 KiB instead of 256 KiB (V8 puts strings over
//                 ~128 KiB in large-object space, which costs more to allocate and collect)
// The differences are what each step costs; `generator` is the floor for the current design.

const { lines } = require('./pods');
const { mainThreadCpuNs } = require('./measure');

const argv = process.argv.slice(2);
const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const SIZES = opt('sizes') ? opt('sizes').split(',') : ['small', 'medium', 'large'];
const BUDGET_MS = Number(opt('ms') ?? 3000);
function batchesOf(texts, BATCH_BYTES) {
  const out = [];
  let group = [];
  let bytes = 0;
  for (let round = 0; round < 4; round++) {
    for (const t of texts) {
      if (group.length && bytes + t.length + 1 > BATCH_BYTES) {
        out.push({ text: `[${group.join(',')}]`, events: group.length });
        group = [];
        bytes = 0;
      }
      group.push(t);
      bytes += t.length + 1;
    }
  }
  if (group.length) out.push({ text: `[${group.join(',')}]`, events: group.length });
  for (const b of out) b.bytes = Buffer.from(b.text);
  return out;
}

function toEvent(raw) {
  if (raw.type === 'ERROR') return raw;
  const object = raw.object;
  return { type: raw.type, object, resourceVersion: object?.metadata?.resourceVersion };
}

async function* generator(batches, count) {
  let n = 0;
  for (let i = 0; n < count; i++) {
    const b = batches[i % batches.length];
    // One await per batch, like `await watch.nextBatch()`.
    const text = await Promise.resolve(b.bytes.toString('utf8'));
    for (const raw of JSON.parse(text)) {
      n++;
      yield toEvent(raw);
    }
  }
}

async function measureSize(size) {
  const texts = lines(size, 64).map((l) => l.slice(0, -1));
  const batches = batchesOf(texts, 256 * 1024);
  const small = batchesOf(texts, 64 * 1024);
  const perSlice = { small: 2000, medium: 300, large: 30 }[size];
  let sink = 0;
  const variants = {
    line: async (n) => {
      for (let i = 0; i < n; i++) sink += JSON.parse(texts[i % texts.length]).object.metadata.name.length;
      return n;
    },
    batch: async (n) => {
      let done = 0;
      for (let i = 0; done < n; i++) {
        const b = batches[i % batches.length];
        for (const ev of JSON.parse(b.text)) sink += ev.object.metadata.name.length;
        done += b.events;
      }
      return done;
    },
    decode: async (n) => decode(batches, n),
    generator: async (n) => viaGenerator(batches, n),
    'decode 64K': async (n) => decode(small, n),
    'generator 64K': async (n) => viaGenerator(small, n),
  };
  async function decode(set, n) {
    let done = 0;
    for (let i = 0; done < n; i++) {
      const b = set[i % set.length];
      for (const ev of JSON.parse(b.bytes.toString('utf8'))) sink += ev.object.metadata.name.length;
      done += b.events;
    }
    return done;
  }
  async function viaGenerator(set, n) {
    let done = 0;
    for await (const ev of generator(set, n)) {
      sink += ev.object.metadata.name.length;
      done++;
    }
    return done;
  }
  const totals = Object.fromEntries(Object.keys(variants).map((k) => [k, { ns: 0, n: 0 }]));
  const until = Date.now() + BUDGET_MS;
  for (let round = 0; Date.now() < until || round < 6; round++) {
    for (const [name, run] of Object.entries(variants)) {
      const t0 = mainThreadCpuNs();
      const n = await run(perSlice);
      // The first rounds warm the JIT up.
      if (round >= 2) {
        totals[name].ns += mainThreadCpuNs() - t0;
        totals[name].n += n;
      }
    }
  }
  if (!sink) throw new Error('nothing read');
  const us = Object.fromEntries(Object.entries(totals).map(([k, t]) => [k, t.ns / t.n / 1000]));
  return {
    size,
    bytesPerEvent: texts.reduce((a, t) => a + t.length, 0) / texts.length,
    events: batches[0].events,
    events64: small[0].events,
    us,
  };
}

async function main() {
  console.log(
    '| size | line bytes | events per batch 256K / 64K | line µs/ev | batch | + decode | + generator | decode 64K | generator 64K | generator ÷ line (256K / 64K) |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const size of SIZES) {
    const r = await measureSize(size);
    const f = (x) => x.toFixed(2);
    console.log(
      `| ${size} | ${Math.round(r.bytesPerEvent)} | ${r.events} / ${r.events64} | ${f(r.us.line)} | ${f(r.us.batch)} | ${f(r.us.decode)} | ${f(r.us.generator)} | ${f(r.us['decode 64K'])} | ${f(r.us['generator 64K'])} | ${f(r.us.generator / r.us.line)} / ${f(r.us['generator 64K'] / r.us.line)} |`,
    );
  }
}

main();
