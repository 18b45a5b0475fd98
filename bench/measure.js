'use strict';
// What a worker measures about itself: CPU (process and main thread), event-loop utilization
// and delay, RSS (sampled every 5 ms, and the kernel's high-water mark), native threads.

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
  try {
    return Number(fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return NaN;
  }
}

/**
 * The main thread's CPU for one wake-up that does nothing (a `ms` interval timer, `ticks` times),
 * in µs: the floor under any figure per change that costs a wake-up, which on a loaded machine
 * (or a VM) is far from nothing (the scheduler, cold caches; see bench/investigations/wake-floor.js).
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

/** A field of /proc/self/status in bytes (VmHWM, VmRSS …). */
function statusBytes(field) {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

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
  emptyWakeUpUs,
  statusBytes,
  threadCount,
  resetPeakRss,
  RssSampler,
  Window,
};
