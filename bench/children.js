'use strict';
// The child processes a benchmark starts (servers, workers), killed when it exits or is
// interrupted, so that no simulated cluster outlives the run that started it.

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

process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => (killAll(), process.exit(130)));

module.exports = { track, killAll };
