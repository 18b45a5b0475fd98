'use strict';
// `node bench/investigations/answer-copy.js [--rounds=9]`
//
// What a load's own copy of a remembered answer costs in kube-watch-native-backstage (issue 34,
// finding 5: no two loads share an object): parsing the answer's JSON text again (what the
// module did until 144b84c) against copying the parsed answer (backstage/answers.js copyJson,
// strings shared), side by side in this one process, interleaved per round, on answers of
// bench/pods.js's realistic pods (the tab's pods of one entity: 1, 5 and 20 pods, small and
// medium). Reports the median time per copy of each and their ratio. No network.

const { pods } = require('../pods');
const { copyJson } = require('../../packages/backstage/serving/answers');

const argv = process.argv.slice(2);
const rounds = Number(argv.find((a) => a.startsWith('--rounds='))?.slice(9) ?? 9);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Microseconds per call of `fn`, over about 100 ms. */
function timed(fn) {
  let n = 0;
  const start = process.hrtime.bigint();
  let elapsed = 0n;
  while (elapsed < 100_000_000n) {
    for (let i = 0; i < 20; i++) fn();
    n += 20;
    elapsed = process.hrtime.bigint() - start;
  }
  return Number(elapsed) / n / 1000;
}

const rows = [];
for (const size of ['small', 'medium']) {
  for (const count of [1, 5, 20]) {
    // An answer as the fetcher remembers it: { type, resources } without kind and apiVersion.
    const answer = {
      type: 'pods',
      resources: pods(size, count).map(({ kind: _k, apiVersion: _a, ...rest }) => rest),
    };
    const text = JSON.stringify(answer);
    const parse = [];
    const copy = [];
    for (let r = 0; r < rounds; r++) {
      // Alternating which goes first, so neither always runs on a warmer heap.
      if (r % 2 === 0) {
        parse.push(timed(() => JSON.parse(text)));
        copy.push(timed(() => copyJson(answer)));
      } else {
        copy.push(timed(() => copyJson(answer)));
        parse.push(timed(() => JSON.parse(text)));
      }
    }
    rows.push({ size, count, bytes: text.length, parse: median(parse), copy: median(copy) });
  }
}

console.log(`Node ${process.version}, ${rounds} rounds, medians (µs per copy)\n`);
console.log('| pods | JSON bytes | JSON.parse (before) | copyJson (now) | copy ÷ parse |');
console.log('|---|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.count} ${r.size} | ${r.bytes} | ${r.parse.toFixed(1)} | ${r.copy.toFixed(1)} | ${(r.copy / r.parse).toFixed(2)} |`,
  );
}
