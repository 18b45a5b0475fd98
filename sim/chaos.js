'use strict';

// A seeded chaos driver: writes objects at a steady pace while, at random points, the server
// cuts or cleanly ends every watch, drops every connection, fails the next requests with
// 5xx/429 (Retry-After), compacts its history (so resumes and continue tokens expire with
// 410), rotates the accepted token, or makes the next watch stall or break after a few events.
// The same seed replays the same sequence of writes and faults, so a failing run can be
// repeated by its seed.

const { seeded } = require('./random');

const FAULTS = ['cut', 'end', 'sockets', 'fail', 'compact', 'rotate', 'stall', 'cutNext'];

/**
 * @typedef {object} ChaosOptions
 * @property {number} seed required: the run replays from it
 * @property {number} [writes=2000] writes before the run is done
 * @property {string} [resource='configmaps'] what is written (a namespaced type)
 * @property {string[]} [namespaces=['default', 'team-a']]
 * @property {number} [names=40] distinct object names per namespace
 * @property {number} [intervalMs=2] pause between bursts of writes
 * @property {number} [maxBurst=4] writes per burst (1..maxBurst)
 * @property {number} [faultEvery=60] mean writes between faults
 * @property {string[]} [faults] which faults to use (default all of FAULTS; 'rotate' only with a token)
 * @property {(token: string) => void} [onRotate] told the new token after each rotation
 */

function checkOptions(options) {
  if (!options || !Number.isInteger(options.seed))
    throw new TypeError('startChaos: options.seed must be an integer');
  const faults = options.faults || FAULTS;
  for (const f of faults) {
    if (!FAULTS.includes(f))
      throw new TypeError(`startChaos: unknown fault "${f}" (known: ${FAULTS.join(', ')})`);
  }
  return faults;
}

/**
 * Starts a chaos run against `sim`.
 * @param {import('./index').Simulator} sim
 * @param {ChaosOptions} options
 * @returns {{seed: number, log: object[], done: Promise<{writes: number, faults: Record<string, number>}>, stop: () => void}}
 *   `log` lists every fault with the write count it came after; `done` resolves after the last write
 */
function startChaos(sim, options) {
  const faults = checkOptions(options).filter((f) => f !== 'rotate' || sim.options.token);
  const {
    seed,
    writes = 2000,
    resource = 'configmaps',
    namespaces = ['default', 'team-a'],
    names = 40,
    intervalMs = 2,
    maxBurst = 4,
    faultEvery = 60,
    onRotate = () => {},
  } = options;
  const random = seeded(seed);
  const pick = (list) => list[Math.floor(random() * list.length)];
  const log = [];
  const counts = {};
  let written = 0;
  let rotations = 0;
  let stopped = false;
  let timer = null;

  const write = () => {
    const namespace = pick(namespaces);
    const name = `chaos-${Math.floor(random() * names)}`;
    const existing = sim.get(resource, namespace, name);
    const value = Math.floor(random() * 1e9).toString(36);
    const labels = { app: pick(['web', 'api', 'worker']), tier: pick(['a', 'b']) };
    if (!existing) {
      sim.create(resource, {
        metadata: { name, namespace, labels },
        data: { value, written: String(written) },
      });
    } else if (random() < 0.2) {
      sim.remove(resource, namespace, name);
    } else {
      sim.patch(resource, namespace, name, (o) => {
        o.metadata.labels = labels;
        o.data = { ...o.data, value, written: String(written) };
      });
    }
    written++;
  };

  const fault = () => {
    if (faults.length === 0) return;
    const kind = pick(faults);
    const entry = { kind, afterWrites: written };
    if (kind === 'cut') sim.cutWatches();
    else if (kind === 'end') sim.endWatches();
    else if (kind === 'sockets') sim.destroySockets({ reset: random() < 0.5 });
    else if (kind === 'compact') sim.compact();
    else if (kind === 'fail') {
      entry.status = pick([500, 503, 429]);
      entry.count = 1 + Math.floor(random() * 3);
      entry.retryAfter = entry.status === 500 ? undefined : 1;
      sim.failNext(entry.count, entry.status, entry.retryAfter);
    } else if (kind === 'rotate') {
      rotations++;
      const token = `chaos-${seed}-${rotations}`;
      sim.rotateToken(token);
      onRotate(token);
    } else if (kind === 'stall') {
      entry.afterEvents = Math.floor(random() * 4);
      sim.nextWatchFault({ stallAfterEvents: entry.afterEvents });
    } else {
      entry.afterEvents = 1 + Math.floor(random() * 5);
      sim.nextWatchFault({ cutAfterEvents: entry.afterEvents });
    }
    counts[kind] = (counts[kind] || 0) + 1;
    log.push(entry);
    sim.emit('chaos', entry);
  };

  let finish;
  const done = new Promise((resolve) => {
    finish = resolve;
  });
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    sim.off('close', stop);
    finish({ writes: written, faults: counts });
  };
  const step = () => {
    if (stopped) return;
    const burst = 1 + Math.floor(random() * maxBurst);
    for (let i = 0; i < burst && written < writes; i++) {
      write();
      if (random() < 1 / faultEvery) fault();
    }
    if (written >= writes) stop();
    else timer = setTimeout(step, intervalMs);
  };
  sim.on('close', stop);
  timer = setTimeout(step, intervalMs);
  return { seed, log, done, stop };
}

module.exports = { startChaos, FAULTS };
