'use strict';
// The parent's end of the one protocol between a benchmark and the processes it starts (the
// messages are in bench/child.js): servers (`child`, `cluster`) and one-measurement workers
// (`work`). Every child is killed when the benchmark exits, fails or is interrupted, so that no
// simulated cluster outlives the run that started it.

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

const forkTracked = (file, args, execArgv = []) =>
  track(
    fork(path.resolve(__dirname, file), args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] }),
  );

/**
 * A server child running `file` (relative to bench/) with `args`: `ready` resolves with its
 * ready message (rejects if it exits first, or after `startMs`); `request(msg)` with the answer
 * carrying the id it was sent with (rejects after `answerMs`, when given); `stop()`; `exited`
 * resolves with its exit code once it is gone.
 */
function child(file, args, { startMs = 180_000, answerMs, execArgv, name = file } = {}) {
  const proc = forkTracked(file, args, execArgv);
  const pending = new Map();
  let nextId = 0;
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal)));
  const ready = new Promise((resolve, reject) => {
    const t = setTimeout(
      () => reject(new Error(`${name} did not start within ${startMs / 1000} s`)),
      startMs,
    );
    proc.on('message', (msg) => {
      if (msg.type === 'ready') (clearTimeout(t), resolve(msg));
      else pending.get(msg.id)?.(msg);
    });
    exited.then((code) => reject(new Error(`${name} exited (${code})`)));
  });
  const request = (msg) =>
    new Promise((resolve, reject) => {
      const id = ++nextId;
      const t =
        answerMs && setTimeout(() => reject(new Error(`${name} did not answer ${msg.cmd}`)), answerMs);
      pending.set(id, (m) => (clearTimeout(t), pending.delete(id), resolve(m)));
      proc.send({ ...msg, id });
    });
  const stop = () => proc.connected && proc.send({ cmd: 'stop' });
  return { proc, ready, request, stop, exited };
}

/** A process of simulated clusters of `kind` (bench/clusters/<kind>.js) made with `config`. */
const cluster = (kind, config, options) =>
  child('clusters/index.js', [kind, JSON.stringify(config)], { name: `${kind} clusters`, ...options });

/**
 * One measurement in a fresh worker process running `file` with `config`: its asks are answered
 * with `onAsk(msg)`, its other messages go to `onMessage(msg, proc)`. Resolves, once the worker
 * has exited, with its result, or `{ error: { detail } }` when it exits without one or is still
 * running after `timeoutMs` (it is killed then; and 5 s after a result it did not exit with).
 */
function work(file, config, { timeoutMs = 600_000, execArgv, onAsk, onMessage } = {}) {
  const proc = forkTracked(file, ['--worker', JSON.stringify(config)], execArgv);
  return new Promise((resolve) => {
    let result;
    let grace;
    const kill = (ms, detail) =>
      setTimeout(() => {
        result ??= { error: { detail } };
        proc.kill('SIGKILL');
      }, ms);
    const timer = kill(timeoutMs, `timed out after ${timeoutMs} ms`);
    proc.on('message', async (msg) => {
      if (msg.type === 'result') {
        result = msg.result;
        clearTimeout(timer);
        grace = kill(5000);
      } else if (msg.type === 'ask') {
        const answer = await onAsk(msg);
        if (proc.connected) proc.send({ id: msg.id, answer });
      } else onMessage?.(msg, proc);
    });
    proc.on('exit', (code, signal) => {
      clearTimeout(timer);
      clearTimeout(grace);
      resolve(result ?? { error: { detail: `worker exited (${code ?? signal}) without a result` } });
    });
  });
}

module.exports = { track, killAll, failRun, child, cluster, work };
