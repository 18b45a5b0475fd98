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
  const settings = withDefaults(options);
  const { seed, writes, intervalMs, maxBurst, faultEvery } = settings;
  const random = seeded(seed);
  const run = {
    sim,
    settings,
    faults,
    random,
    pick: (list) => list[Math.floor(random() * list.length)],
    log: [],
    counts: {},
    watchesBroken: 0,
    cutPending: false,
    lastCut: null,
    // Every kind once first (a 'fail' per status), in a seeded order; then at random.
    cover: shuffle(
      faults.flatMap((f) => (f === 'fail' ? FAIL_STATUSES.map((s) => [f, s]) : [[f]])),
      random,
    ),
    written: 0,
    rotations: 0,
  };
  run.cutStarted = () => cutStartedWatch(run);
  const firstRequest = sim.requests.length;
  let stopped = false;
  let timer = null;

  let finish;
  const done = new Promise((resolve) => {
    finish = resolve;
  });
  const stop = () => {
    stopped = true;
    clearTimeout(timer);
    sim.off('close', stop);
    finish({ writes: run.written, faults: run.counts });
  };
  const step = () => {
    if (stopped) return;
    const burst = 1 + Math.floor(random() * maxBurst);
    for (let i = 0; i < burst && run.written < writes; i++) {
      write(run);
      if (random() < 1 / faultEvery) fault(run);
    }
    if (run.written >= writes) stop();
    else timer = setTimeout(step, intervalMs);
  };
  const happened = () => {
    const answered = {};
    for (const r of sim.requests.slice(firstRequest)) {
      if (r.status >= 400) answered[r.status] = (answered[r.status] || 0) + 1;
    }
    return { watchesBroken: run.watchesBroken, rotations: run.rotations, answered };
  };
  sim.on('close', stop);
  timer = setTimeout(step, intervalMs);
  return { seed, log: run.log, done, happened, stop };
}

function withDefaults(options) {
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
  return { seed, writes, resource, namespaces, names, intervalMs, maxBurst, faultEvery, onRotate };
}

/** Shuffles `list` in place with `random` (Fisher-Yates), so a seed gives one order. */
function shuffle(list, random) {
  for (let i = list.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [list[i], list[j]] = [list[j], list[i]];
  }
  return list;
}

/** Creates, patches or removes one object of the run's resource. */
function write(run) {
  const { sim, random, pick } = run;
  const { resource, namespaces, names } = run.settings;
  const namespace = pick(namespaces);
  const name = `chaos-${Math.floor(random() * names)}`;
  const existing = sim.get(resource, namespace, name);
  const value = Math.floor(random() * 1e9).toString(36);
  const labels = { app: pick(['web', 'api', 'worker']), tier: pick(['a', 'b']) };
  if (!existing) {
    sim.create(resource, {
      metadata: { name, namespace, labels },
      data: { value, written: String(run.written) },
    });
  } else if (random() < 0.2) {
    sim.remove(resource, namespace, name);
  } else {
    sim.patch(resource, namespace, name, (o) => {
      o.metadata.labels = labels;
      o.data = { ...o.data, value, written: String(run.written) };
    });
  }
  run.written++;
}

/** Injects the next fault of the run, logs it and tells the simulator's 'chaos' listeners. */
function fault(run) {
  if (run.faults.length === 0) return;
  const [kind, status] = run.cover.length ? run.cover.shift() : [run.pick(run.faults)];
  const entry = { kind, afterWrites: run.written };
  APPLY[kind](run, entry, status);
  run.counts[kind] = (run.counts[kind] || 0) + 1;
  run.log.push(entry);
  run.sim.emit('chaos', entry);
}

/** What each fault does to the simulator; it notes on `entry` what the log should show. */
const APPLY = {
  cut(run, entry) {
    entry.watches = run.sim.cutWatches();
    run.watchesBroken += entry.watches;
    // A cut while the client waits between watches breaks nothing; until one has, break
    // each next watch once it has started (outside the seeded sequence, which stays the same).
    run.lastCut = entry;
    if (run.watchesBroken === 0 && !run.cutPending) {
      run.cutPending = true;
      run.sim.on('watchStart', run.cutStarted);
    }
  },
  end: (run) => run.sim.endWatches(),
  sockets: (run) => run.sim.destroySockets({ reset: run.random() < 0.5 }),
  compact: (run) => run.sim.compact(),
  expire(run) {
    // The watches miss a write, then the history it is in is gone: their resume is 410.
    run.sim.cutWatches();
    if (run.written < run.settings.writes) write(run);
    run.sim.compact();
  },
  fail(run, entry, status) {
    entry.status = status ?? run.pick(FAIL_STATUSES);
    entry.count = 1 + Math.floor(run.random() * 3);
    entry.retryAfter = entry.status === 500 ? undefined : 1;
    run.sim.failNext(entry.count, entry.status, entry.retryAfter);
  },
  rotate(run) {
    run.rotations++;
    const token = `chaos-${run.settings.seed}-${run.rotations}`;
    run.sim.rotateToken(token);
    run.settings.onRotate(token);
  },
  stall(run, entry) {
    entry.afterEvents = Math.floor(run.random() * 4);
    run.sim.nextWatchFault({ stallAfterEvents: entry.afterEvents });
  },
  cutNext(run, entry) {
    entry.afterEvents = 1 + Math.floor(run.random() * 5);
    run.sim.nextWatchFault({ cutAfterEvents: entry.afterEvents });
  },
};

/** Breaks the watch just started, until a cut has broken one ('watchStart' listener of a cut). */
function cutStartedWatch(run) {
  setImmediate(() => {
    if (run.watchesBroken > 0) return;
    const broken = run.sim.cutWatches();
    run.lastCut.watches += broken;
    run.watchesBroken += broken;
    if (broken > 0) run.sim.off('watchStart', run.cutStarted);
  });
}

module.exports = { startChaos, FAULTS, FAIL_STATUSES };
