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

/** @type {WeakMap<AbortSignal, { callbacks: Set<() => void>, listener: () => void }>} */
const shared = new WeakMap();

/**
 * Calls `callback` once when `signal` aborts, until the returned function unsubscribes it
 * (harmless to call more than once, and after the abort). The caller checks `signal.aborted`
 * first: like `addEventListener`, this does nothing for a signal that has already aborted.
 * @param {AbortSignal} signal
 * @param {() => void} callback
 * @returns {() => void} unsubscribe
 */
function onAbort(signal, callback) {
  let entry = shared.get(signal);
  if (entry === undefined) {
    const callbacks = new Set();
    const listener = () => {
      shared.delete(signal);
      // Every subscriber is told even if one throws; the first error is reported as an
      // EventTarget listener's would be (an uncaught exception, after the others ran).
      let failure = null;
      for (const subscriber of callbacks) {
        try {
          subscriber();
        } catch (err) {
          failure ??= { err };
        }
      }
      callbacks.clear();
      if (failure !== null)
        process.nextTick(() => {
          throw failure.err;
        });
    };
    entry = { callbacks, listener };
    shared.set(signal, entry);
    signal.addEventListener('abort', listener, { once: true });
  }
  // A subscription of its own, so one callback subscribed twice is two subscriptions.
  const subscriber = () => callback();
  entry.callbacks.add(subscriber);
  return () => {
    const current = shared.get(signal);
    if (current !== entry || !entry.callbacks.delete(subscriber)) return;
    if (entry.callbacks.size === 0) {
      shared.delete(signal);
      signal.removeEventListener('abort', entry.listener);
    }
  };
}

module.exports = { onAbort };
