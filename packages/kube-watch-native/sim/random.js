'use strict';

// mulberry32: a tiny seedable generator, so a seeded workload (or benchmark) replays the same
// objects in every process.

/**
 * @param {number} seed
 * @returns {() => number} uniform numbers in [0, 1)
 */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

module.exports = { seeded };
