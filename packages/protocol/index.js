'use strict';
// What the live Kubernetes tab's backend (kube-watch-native-backstage) and frontend
// (kube-watch-native-live-frontend) agree on, in one place: the mark on a live answer, the
// signals channel of an entity, the shape and ids of a signal. CommonJS with no imports, so the
// backend requires it and the frontend (ESM, in a browser bundle or in Node's tests) imports it.

/**
 * The response header that marks an answer followed by signals (`1`): the frontend may serve it
 * from memory until a signal. Any answer without it is polled as the stock client polls.
 */
exports.LIVE_HEADER = 'x-kube-watch-live';

/** `@backstage/catalog-model`'s stringifyEntityRef of an entity, as both sides name channels. */
exports.entityRefOf = (entity) => {
  const namespace = entity.metadata.namespace ?? 'default';
  return `${entity.kind}:${namespace}/${entity.metadata.name}`.toLowerCase();
};

/**
 * The signals channel of an entity's Kubernetes tab. A signal's message is
 * `{ clusters: string[], at: number, id: string }`: reload the entity's answers of these
 * clusters; never object data.
 */
exports.channelOf = (entityRef) => `kubernetes:${entityRef}`;

/**
 * The request header with which a page names the entity whose pods' events it asks of the
 * Kubernetes plugin's proxy (`GET …/proxy/api/v1/namespaces/{ns}/events?fieldSelector=
 * involvedObject.…`, the stock route, unchanged otherwise). The backend then follows that answer
 * as it follows the entity's objects: marked live (LIVE_HEADER), and a signal on the channel of
 * `eventsViewOf(entityRef)` when it changes. Without it the answer is polled.
 */
exports.ENTITY_HEADER = 'x-kube-watch-entity';

/**
 * What the backend follows an entity's events as, and whose channel (channelOf) it signals: not
 * the entity's own, so that a change of its events reloads its events and not its objects. Never
 * a catalog entity's ref, which has one colon.
 */
exports.eventsViewOf = (entityRef) => `events:${entityRef}`;

/**
 * A signal's id: what the signal is about (`about`: a change's identity, a reason), made unique
 * to one publish. The frontend drops an id it has seen, so only a publish delivered twice or
 * sent again on purpose repeats one; a change signalled again (a later load, a cache that went
 * back to an earlier state) is never taken for a copy.
 */
exports.uniqueId = (about) => `${about}.${randomPart()}`;

/** 8 random characters of base64url (48 bits). */
function randomPart() {
  const bytes = new Uint8Array(6);
  globalThis.crypto.getRandomValues(bytes);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let out = '';
  for (let i = 0; i < 6; i += 3) {
    const n = (bytes[i] << 16) | (bytes[i + 1] << 8) | bytes[i + 2];
    out += alphabet[(n >> 18) & 63] + alphabet[(n >> 12) & 63] + alphabet[(n >> 6) & 63] + alphabet[n & 63];
  }
  return out;
}

/**
 * The staleness bound, the one number the backend and the frontend agree on: no answer is shown
 * from memory past it without the tab asking the network. The backend serves an informer's
 * cache only while its watch showed life this recently (`kubernetes.nativeInformers.liveness`;
 * a healthy silent watch hears a bookmark about once a minute), and the frontend keeps an answer
 * at most this long (`maxAgeMs`), whatever signals say.
 */
exports.STALENESS_MS = 90_000;

/**
 * The channel of the backend's heartbeat: every replica broadcasts `{ replica, seq, replicas }`
 * on it every HEARTBEAT_MS (`replica`: an opaque id; `seq`: one more than its last; `replicas`:
 * the ids of every replica it knows alive, itself included). A tab trusts its signals only while
 * each of those replicas' heartbeats arrives, in sequence, within HEARTBEAT_BOUND_MS: a dead
 * WebSocket, a stalled events bus or a silent backend turns its answers to polling within it.
 */
exports.HEARTBEAT_CHANNEL = 'kube-watch-native:heartbeat';
exports.HEARTBEAT_MS = 5000;
exports.HEARTBEAT_BOUND_MS = 15_000;
