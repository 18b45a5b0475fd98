// LiveKubernetesApi: the Kubernetes tab's KubernetesApi, answered from memory while the Signals
// connection is up, refetched when the backend says an entity's objects changed.
//
// It wraps the default client (KubernetesBackendClient). The tab keeps polling (every
// `refreshIntervalMs` of EntityKubernetesContent), but a poll of an unchanged entity costs no
// request: the last answer to the same request is served until a signal arrives on
// `kubernetes:<entityRef>` (published by kube-watch-native-backstage to the user who loaded it),
// until `maxAgeMs` passes, or until the connection changes. Only an answer the backend marked
// live (`x-kube-watch-live: 1`: signals follow every part of it) is kept until a signal: one the
// default fetcher gave (a viewer's own credential, a selector of negative requirements, pod
// metrics) would never be signalled, so it is kept only `notLiveMaxAgeMs` (9 s), and the tab
// polls the network for it as the stock one does every 10 s. Whether signals arrive is proven by
// the backend's heartbeat (./heartbeat.mjs), read through the public signals API alone: while it
// is not, every answer is one that is not live, so the tab never asks the network more often than
// the stock tab, whatever its `refreshIntervalMs`. Time is a monotonic clock: a wall clock set
// back keeps nothing longer.
//
// A poll is held (`holdMs`): a call that comes within `pollGapMs` of the last answer handed out
// for the same request, and finds that answer in memory, settles when the refetch a signal
// started lands, so the tab shows the change then rather than at its next poll. The tab's
// useAsyncRetry skips a retry while its call is out, so while one is held the tab neither polls
// nor renders: three renders (retry, loading, value) per `holdMs`, not per poll. A call after a
// longer pause (the tab opened again) is answered at once.
//
// Plain ESM importing only its siblings (./heartbeat.mjs: whether signals arrive;
// ./signal-connection.mjs: the page's wakes; ./live-mark.mjs: the backend's mark on a live
// answer) and the protocol, so it runs (and is tested) in Node as it runs in the browser.

import { browserWakes } from './signal-connection.mjs';
import { Heartbeat } from './heartbeat.mjs';
import { LIVE_HEADER, liveAnswerFetch } from './live-mark.mjs';
// What the backend and this frontend agree on (the channel, the header, ids, the bound): one module.
import { entityRefOf, channelOf, STALENESS_MS } from 'kube-watch-native-protocol';

export { Heartbeat, browserWakes, LIVE_HEADER, liveAnswerFetch, entityRefOf, channelOf };

/** Change identities remembered per entity, to drop a change signalled twice (by two replicas). */
const SEEN_CHANGES = 32;

/** How often a held poll looks whether its signals connection is still the one it was held on. */
const HOLD_CHECK_MS = 250;

/** A monotonic clock in ms: a wall clock stepped back must not keep an answer longer. */
const monotonicNow = () => globalThis.performance.now();

function defaultSetTimer(fn, ms) {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
}

/** The request's identity without its entity object (its ref stands in) or credentials. */
function requestKey(method, entityRef, request) {
  const { entity: _entity, auth: _auth, ...rest } = request;
  return `${method}\n${entityRef}\n${JSON.stringify(rest)}`;
}

/**
 * A KubernetesApi that serves the last answer from memory while the entity's signals channel is
 * live and silent.
 */
export class LiveKubernetesApi {
  #client;
  #signalApi;
  #maxAgeMs;
  #idleMs;
  #now;
  #setTimer;
  #connectionOf;
  /** The heartbeat that proves the signals connection, unless `connectionOf` was given. */
  #heartbeat = null;
  #resubscribeMs;
  #wakes;
  #prefetchWithinMs;
  #holdMs;
  #pollGapMs;
  #isLive;
  #notLiveMaxAgeMs;
  /** Stops the wake source; set while any entity is watched. */
  #stopWakes = null;
  /** Bumped by every wake: an answer fetched across one is not kept. */
  #epoch = 0;
  /** entityRef -> { subscription, version, lastAsked, cancelIdle, subscribedAt } while some component asks. */
  #entities = new Map();
  /** requestKey -> { entityRef, body, value, at, connection, givenAt }: givenAt, when the answer
   * was last handed to a caller (null: not yet). */
  #answers = new Map();
  /** requestKey -> { entityRef, body, call, promise }: requests out now. */
  #flights = new Map();
  /** requestKey -> { body, value, promise, settle(value), cancel }: polls held for a change. */
  #holds = new Map();
  /** The clusters' answer: { value, at, connection }. */
  #clusters = null;

