'use strict';
// A fixture script run in a child Node process, for the suites that check what keeps a process
// alive: its stdout lines with their arrival times, its stderr, and its exit, which must come
// soon after it let go of its watches. A child still running after `killMs` is killed, so a hung
// one fails its test instead of hanging the run.

const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const readline = require('node:readline');
const { until } = require('../testbed/wait');

/** A child still running this long after it let go of everything is kept alive by something. */
const EXIT_MS = 3000;

/**
 * Runs `node ...args`. The handle records stdout lines as `{ text, at }`; `exited` resolves with
 * `{ code, signal, at, killed }`.
 * @param {string[]} args the script and its arguments
 * @param {{ killMs: number, stdin?: 'ignore' | 'pipe' }} options
 */
function startFixture(args, { killMs, stdin = 'ignore' }) {
  const child = spawn(process.execPath, args, { stdio: [stdin, 'pipe', 'pipe'] });
  const handle = { child, lines: [], stderr: '', killed: false };
  readline
    .createInterface({ input: child.stdout })
    .on('line', (text) => handle.lines.push({ text, at: Date.now() }));
  child.stderr.on('data', (chunk) => {
    handle.stderr += chunk;
  });
  const killer = setTimeout(() => {
    handle.killed = true;
    child.kill('SIGKILL');
  }, killMs);
  handle.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, at: Date.now(), killed: handle.killed });
    });
  });
  handle.alive = () => child.exitCode === null && child.signalCode === null;
  handle.texts = () => handle.lines.map((l) => l.text);
  /** The first stdout line equal to `text`, waiting up to `ms`. */
  handle.line = async (text, ms = 5000) => {
    await until(() => handle.lines.some((l) => l.text === text) || !handle.alive(), {
      ms: ms,
      what: `child line "${text}"`,
    });
    const found = handle.lines.find((l) => l.text === text);
    assert.ok(
      found,
      `child exited without printing "${text}"; stdout: ${handle.texts().join(' | ')}; stderr: ${handle.stderr}`,
    );
    return found;
  };
  return handle;
}

/** Asserts the child exits cleanly within EXIT_MS of `since` (a timestamp); `what` names the case. */
async function assertExitsBy(handle, since, what) {
  const exit = await handle.exited;
  assert.equal(
    exit.killed,
    false,
    `${what}: the child had to be killed; stdout: ${handle.texts().join(' | ')}`,
  );
  assert.equal(exit.code, 0, `${what}: exit code ${exit.code}; stderr: ${handle.stderr}`);
  const took = exit.at - since;
  assert.ok(took < EXIT_MS, `${what}: the child exited ${took} ms after letting go of its watches`);
}

module.exports = { startFixture, assertExitsBy };
