'use strict';
// `node bench/investigations/wake-floor.js [--rounds=N] [--ticks=N]`
//
// What one wake-up of a thread costs it on this machine, whatever wakes it (issue 27: the fleet's
// wake-ups of the main thread cost 150–190 µs each, bench/README.md). Each figure is a thread's
// own CPU time (the scheduler's accounting) over `ticks` sleeps of 10 ms, divided by `ticks`:
//   python   a `time.sleep(0.01)` loop in Python (no event loop: the sleep and wake-up alone);
//   bare     an empty 10 ms `setInterval` tick in a Node.js process without this addon;
//   addon    the same with the addon loaded (its tokio runtime started);
//   hub      the same with an informer registry connected (its thread-safe function), as a
//            watcher has;
//   runtime  a registry connected and disconnected again: its thread-safe function released,
//            the tokio runtime that connecting started still running (it is process-wide).
// The variants run in fresh processes, interleaved, `rounds` times (default 5); medians. Nothing
// is sent anywhere.

const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { mainThreadCpuNs } = require('../../testbed/proc');

const MODES = ['python', 'bare', 'addon', 'hub', 'runtime'];

/**
 * The main thread's CPU for one wake-up that does nothing (a `ms` interval timer, `ticks` times),
 * in µs: the floor under any figure per change that costs a wake-up, which on a loaded machine
 * (or a VM) is far from nothing (the scheduler, cold caches).
 */
async function emptyWakeUpUs(ticks = 100, ms = 10) {
  const cpu0 = mainThreadCpuNs();
  await new Promise((resolve) => {
    let n = 0;
    const timer = setInterval(() => {
      if (++n < ticks) return;
      clearInterval(timer);
      resolve();
    }, ms);
  });
  return (mainThreadCpuNs() - cpu0) / 1000 / ticks;
}

/** In a child: the main thread's CPU per empty tick, in µs. */
async function tick(mode, ticks) {
  if (mode === 'addon' || mode === 'hub' || mode === 'runtime') {
    const native = require('../../packages/kube-watch-native/lib/native.js');
    if (mode !== 'addon') {
      const registry = new native.NativeRegistry();
      registry.connect(() => {});
      if (mode === 'runtime') registry.disconnect();
      globalThis.registry = registry;
    }
  }
  return emptyWakeUpUs(ticks);
}

function run(mode, ticks) {
  if (mode === 'python') {
    const script =
      'import time\n' +
      `n=${ticks}\nc=time.thread_time_ns()\n` +
      'for _ in range(n): time.sleep(0.01)\n' +
      'print((time.thread_time_ns()-c)/1000/n)\n';
    return Number(execFileSync('python3', ['-c', script], { encoding: 'utf8' }));
  }
  const out = execFileSync(process.execPath, [__filename, '--child', mode, String(ticks)], {
    encoding: 'utf8',
  });
  return Number(out);
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main(argv) {
  if (argv[0] === '--child') {
    process.stdout.write(String(await tick(argv[1], Number(argv[2]))));
    process.exit(0);
  }
  const opt = (name) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const rounds = Number(opt('rounds') ?? 5);
  const ticks = Number(opt('ticks') ?? 300);
  const results = Object.fromEntries(MODES.map((m) => [m, []]));
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? [...MODES].reverse() : MODES;
    for (const mode of order) results[mode].push(run(mode, ticks));
    process.stderr.write(`round ${r + 1}/${rounds}\n`);
  }
  console.log(`One 10 ms sleep's wake-up, the thread's own CPU (µs), ${rounds} rounds × ${ticks} ticks:`);
  console.log('| | median | rounds |');
  console.log('|---|---:|---|');
  for (const mode of MODES) {
    const xs = results[mode];
    console.log(`| ${mode} | ${median(xs).toFixed(1)} | ${xs.map((x) => x.toFixed(0)).join(', ')} |`);
  }
  console.log(`(node ${process.version}, ${path.basename(process.execPath)})`);
}

module.exports = { emptyWakeUpUs };

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
