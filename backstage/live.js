'use strict';
// The live Kubernetes tab's backend half: who is looking at which entity, and a coalesced
// "look again" signal to each of them when something their answer depends on changes.
//
// The fetcher knows which informers (watch keys: one per informer, selector and namespace) an
// answer was made from; the objects provider (./live-provider.js) knows who asked and for which
// entity, and runs the default provider inside `liveRequestContext` so the fetcher can join the
// two with `viewed(...)`. When an informer sees a change, the fetcher calls `changed(watchKey)`
// and every recent viewer of an entity that depends on it gets a signal on
// `kubernetes:<entityRef>`: `{ clusters, at, id }` (`id`: the change's identity, the same on every
// replica that saw it), never object data. The browser then refetches
// through the usual permission-checked route, so the push reveals nothing the user could not load.
//
// Pure: no I/O but `signals.publish`, time from an injected `now`, timers from an injected
// `setTimer`, so every path runs under a fake clock in __test__/backstage-live.test.js.

const { LivePublisher } = require('./live-publisher');
const { liveRequestContext, answerNotLive, answerFollowed, isLiveAnswer } = require('./live-context');

/** The signals channel of an entity's Kubernetes tab; the frontend subscribes to the same name. */
const channelOf = (entityRef) => `kubernetes:${entityRef}`;

/** A timer that does not keep the process alive; returns its cancel function. */
function defaultSetTimer(fn, ms) {
  const timer = setTimeout(fn, ms);
  timer.unref?.();
  return () => clearTimeout(timer);
}

/** The publisher's options when not given (see createLivePublisher). */
const DEFAULTS = {
  viewerTtlMs: 600_000,
  maxViewers: 10_000,
  maxViewersPerUser: 200,
  minIntervalMs: 250,
  registryWaitMs: 500,
  now: Date.now,
  setTimer: defaultSetTimer,
  registry: null,
  share: true,
};

/**
 * Publishes a coalesced signal to each recent viewer of an entity whose answer depends on a
 * changed watch key.
 *
 * A signal asks for one reload: a viewer is signalled at most once per load it was answered
 * (its next load registers it again), so a viewer refused since (a permission policy changed, a
 * token revoked), or whose tab has closed, hears nothing more. Every viewer within the bounds is
 * followed, and none is dropped silently: a user past `maxViewersPerUser` loses their oldest
 * viewer, which is signalled once so that its tab reloads (and is answered as not live if it
 * cannot be followed again); past `maxViewers` a new viewer is not registered, and its load
 * says so (`viewed` returns false: the frontend polls it).
 *
 * @param {object} options
 * @param {{ publish(signal: object): Promise<void> | void }} options.signals `signalsServiceRef`'s service
 * @param {{ warn(message: string): void }} [options.logger]
 * @param {number} [options.viewerTtlMs] how long a load keeps its viewer signalled (10 min)
 * @param {number} [options.maxViewers] (user, entity) pairs followed at most (10 000)
 * @param {number} [options.maxViewersPerUser] pairs of one user followed at most (200)
 * @param {number} [options.minIntervalMs] at most one claim that signals anyone per entity per this (250 ms)
 * @param {number} [options.registryWaitMs] a load waits this long at most for its own row in the
 *   shared registry (500 ms); past it, its answer is not live
 * @param {() => number} [options.now] the clock, in ms
 * @param {(fn: () => void, ms: number) => () => void} [options.setTimer] schedules `fn`; returns its cancel
 * @param {ReturnType<import('./registry').createViewerRegistry>} [options.registry] the replicas'
 *   registry in the plugin's database: with `share`, the viewers' rows are kept there rather than
 *   in this replica's memory, and a change claims them whichever replica answered their loads
 *   (./live-shared.js, the same rules over either store); without `share` (no bus between
 *   replicas), it only counts the replicas, and while another is alive no viewer is followed:
 *   its answer is polled
 * @param {boolean} [options.share] whether signals reach every replica (the events bus)
 */
function createLivePublisher(options = {}) {
  const settings = { ...options };
  // As a parameter's default would: an option given as undefined is not given.
  for (const [name, value] of Object.entries(DEFAULTS)) {
    if (settings[name] === undefined) settings[name] = value;
  }
  if (!settings.signals || typeof settings.signals.publish !== 'function') {
    throw new TypeError('createLivePublisher: options.signals must have a publish() method');
  }
  for (const name of ['viewerTtlMs', 'maxViewers', 'maxViewersPerUser', 'minIntervalMs', 'registryWaitMs']) {
    const value = settings[name];
    if (!Number.isFinite(value) || value < 0) {
      throw new TypeError(`createLivePublisher: options.${name} must be a finite number >= 0`);
    }
  }
  const publisher = new LivePublisher({ ...settings, channelOf });
  // A plain object whose methods need no `this`: a caller may pass one on, or wrap the
  // publisher (Object.create) to stand in for some of them.
  return {
    viewed: (userEntityRef, entityRef, watchKeys, answered) =>
      publisher.viewed(userEntityRef, entityRef, watchKeys, answered),
    settled: () => publisher.settled(),
    answered: (context) => publisher.answered(context),
    orphaned: (rows) => publisher.orphaned(rows),
    unheard: (rows) => publisher.unheard(rows),
    changed: (watchKey, what) => publisher.changed(watchKey, what),
    forget: (userEntityRef, entityRef) => publisher.forget(userEntityRef, entityRef),
    watching: (watchKey) => publisher.watching(watchKey),
    get size() {
      return publisher.size;
    },
    counts: () => publisher.counts(),
    close: () => publisher.close(),
  };
}

module.exports = {
  createLivePublisher,
  liveRequestContext,
  channelOf,
  answerNotLive,
  answerFollowed,
  isLiveAnswer,
};
