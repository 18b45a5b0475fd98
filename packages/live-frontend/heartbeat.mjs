// Whether the live tab's signals arrive, from the public API of @backstage/plugin-signals-react
// alone: the backend's heartbeat (kube-watch-native-protocol). Every replica broadcasts one every
// HEARTBEAT_MS, numbered, with the replicas it knows alive; the tab's signals are trusted while
// every one of those replicas' heartbeats arrives, in sequence, within HEARTBEAT_BOUND_MS. A
// heartbeat missed (a reconnect, a bus that skipped an event) may mean a signal missed: the
// connection is then a new one, and nothing kept from before it is trusted. Plain ESM importing
// only the protocol, so it runs (and is tested) in Node as it runs in the browser.

import { HEARTBEAT_CHANNEL, HEARTBEAT_MS, HEARTBEAT_BOUND_MS } from 'kube-watch-native-protocol';

/**
 * The live tab's signals connection as proven by heartbeats. `connection()` is an object that
 * stays the same while heartbeats keep arriving in sequence (answers kept under it are
 * trusted), or null while they do not; the first call subscribes to the heartbeat channel.
 */
export class Heartbeat {
  #signalApi;
  #now;
  #boundMs;
  #subscription = null;
  /** replica → { seq, at }: its last heartbeat */
  #beats = new Map();
  /** replica → when it was first expected: the replicas the latest heartbeat named */
  #expected = new Map();
  /** The connection while proven, replaced after any lapse or gap. */
  #connection = null;

  /**
   * @param {{ subscribe(channel: string, onMessage: (message: object) => void): { unsubscribe(): void } }} signalApi
   * @param {{ now: () => number, boundMs?: number }} options
   */
  constructor(signalApi, { now, boundMs = HEARTBEAT_BOUND_MS }) {
    this.#signalApi = signalApi;
    this.#now = now;
    this.#boundMs = boundMs;
  }

  connection() {
    if (!this.#subscription) {
      this.#subscription = this.#signalApi.subscribe(HEARTBEAT_CHANNEL, (message) => this.#beat(message));
    }
    if (!this.#proven(this.#now())) this.#connection = null;
    else this.#connection ??= {};
    return this.#connection;
  }

  /**
   * Whether a heartbeat is overdue (none for 1.5 intervals): the connection may have closed
   * without the signals client reconnecting, which a subscribe makes it do.
   */
  late() {
    let newest = -Infinity;
    for (const { at } of this.#beats.values()) newest = Math.max(newest, at);
    return this.#now() - newest > 1.5 * HEARTBEAT_MS;
  }

  /** Signals may have been missed (the page slept): nothing kept before now is trusted. */
  lapse() {
    this.#connection = null;
    this.#beats.clear();
    this.#expected.clear();
  }

  close() {
    this.#subscription?.unsubscribe();
    this.#subscription = null;
    this.lapse();
  }

  #beat(message) {
    const { replica, seq, replicas } = message ?? {};
    if (typeof replica !== 'string' || !Number.isSafeInteger(seq) || !Array.isArray(replicas)) return;
    const t = this.#now();
    const last = this.#beats.get(replica);
    // The same beat again (the broadcast, and the copy a load's answer sent its user): nothing new.
    if (last && seq === last.seq) return;
    // One missed: a signal sent meanwhile may be missed too.
    if (last && seq !== last.seq + 1) this.#connection = null;
    this.#beats.set(replica, { seq, at: t });
    const named = new Set([...replicas.filter((r) => typeof r === 'string'), replica]);
    for (const r of named) if (!this.#expected.has(r)) this.#expected.set(r, t);
    // A replica gone or new: the viewers it followed are followed no more, or signals it sent
    // before this tab heard it may be missed. Nothing kept before is trusted.
    if (this.#expected.size > 0 && [...named].some((r) => !this.#expected.has(r))) this.#connection = null;
    for (const r of [...this.#expected.keys()]) {
      if (named.has(r)) continue;
      this.#expected.delete(r);
      this.#beats.delete(r);
      this.#connection = null;
    }
  }

  /** Every replica expected beat within the bound (one just named counts from then). */
  #proven(t) {
    if (this.#beats.size === 0) return false;
    for (const [replica, since] of this.#expected) {
      const at = this.#beats.get(replica)?.at ?? since;
      if (t - at > this.#boundMs) return false;
    }
    return true;
  }
}
