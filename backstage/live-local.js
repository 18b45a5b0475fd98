'use strict';
// The live tab's signals when this replica alone follows its viewers (./live-publisher.js; when
// the replicas share them, ./live-shared.js): one signal per viewer per load, the first at once
// after a quiet spell, then at most one per `minIntervalMs`, a trailing one carrying the changes
// seen meanwhile. A failed publish re-arms its viewer, so the next change tries again.

const { claimId } = require('./live-shared');
const { idOf, clustersOf } = require('./live-viewers');

class LocalSignals {
  #viewers;
  #options;
  #counts;
  #warned = false;

  /**
   * @param {import('./live-viewers').Viewers} viewers the publisher's viewers
   * @param {object} options the publisher's (./live.js): `signals`, `logger`, `minIntervalMs`,
   *   `now`, `setTimer` and `channelOf`
   * @param {{ published: number, failed: number }} counts the publisher's, counted here
   */
  constructor(viewers, options, counts) {
    this.#viewers = viewers;
    this.#options = options;
    this.#counts = counts;
  }

  /** Something under `watchKey` changed: signals the viewers among `ids` armed since their last signal. */
  changed(ids, watchKey, t, change) {
    for (const id of [...ids]) {
      const viewer = this.#viewers.get(id);
      if (!viewer.armed) continue; // signalled already: its reload arms it again
      this.#signal(id, viewer, [viewer.keys.get(watchKey).cluster], t, change);
    }
  }

  /** The viewer was evicted for its user's share: told once, if armed, so that an open tab reloads. */
  evicted(viewer, t) {
    if (!viewer.armed) return;
    this.#send(
      Object.assign(viewer, {
        pending: new Set(clustersOf(viewer)),
        changes: new Set([`evicted ${t}`]),
      }),
    );
  }

  #send(viewer) {
    const { signals, logger, now, channelOf } = this.#options;
    const clusters = [...viewer.pending].sort();
    // The change's identity (what the viewer's answer became), made unique to this publish:
    // a cache that turns back to an earlier state at one resourceVersion repeats a change's
    // identity, and the frontend, which drops an id it has seen, must still hear it.
    const id = claimId(viewer.changes);
    viewer.pending = null;
    viewer.changes = new Set();
    viewer.armed = false;
    viewer.lastSentAt = now();
    const signal = {
      recipients: { type: 'user', entityRef: viewer.userEntityRef },
      channel: channelOf(viewer.entityRef),
      message: { clusters, at: viewer.lastSentAt, id },
    };
    this.#counts.published++;
    // publish() goes through the events service. A failure re-arms the viewer, so the next
    // change tries again, rather than leaving its tab on an answer nobody will signal.
    Promise.resolve()
      .then(() => signals.publish(signal))
      .catch((error) => {
        this.#counts.failed++;
        if (this.#viewers.get(idOf(viewer.userEntityRef, viewer.entityRef)) === viewer) viewer.armed = true;
        if (this.#warned) return;
        this.#warned = true;
        logger?.warn(`kube-watch-native: publishing a live signal failed (reported once): ${error}`);
      });
  }

  /** The trailing signal of a busy spell, at `lastSentAt + minIntervalMs`. */
  #flush(id) {
    const viewer = this.#viewers.get(id);
    if (!viewer) return;
    viewer.cancel = null;
    if (viewer.expiresAt <= this.#options.now()) return this.#viewers.forget(id);
    if (viewer.pending) this.#send(viewer);
  }

  /** Signals `viewer` for these clusters, at once or at the end of its minInterval. */
  #signal(id, viewer, clusters, t, change) {
    viewer.pending ??= new Set();
    for (const cluster of clusters) viewer.pending.add(cluster);
    if (change !== undefined) viewer.changes.add(change);
    if (viewer.cancel) return; // a trailing signal is due and will carry this one
    const wait = viewer.lastSentAt + this.#options.minIntervalMs - t;
    if (wait <= 0) this.#send(viewer);
    else viewer.cancel = this.#options.setTimer(() => this.#flush(id), wait);
  }
}

module.exports = { LocalSignals };