  /**
   * @param {object} options
   * @param {import('@backstage/plugin-kubernetes-react').KubernetesApi} options.client the default client
   * @param {import('@backstage/plugin-signals-react').SignalApi} options.signalApi
   * @param {number} [options.maxAgeMs] an answer is served from memory for at most this long
   *   (STALENESS_MS, 90 s, the backend's liveness bound too): the worst case a signal lost on
   *   the way can leave the tab behind, at one request per 90 s per open entity where the stock
   *   tab sends nine
   * @param {number} [options.idleMs] an entity nobody asked about for this long is unsubscribed (60 s)
   * @param {(signalApi: object, channel: string) => object | null} [options.connectionOf]
   *   the live connection for a channel (its identity changes when signals may have been
   *   missed), or null when down. Default: the backend's heartbeat ({@link Heartbeat})
   * @param {number} [options.resubscribeMs] while a watched channel has no connection, subscribe
   *   it again at most this often (5 s): the signals client does not reconnect by itself after a
   *   normal close (a backend's graceful restart closes with 1001), but a subscribe() connects
   * @param {(onWake: (reason: string) => void) => () => void} [options.wakes] calls `onWake`
   *   when signals may have been missed silently (sleep, freeze, network back); returns its
   *   stop function. Default: {@link browserWakes}
   * @param {number} [options.prefetchWithinMs] a signal refetches an entity's requests at once
   *   when a component asked for it this recently (15 s, past the stock 10 s polling); else
   *   the next poll does
   * @param {number} [options.holdMs] a call that finds in memory an answer already given is held
   *   until that request's refetch after a signal lands, for at most this long, and no longer
   *   than its signals connection lasts (10 000; 0: never held). Calls meanwhile are held with it.
   *   A change then shows as its refetch lands, not at the tab's next poll, and the tab's
   *   useAsyncRetry, which skips its retries while a call is out, renders three times per
   *   `holdMs` rather than per poll; the cost is that a second component asking the same
   *   request while another polls it may wait this long for its first answer
   * @param {number} [options.pollGapMs] a call this soon after the last answer to the same
   *   request was handed out is the next poll, and may be held (1000: past the 500 ms
   *   `refreshIntervalMs` the README gives); a call after a longer pause, such as the tab opened
   *   again, is answered from memory at once
   * @param {(value: unknown) => boolean} [options.isLive] whether an answer of the client is
   *   followed by signals (the backend marked it live); only those are kept. Default: none is,
   *   so every call goes to the network as the stock client's: a client whose answers cannot be
   *   told apart may be talking to a backend, or a cluster, that never signals, and an answer
   *   served from memory then would not change for `maxAgeMs`. {@link createLiveKubernetesApi}
   *   gives the one {@link liveAnswerFetch} makes
   * @param {number} [options.notLiveMaxAgeMs] an answer not followed by signals is served from
   *   memory for at most this long (9000: within the stock client's 10 s polling), so a tab
   *   polling memory every 500 ms asks the network for it no more often than the stock tab
   *   does; 0: every call goes to the network
   */
  constructor({
    client,
    signalApi,
    maxAgeMs = STALENESS_MS,
    idleMs = 60_000,
    now = monotonicNow,
    setTimer = defaultSetTimer,
    connectionOf,
    resubscribeMs = 5000,
    wakes = browserWakes,
    prefetchWithinMs = 15_000,
    holdMs = 10_000,
    pollGapMs = 1000,
    isLive = () => false,
    notLiveMaxAgeMs = 9000,
  }) {
    if (!client) throw new TypeError('LiveKubernetesApi: options.client is required');
    if (!signalApi || typeof signalApi.subscribe !== 'function') {
      throw new TypeError('LiveKubernetesApi: options.signalApi must have a subscribe() method');
    }
    this.#client = client;
    this.#signalApi = signalApi;
    this.#maxAgeMs = maxAgeMs;
    this.#idleMs = idleMs;
    this.#now = now;
    this.#setTimer = setTimer;
    if (connectionOf) {
      this.#connectionOf = connectionOf;
    } else {
      this.#heartbeat = new Heartbeat(signalApi, { now });
      this.#connectionOf = () => this.#heartbeat.connection();
    }
    this.#resubscribeMs = resubscribeMs;
    this.#wakes = wakes;
    this.#prefetchWithinMs = prefetchWithinMs;
    this.#holdMs = holdMs;
    this.#pollGapMs = pollGapMs;
    this.#isLive = isLive;
    this.#notLiveMaxAgeMs = notLiveMaxAgeMs;
  }

