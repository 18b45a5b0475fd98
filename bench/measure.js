'use strict';
// What the benchmarks measure of a process, all of /proc read here: a worker's own CPU (process
// and main thread), event-loop utilisation and delay, RSS (sampled every 5 ms, settled after
// collections, and the kernel's high-water mark) and native threads; another process's (a server,
// a backend, a browser) CPU by thread and RSS; and how busy the whole machine was.

const fs = require('node:fs');
const { performance, monitorEventLoopDelay } = require('node:perf_hooks');

const MiB = 1024 * 1024;

/** Seconds of CPU the whole machine has been busy since boot (/proc/stat, all but idle/iowait). */
function machineBusySeconds() {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + steal) / 100; // USER_HZ
}

const nap = new Int32Array(new SharedArrayBuffer(4));

/**
 * Nanoseconds the main thread (tid = pid) has spent on a CPU (Linux schedstat, field 1).
 * The kernel brings a running thread's figure up to date only when it is switched out (or at a
 * tick, 4 ms here), so a thread that reads its own would see a value up to a tick stale; a 20 µs
 * futex nap first makes the figure exact (it costs wall time, no CPU).
 */
function mainThreadCpuNs() {
  Atomics.wait(nap, 0, 0, 0.02);
  return threadCpuNs('self', process.pid);
}

/** A field of /proc/self/status in bytes (VmHWM, VmRSS …). */
function statusBytes(field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

/** Threads of this process. */
function threadCount() {
  try {
    return fs.readdirSync('/proc/self/task').length;
  } catch {
    return NaN;
  }
}

/** Samples RSS every `everyMs` on the event loop (VmHWM catches what a blocked loop misses). */
class RssSampler {
  constructor(everyMs = 5, onSample) {
    this.peak = process.memoryUsage.rss();
    this.timer = setInterval(() => {
      const rss = process.memoryUsage.rss();
      if (rss > this.peak) this.peak = rss;
      onSample?.(rss);
    }, everyMs);
    this.timer.unref();
  }

  stop() {
    clearInterval(this.timer);
    return Math.max(this.peak, process.memoryUsage.rss(), statusBytes('VmHWM'));
  }
}

/** One measurement window: start() at the first measured event, stop(n) after the last. */
class Window {
  /** @param {{ eld?: boolean }} [options] eld: watch the event-loop delay (a 1 ms timer) */
  constructor({ eld = true } = {}) {
    this.eld = eld ? monitorEventLoopDelay({ resolution: 1 }) : null;
  }

  start() {
    this.eld?.reset();
    this.eld?.enable();
    this.t0 = performance.now();
    this.cpu0 = process.cpuUsage();
    this.main0 = mainThreadCpuNs();
    this.elu0 = performance.eventLoopUtilization();
  }

  /** @param {number} events measured events */
  stop(events) {
    const seconds = (performance.now() - this.t0) / 1000;
    const cpu = process.cpuUsage(this.cpu0);
    const mainNs = mainThreadCpuNs() - this.main0;
    const elu = performance.eventLoopUtilization(this.elu0);
    this.eld?.disable();
    const has = this.eld?.count > 0;
    const pct = (p) => (has ? this.eld.percentile(p) / 1e6 : NaN);
    return {
      events,
      seconds,
      eventsPerSec: events / seconds,
      cpuUsPerEvent: (cpu.user + cpu.system) / events,
      mainUsPerEvent: mainNs / 1000 / events,
      elu: elu.utilization,
      eldP50Ms: pct(50),
      eldP99Ms: pct(99),
      eldMaxMs: has ? this.eld.max / 1e6 : NaN,
    };
  }
}

/** RSS after a few full collections, when `--expose-gc` allows them. */
async function settledRss() {
  for (let i = 0; i < 3 && globalThis.gc; i++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 50));
  }
  return process.memoryUsage.rss();
}

/** utime + stime of a /proc stat line, in seconds. */
function statCpu(file) {
  const stat = fs.readFileSync(file, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // USER_HZ
}

/** CPU seconds of process `pid`'s thread `tid` (with tid = pid, its main thread), in 10 ms ticks. */
const threadCpu = (pid, tid = pid) => statCpu(`/proc/${pid}/task/${tid}/stat`);
/** CPU nanoseconds of one thread, from the scheduler's own account (no 10 ms ticks). */
const threadCpuNs = (pid, tid = pid) =>
  Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
/** CPU seconds of every thread of process `pid`; 0 once it is gone. */
function processCpu(pid) {
  try {
    return statCpu(`/proc/${pid}/stat`);
  } catch {
    return 0;
  }
}
/** RSS of process `pid`, in bytes. */
const rssBytes = (pid) =>
  Number(/VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;

/** The CPU seconds of every process descended from `pid` whose command is `comm` (a browser's). */
function treeCpu(pid, comm) {
  const parents = new Map();
  const cpu = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    parents.set(Number(entry), Number(fields[1]));
    if (name.startsWith(comm)) cpu.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / 100);
  }
  const descends = (p) => {
    for (let q = parents.get(p); q !== undefined && q > 1; q = parents.get(q)) if (q === pid) return true;
    return false;
  };
  let total = 0;
  for (const [p, seconds] of cpu) if (descends(p)) total += seconds;
  return total;
}

/** Resets VmHWM to the current RSS (Linux: `5` into clear_refs); false where unsupported. */
function resetPeakRss() {
  try {
    fs.writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

module.exports = {
  MiB,
  machineBusySeconds,
  mainThreadCpuNs,
  statusBytes,
  threadCount,
  settledRss,
  threadCpu,
  threadCpuNs,
  processCpu,
  rssBytes,
  treeCpu,
  resetPeakRss,
  RssSampler,
  Window,
};
