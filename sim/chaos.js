'use strict';

// A seeded chaos driver: writes objects at a steady pace while, at random points, the server
// cuts or cleanly ends every watch, drops every connection, fails the next requests with
// 5xx/429 (Retry-After), compacts its history (so resumes and continue tokens expire with
// 410), breaks the watches and compacts past a write they missed (so the resume is 410 for
// sure), rotates the accepted token, or makes the next watch stall or break after a few events.
// The same seed replays the same sequence of writes and faults, so a failing run can be
// repeated by its seed. The first faults go once through every kind (each failure status
// too), in a seeded order, so that every run has each kind; `happened()` then says what the
// server actually did (watches broken, statuses answered) for a test to check.

const { seeded } = require('./random');

const FAULTS = ['cut', 'end', 'sockets', 'fail', 'compact', 'expire', 'rotate', 'stall', 'cutNext'];
/** The statuses a 'fail' fault answers with (Retry-After: 1 with the 503 and 429). */
const FAIL_STATUSES = [500, 503, 429];

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
 * @typedef {object} Happened what the faults did at the server so far
 * @property {number} watchesBroken open watches broken by 'cut' (until one is, a cut that found
 *   none breaks each next watch once it has started)
 * @property {number} rotations token rotations
 * @property {Record<number, number>} answered requests since the start by the error status they
 *   were answered with (5xx and 429 from 'fail', 401 after a rotation, 410 for an expired
 *   continue token or with `expiredAs: 'status'`)
 */

/**
 * Starts a chaos run against `sim`.
 * @param {import('./index').Simulator} sim
 * @param {ChaosOptions} options
 * @returns {{seed: number, log: object[], done: Promise<{writes: number, faults: Record<string, number>}>,
 *   happened: () => Happened, stop: () => void}}
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
  const firstRequest = sim.requests.length;
  let watchesBroken = 0;
  let cutPending = false;
  let lastCut = null;
  // Every kind once first (a 'fail' per status), in a seeded order; then at random.
  const cover = faults.flatMap((f) => (f === 'fail' ? FAIL_STATUSES.map((s) => [f, s]) : [[f]]));
  for (let i = cover.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [cover[i], cover[j]] = [cover[j], cover[i]];
  }
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

  const cutStarted = () =>
    setImmediate(() => {
      if (watchesBroken > 0) return;
      const broken = sim.cutWatches();
      lastCut.watches += broken;
      watchesBroken += broken;
      if (broken > 0) sim.off('watchStart', cutStarted);
    });

  const fault = () => {
    if (faults.length === 0) return;
    const [kind, status] = cover.length ? cover.shift() : [pick(faults)];
    const entry = { kind, afterWrites: written };
    if (kind === 'cut') {
      entry.watches = sim.cutWatches();
      watchesBroken += entry.watches;
      // A cut while the client waits between watches breaks nothing; until one has, break
      // each next watch once it has started (outside the seeded sequence, which stays the same).
      lastCut = entry;
      if (watchesBroken === 0 && !cutPending) {
        cutPending = true;
        sim.on('watchStart', cutStarted);
      }
    } else if (kind === 'end') sim.endWatches();
    else if (kind === 'sockets') sim.destroySockets({ reset: random() < 0.5 });
    else if (kind === 'compact') sim.compact();
    else if (kind === 'expire') {
      // The watches miss a write, then the history it is in is gone: their resume is 410.
      sim.cutWatches();
      if (written < writes) write();
      sim.compact();
    } else if (kind === 'fail') {
      entry.status = status ?? pick(FAIL_STATUSES);
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
  const happened = () => {
    const answered = {};
    for (const r of sim.requests.slice(firstRequest)) {
      if (r.status >= 400) answered[r.status] = (answered[r.status] || 0) + 1;
    }
    return { watchesBroken, rotations, answered };
  };
  sim.on('close', stop);
  timer = setTimeout(step, intervalMs);
  return { seed, log, done, happened, stop };
}

module.exports = { startChaos, FAULTS, FAIL_STATUSES };
