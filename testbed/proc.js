'use strict';
// What tests and benchmarks read of a process in /proc (Linux): this process's file descriptors,
// sockets and threads, its main thread's CPU to the nanosecond; another process's (a server, a
// backend, a browser) CPU by thread and RSS; and how busy the whole machine was.

const fs = require('node:fs');

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

/** A field of process `pid`'s /proc status in bytes (VmHWM, VmRSS …). */
function statusBytes(field, pid = 'self') {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : NaN;
}

/** Threads of this process. */
const threadCount = () => fs.readdirSync('/proc/self/task').length;

/** Open file descriptors of this process. */
const fdCount = () => fs.readdirSync('/proc/self/fd').length;

/** The inodes of this process's open sockets. */
function socketInodes() {
  const inodes = new Set();
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/self/fd/${fd}`));
      if (match) inodes.add(match[1]);
    } catch {
      // Closed while we looked (readdir's own fd does).
    }
  }
  return inodes;
}

/** A /proc stat file's command, parent and CPU seconds (utime + stime; USER_HZ is 100). */
function stat(file) {
  const text = fs.readFileSync(file, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const comm = text.slice(text.indexOf('(') + 1, text.lastIndexOf(')'));
  return { comm, parent: Number(fields[1]), cpu: (Number(fields[11]) + Number(fields[12])) / 100 };
}

/** CPU seconds of process `pid`'s thread `tid` (with tid = pid, its main thread), in 10 ms ticks. */
const threadCpu = (pid, tid = pid) => stat(`/proc/${pid}/task/${tid}/stat`).cpu;
/** CPU nanoseconds of one thread, from the scheduler's own account (no 10 ms ticks). */
const threadCpuNs = (pid, tid = pid) =>
  Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
/** CPU seconds of every thread of process `pid`; 0 once it is gone. */
function processCpu(pid) {
  try {
    return stat(`/proc/${pid}/stat`).cpu;
  } catch {
    return 0;
  }
}
/** RSS of process `pid`, in bytes. */
const rssBytes = (pid) => statusBytes('VmRSS', pid);

/** The CPU seconds of every process descended from `pid` whose command is `comm` (a browser's). */
function treeCpu(pid, comm) {
  const parents = new Map();
  const cpu = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let proc;
    try {
      proc = stat(`/proc/${entry}/stat`);
    } catch {
      continue; // gone meanwhile
    }
    parents.set(Number(entry), proc.parent);
    if (proc.comm.startsWith(comm)) cpu.set(Number(entry), proc.cpu);
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
  machineBusySeconds,
  mainThreadCpuNs,
  statusBytes,
  threadCount,
  fdCount,
  socketInodes,
  threadCpu,
  threadCpuNs,
  processCpu,
  rssBytes,
  treeCpu,
  resetPeakRss,
};
