'use strict';
// What a benchmark's worker measures about itself (its /proc readers are testbed/proc.js's): CPU
// (process and main thread), event-loop utilisation and delay over a window of events, and RSS
// (sampled every 5 ms, settled after collections, and the kernel's high-water mark).

const { performance, monitorEventLoopDelay } = require('node:perf_hooks');
const { mainThreadCpuNs, statusBytes } = require('../testbed/proc');

const MiB = 1024 * 1024;

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

module.exports = { MiB, settledRss, RssSampler, Window };
