'use strict';
// One retry line per cluster, not per object type: when a cluster goes down, each of its
// informers (one per type: 13 by default, more with custom resources) warns of its failure and of
// each retry. Through this logger the first such warning of a cluster in a window is logged as it
// is; the others of that window are counted, and one line at the window's end says how many there
// were and of which types. Every other message passes through untouched, at once.

/** How long one cluster's retry warnings are gathered into one line. */
const WINDOW_MS = 30_000;

// The watcher's informer warnings: `informer of <path> on cluster '<name>': …; retrying in 0.8 s`.
const RETRY = /^informer of (\S+) on cluster '([^']*)': .*; retrying in [\d.]+ s$/s;

/** The object type of an informer's resource path (`/apis/apps/v1/namespaces/x/deployments` → deployments). */
const typeOf = (resourcePath) => resourcePath.split('/').filter(Boolean).at(-1) ?? resourcePath;

/**
 * `logger`, with the informers' retry warnings gathered per cluster over `windowMs`.
 * @param {{ warn(m: string, meta?: object): void, info(m: string, meta?: object): void, error(m: string, meta?: object): void, debug(m: string, meta?: object): void, child?: Function }} logger
 * @param {{ windowMs?: number }} [options]
 */
function clusterRetryLogger(logger, { windowMs = WINDOW_MS } = {}) {
  /** Per cluster: the window's end timer, the warnings held back and their types. */
  const windows = new Map();
  const close = (cluster) => {
    const window = windows.get(cluster);
    windows.delete(cluster);
    if (window.held === 0) return;
    const types = [...window.types].sort().join(', ');
    logger.warn(
      `${window.held} more informer retry warning(s) on cluster '${cluster}' in the last ${windowMs / 1000} s, held back (one line per cluster): ${types}`,
    );
  };
  const warn = (message, meta) => {
    const retry = RETRY.exec(message);
    if (!retry) return logger.warn(message, meta);
    const [, resourcePath, cluster] = retry;
    const window = windows.get(cluster);
    if (!window) {
      const timer = setTimeout(() => close(cluster), windowMs);
      timer.unref?.();
      windows.set(cluster, { timer, held: 0, types: new Set() });
      return logger.warn(message, meta);
    }
    window.held++;
    window.types.add(typeOf(resourcePath));
    return undefined;
  };
  return {
    warn,
    info: (message, meta) => logger.info(message, meta),
    error: (message, meta) => logger.error(message, meta),
    debug: (message, meta) => logger.debug(message, meta),
    child: (meta) => clusterRetryLogger(logger.child(meta), { windowMs }),
  };
}

module.exports = { clusterRetryLogger };