  getObjectsByEntity(requestBody) {
    return this.#answer('objects', requestBody, () => this.#client.getObjectsByEntity(requestBody));
  }

  getWorkloadsByEntity(request) {
    return this.#answer('workloads', request, () => this.#client.getWorkloadsByEntity(request));
  }

  getCustomObjectsByEntity(request) {
    return this.#answer('custom', request, () => this.#client.getCustomObjectsByEntity(request));
  }

  /**
   * The configured clusters: the tab asks before every poll (to decorate the request with the
   * viewer's credentials). Served from memory while any watched entity's channel is live, for
   * at most `maxAgeMs`, refetched when the connection changes; while none is, for at most
   * `notLiveMaxAgeMs`, as the stock tab's polling would.
   */
  async getClusters() {
    const connection = this.#anyConnection();
    const hit = this.#clusters;
    const maxAgeMs = connection ? this.#maxAgeMs : this.#notLiveMaxAgeMs;
    if (hit && hit.connection === connection && this.#now() - hit.at < maxAgeMs) return hit.value;
    const at = this.#now();
    const epoch = this.#epoch;
    const value = await this.#client.getClusters();
    const still = this.#epoch === epoch && this.#anyConnection() === connection && maxAgeMs > 0;
    this.#clusters = still ? { value, at, connection } : null;
    return value;
  }

  async getCluster(clusterName) {
    const cluster = (await this.getClusters()).find((c) => c.name === clusterName);
    // Not found: the default client's own answer (its NotFoundError), from the network.
    return cluster ?? this.#client.getCluster(clusterName);
  }

  proxy(options) {
    return this.#client.proxy(options);
  }

  /** Entities subscribed now (for tests and diagnostics). */
  get watchedEntities() {
    return [...this.#entities.keys()];
  }

  /** Unsubscribes everything and forgets every answer; safe to call twice. */
  close() {
    for (const entityRef of [...this.#entities.keys()]) this.#unwatch(entityRef);
    for (const key of [...this.#holds.keys()]) this.#release(key);
    this.#clusters = null;
    this.#heartbeat?.close();
  }

  /**
   * Signals may have been missed without the connection saying so (the page slept or froze, the
   * network came back): forget every answer, so the next poll of each request refetches once,
   * and open a new connection with every watched channel on it, so the tab is live again.
   */
  #wake() {
    this.#epoch += 1;
    this.#answers.clear();
    this.#flights.clear();
    for (const key of [...this.#holds.keys()]) this.#release(key);
    this.#clusters = null;
    this.#heartbeat?.lapse();
    for (const [entityRef, watched] of this.#entities) {
      watched.subscribedAt = -Infinity;
      this.#resubscribe(entityRef, watched);
    }
  }

  async #answer(method, request, call) {
    const entityRef = entityRefOf(request.entity);
    const watched = this.#watch(entityRef);
    const key = requestKey(method, entityRef, request);
    const body = JSON.stringify(request);
    const connection = this.#connectionOf(this.#signalApi, channelOf(entityRef));
    if (connection === null || this.#heartbeat?.late()) this.#resubscribe(entityRef, watched);
    const hit = this.#answers.get(key);
    if (
      hit &&
      hit.connection === connection && // a live one's is never null: kept only while proven
      hit.body === body &&
      this.#now() - hit.at < (hit.live ? this.#maxAgeMs : this.#notLiveMaxAgeMs)
    ) {
      // Not followed by signals: served as the stock client's poll would have left it, no more.
      if (!hit.live) return hit.value;
      const held = this.#holds.get(key);
      if (held?.body === body) return held.promise;
      const now = this.#now();
      const polled = hit.givenAt !== null && now - hit.givenAt <= this.#pollGapMs;
      if (polled && this.#holdMs > 0) return this.#hold(key, hit);
      hit.givenAt = now;
      return hit.value;
    }
    // The same request already out (another poll's, or a signal's refetch): its answer.
    const flight = this.#flights.get(key);
    if (flight && flight.body === body) {
      flight.awaited = true;
      return flight.promise;
    }
    return this.#fetch(key, { entityRef, body, call }, true);
  }

  /**
   * Holds a poll of `key` whose answer (`hit`) the caller already has: it settles with the
   * request's next answer, or with this one after `holdMs`, as soon as the signals connection is
   * not the one the answer came on (the tab then polls the network at once), when the answer
   * reaches `maxAgeMs`, at a wake or at close().
   */
  #hold(key, hit) {
    let settle;
    const promise = new Promise((resolve) => (settle = resolve));
    const held = { body: hit.body, value: hit.value, promise, settle, cancel: null };
    // Never past the liveness bound: the tab's next poll then asks the network.
    const deadline = Math.min(this.#now() + this.#holdMs, hit.at + this.#maxAgeMs);
    const channel = channelOf(hit.entityRef);
    const check = () => {
      if (this.#holds.get(key) !== held) return;
      const left = deadline - this.#now();
      if (left <= 0 || this.#connectionOf(this.#signalApi, channel) !== hit.connection) {
        this.#release(key);
        return;
      }
      held.cancel = this.#setTimer(check, Math.min(HOLD_CHECK_MS, left));
    };
    held.cancel = this.#setTimer(check, Math.min(HOLD_CHECK_MS, this.#holdMs));
    this.#holds.set(key, held);
    return promise;
  }

  /** Settles the held poll of `key` with `value`, or with the answer it was held on. */
  #release(key, value) {
    const held = this.#holds.get(key);
    if (!held) return;
    this.#holds.delete(key);
    held.cancel?.();
    const answer = this.#answers.get(key);
    if (answer) answer.givenAt = this.#now();
    held.settle(value === undefined ? held.value : value);
  }

  /**
   * Sends `request` ({ entityRef, body, call }) to the network, as the flight of `key`. Its
   * answer is kept only if the backend marked it live, the channel was live before it left and
   * nothing was signalled (and no wake came) while it was out: else it may predate a change
   * nobody will signal again, or be one nobody signals at all.
   * `awaited`: a caller has it (else it is a signal's refetch, until a poll joins it).
   */
  #fetch(key, request, awaited = false) {
    const { entityRef } = request;
    const watched = this.#entities.get(entityRef);
    const connection = this.#connectionOf(this.#signalApi, channelOf(entityRef));
    const version = watched.version;
    const epoch = this.#epoch;
    const at = this.#now();
    const flight = { ...request, promise: null, awaited };
    flight.promise = (async () => {
      try {
        const value = await request.call();
        const still =
          this.#epoch === epoch &&
          this.#entities.get(entityRef) === watched &&
          watched.version === version &&
          this.#connectionOf(this.#signalApi, channelOf(entityRef)) === connection;
        const held = this.#holds.get(key);
        if (still && connection && this.#isLive(value)) {
          const given = flight.awaited || held?.body === request.body;
          const givenAt = given ? this.#now() : null;
          this.#answers.set(key, { ...request, value, at, connection, givenAt, live: true });
          if (held?.body === request.body) this.#release(key, value);
        } else if (still && this.#notLiveMaxAgeMs > 0) {
          // No signal will come for it: kept no longer than the stock client's polling would keep it.
          this.#answers.set(key, { ...request, value, at, connection, givenAt: null, live: false });
          if (held?.body === request.body) this.#release(key, value);
        } else {
          if (this.#answers.get(key)?.at <= at) this.#answers.delete(key);
          // Not live: no signal will come for it, so a poll held for it takes it now.
          if (still && held?.body === request.body) this.#release(key, value);
        }
        return value;
      } catch (error) {
        this.#answers.delete(key);
        // A held poll waits no longer: the next one sends its own request and sees the failure.
        if (this.#holds.get(key)?.body === request.body) this.#release(key);
        throw error;
      } finally {
        if (this.#flights.get(key) === flight) this.#flights.delete(key);
      }
    })();
    this.#flights.set(key, flight);
    return flight.promise;
  }

  /**
   * A signal for `entityRef`: its answers are stale. Each request of it that was answered or is
   * out is sent again at once, if a component asked within `prefetchWithinMs` (the tab still
   * polls): its next poll then finds the answer in memory or on its way, not a request to start.
   */
  #signalled(entityRef, watched, message) {
    // The same change signalled again (by another backend replica that saw it too): nothing new.
    const id = typeof message?.id === 'string' ? message.id : null;
    if (id !== null) {
      if (watched.seen.includes(id)) return;
      watched.seen.push(id);
      if (watched.seen.length > SEEN_CHANGES) watched.seen.shift();
    }
    watched.version += 1;
    const requests = new Map();
    for (const [key, answer] of this.#answers) if (answer.entityRef === entityRef) requests.set(key, answer);
    for (const [key, flight] of this.#flights) if (flight.entityRef === entityRef) requests.set(key, flight);
    for (const key of requests.keys()) this.#answers.delete(key);
    const held = [...requests.keys()].some((key) => this.#holds.has(key));
    if (!held && this.#now() - watched.lastAsked > this.#prefetchWithinMs) return;
    if (!this.#connectionOf(this.#signalApi, channelOf(entityRef))) return;
    for (const [key, { body, call }] of requests) {
      // Nobody may await it: a failure is the next poll's to see, from its own request.
      this.#fetch(key, { entityRef, body, call }).catch(() => {});
    }
  }

  /** Subscribes on first use; notes the ask, so the idle check keeps the subscription. */
  #watch(entityRef) {
    let watched = this.#entities.get(entityRef);
    if (!watched) {
      watched = {
        subscription: null,
        version: 0,
        lastAsked: 0,
        cancelIdle: null,
        subscribedAt: 0,
        seen: [],
      };
      this.#entities.set(entityRef, watched);
      this.#stopWakes ??= this.#wakes(() => this.#wake());
      this.#subscribe(entityRef, watched);
      this.#armIdle(entityRef, watched, this.#idleMs);
    }
    watched.lastAsked = this.#now();
    return watched;
  }

  #subscribe(entityRef, watched) {
    watched.subscribedAt = this.#now();
    watched.subscription = this.#signalApi.subscribe(channelOf(entityRef), (message) =>
      this.#signalled(entityRef, watched, message),
    );
  }

  /**
   * The channel has no connection: subscribe it again (at most every `resubscribeMs`), which
   * makes the signals client connect if it gave up; the new subscription is made before the old
   * one goes, so the client never has none (it would close its connection).
   */
  #resubscribe(entityRef, watched) {
    if (this.#now() - watched.subscribedAt < this.#resubscribeMs) return;
    const old = watched.subscription;
    this.#subscribe(entityRef, watched);
    old?.unsubscribe();
  }

  /** One timer per entity, re-armed when it fires and someone asked meanwhile. */
  #armIdle(entityRef, watched, ms) {
    watched.cancelIdle = this.#setTimer(() => {
      watched.cancelIdle = null;
      if (this.#entities.get(entityRef) !== watched) return;
      const quiet = this.#now() - watched.lastAsked;
      if (quiet >= this.#idleMs) this.#unwatch(entityRef);
      else this.#armIdle(entityRef, watched, this.#idleMs - quiet);
    }, ms);
  }

  #unwatch(entityRef) {
    const watched = this.#entities.get(entityRef);
    if (!watched) return;
    this.#entities.delete(entityRef);
    if (this.#entities.size === 0) {
      this.#stopWakes?.();
      this.#stopWakes = null;
    }
    watched.cancelIdle?.();
    watched.subscription?.unsubscribe();
    this.#forgetAnswers(entityRef);
  }

  #forgetAnswers(entityRef) {
    for (const [key, answer] of this.#answers) if (answer.entityRef === entityRef) this.#answers.delete(key);
    for (const [key, flight] of this.#flights) if (flight.entityRef === entityRef) this.#flights.delete(key);
  }

  /** A live connection of any watched entity's channel (they share one WebSocket), or null. */
  #anyConnection() {
    for (const entityRef of this.#entities.keys()) {
      const connection = this.#connectionOf(this.#signalApi, channelOf(entityRef));
      if (connection) return connection;
    }
    return null;
  }
}
