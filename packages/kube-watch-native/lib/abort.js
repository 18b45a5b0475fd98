'use strict';
// One 'abort' listener per AbortSignal, shared by every watch and informer on it.
//
// One AbortController for all of a plugin's watches is the natural way to stop them at
// shutdown. Were each watch to add its own listener, the eleventh would make Node.js print
// `MaxListenersExceededWarning: Possible EventTarget memory leak detected` in the user's
// process, though nothing leaks. Raising the signal's limit (`events.setMaxListeners`) would
// change the user's object where they can see it, so instead the first subscriber on a signal
// adds the one listener, every subscriber after it joins that listener's set, and the last one
// to unsubscribe removes the listener: a long-lived signal holds nothing for watches that ended.
//
// The set holds its subscribers weakly, and each subscriber's owner holds it through the
// unsubscribe function: a generator abandoned without being finished stays collectable while
// its signal lives (its native watch is then cancelled by its finalizer), and the registry below
// takes its place out of the set.

/** @type {WeakMap<AbortSignal, { subscribers: Set<WeakRef<() => void>>, listener: () => void }>} */
const shared = new WeakMap();

/** Removes a collected subscriber's place; the last place gone takes the listener with it. */
const collected = new FinalizationRegistry(({ signalRef, ref }) => {
  const signal = signalRef.deref();
  if (signal !== undefined) leave(signal, shared.get(signal), ref);
});

/**
 * Calls `callback` once when `signal` aborts, for as long as the returned function is
 * reachable and has not been called: it unsubscribes (harmless more than once, and after the
 * abort), and the caller keeps it where it keeps what the callback acts on. The caller checks
 * `signal.aborted` first: like `addEventListener`, this does nothing for a signal that has
 * already aborted.
 * @param {AbortSignal} signal
 * @param {() => void} callback
 * @returns {() => void} unsubscribe
 */
function onAbort(signal, callback) {
  let entry = shared.get(signal);
  if (entry === undefined) {
    entry = sharedEntry(signal);
    shared.set(signal, entry);
    signal.addEventListener('abort', entry.listener, { once: true });
  }
  // A subscription of its own, so one callback subscribed twice is two subscriptions.
  const subscriber = () => callback();
  const ref = new WeakRef(subscriber);
  entry.subscribers.add(ref);
  collected.register(subscriber, { signalRef: new WeakRef(signal), ref }, ref);
  // Holding `subscriber` here is what keeps it alive for as long as this function is.
  let held = subscriber;
  return () => {
    if (held === null) return;
    held = null;
    collected.unregister(ref);
    leave(signal, entry, ref);
  };
}

/**
 * The set and the one listener for `signal`. Made apart from onAbort so the listener's closure
 * holds none of the first subscriber's variables (which would keep that subscriber alive).
 */
function sharedEntry(signal) {
  const subscribers = new Set();
  const listener = () => {
    shared.delete(signal);
    // Every subscriber is told even if one throws; the first error is reported as an
    // EventTarget listener's would be (an uncaught exception, after the others ran).
    let failure = null;
    for (const ref of subscribers) {
      collected.unregister(ref);
      try {
        ref.deref()?.();
      } catch (err) {
        failure ??= { err };
      }
    }
    subscribers.clear();
    if (failure !== null)
      process.nextTick(() => {
        throw failure.err;
      });
  };
  return { subscribers, listener };
}

/** Takes `ref`'s place out of `entry` (the signal's current one, or a dispatched or gone one). */
function leave(signal, entry, ref) {
  if (entry === undefined || shared.get(signal) !== entry || !entry.subscribers.delete(ref)) return;
  if (entry.subscribers.size === 0) {
    shared.delete(signal);
    signal.removeEventListener('abort', entry.listener);
  }
}

module.exports = { onAbort };
