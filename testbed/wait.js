'use strict';
// Waits of the JS suite: a plain sleep, and waits that fail, naming what they waited for, instead
// of hanging.

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

/** Resolves once `predicate()` holds, polling; rejects after `ms`. */
async function until(predicate, ms, what) {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(5);
  }
}

/**
 * Resolves once `predicate()` holds, collecting garbage before each look; rejects after `ms`.
 * gc() is exposed without a command-line flag, so only the tests that call this get it.
 */
async function untilCollected(predicate, ms, what) {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  await until(
    () => {
      gc();
      return predicate();
    },
    ms,
    what,
  );
}

module.exports = { sleep, within, until, untilCollected };
