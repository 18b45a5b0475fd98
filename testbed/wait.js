'use strict';
// Waits of the tests and benchmarks: a plain sleep, and waits that fail, naming what they waited
// for, instead of hanging.

const { performance } = require('node:perf_hooks');
const v8 = require('node:v8');
const vm = require('node:vm');

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** `promise`, or a rejection naming `what` after `ms`. */
async function within(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The one way the tests and benchmarks wait for a condition: resolves with the first truthy value
 * of `check()` (sync or async), looking every `everyMs`; rejects naming `what` after `ms`, on the
 * monotonic clock (a wall clock stepped under a test is no timeout).
 * @template T
 * @param {() => T | Promise<T>} check
 * @param {{ ms?: number, what?: string, everyMs?: number }} [options]
 * @returns {Promise<T>}
 */
async function until(check, { ms = 10_000, what = 'the condition', everyMs = 10 } = {}) {
  const deadline = performance.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * As until(), collecting garbage before each look. gc() is exposed without a command-line flag,
 * so only the tests that call this get it.
 */
function untilCollected(check, options) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  return until(() => {
    gc();
    return check();
  }, options);
}

module.exports = { sleep, within, until, untilCollected };
