'use strict';
// The child processes a benchmark starts (servers, workers), killed when it exits or is
// interrupted, so that no simulated cluster outlives the run that started it.

const { fork } = require('node:child_process');
const path = require('node:path');

const children = new Set();

/** Remembers child process `c` until it exits; returns it. */
function track(c) {
  children.add(c);
  c.on('exit', () => children.delete(c));
  return c;
}

/** Kills every child still running. */
function killAll() {
  children.forEach((c) => c.kill('SIGKILL'));
}

/** Ends a benchmark that failed: prints `err`, kills every child, exits 1. */
function failRun(err) {
  console.error(err);
  killAll();
  process.exit(1);
}

process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(sig, () => {
    console.error(`\n${sig}: stopping`);
    killAll();
    process.exit(130);
  });
}

/**
 * A tracked child running `file` of bench/ with `args`, answering requests by id over IPC:
 * `ready` resolves with its { type: 'ready' } message (rejects if it exits first, or after
 * `startMs`), `request(msg)` with the answer that carries the id it was sent with.
 */
function child(file, args, { startMs = 180_000 } = {}) {
  const proc = track(
    fork(path.join(__dirname, file), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );
  const pending = new Map();
  let nextId = 0;
  const ready = new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${file} did not start`)), startMs);
    proc.on('message', (msg) => {
      if (msg.type === 'ready') (clearTimeout(t), resolve(msg));
      else pending.get(msg.id)?.(msg);
    });
    proc.on('exit', (code) => reject(new Error(`${file} exited (${code})`)));
  });
  const request = (msg) =>
    new Promise((resolve) => {
      const id = ++nextId;
      pending.set(id, (m) => (pending.delete(id), resolve(m)));
      proc.send({ ...msg, id });
    });
  return { proc, ready, request };
}

module.exports = { track, killAll, failRun, child };
