'use strict';

// The simulated etcd + watch cache: objects per resource type, one global resourceVersion
// counter (as etcd's revision is global across types) and a bounded event history that
// watches replay from.

const crypto = require('node:crypto');
const { describeResource, resourceKey } = require('./resources');
const { compileSelector } = require('./selector');
const { addedLine } = require('./text');

/** An error a store call raises; `code`/`reason` are what the API server would answer. */
class StoreError extends Error {
  constructor(code, reason, message) {
    super(message);
    this.name = 'StoreError';
    this.code = code;
    this.reason = reason;
  }
}

// The store never hands out its own objects: callers mutating what they got must not
// change history or what open watches will serialise later.
function clone(obj) {
  return JSON.parse(JSON.stringify(obj));
}

// Kubernetes timestamps are RFC 3339 in UTC with second precision.
function timestamp() {
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// kind and apiVersion lead, as in the API server's JSON, whatever the caller passed.
function withTypeMeta(def, obj) {
  const { kind, apiVersion, metadata, ...rest } = obj;
  return { kind: def.kind, apiVersion: def.apiVersion, metadata: metadata || {}, ...rest };
}

function objectId(def, namespace, name) {
  return def.namespaced ? `${namespace}/${name}` : name;
}

function randomSuffix() {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (const b of crypto.randomBytes(5)) s += alphabet[b % alphabet.length];
  return s;
}

class Store {
  /**
   * @param {{historyLimit?: number, initialResourceVersion?: number}} [options]
   */
  constructor(options = {}) {
    this.historyLimit = options.historyLimit ?? 1000;
    this.rv = options.initialResourceVersion ?? 1;
    // Every event with rv > compactedRv is still in `history`; a watch from an older rv is 410.
    this.compactedRv = this.rv;
    this.history = [];
    this.defs = new Map();
    this.subscribers = new Set();
  }

  /**
   * Declares a resource type (or changes its scope/kind before objects exist).
   * @param {string} key e.g. `pods`, `apps/v1/deployments`
   * @param {{namespaced?: boolean, kind?: string, listKind?: string}} [options]
   * @returns {object} the resource description
   */
  defineResource(key, options = {}) {
    const canonical = resourceKey(key);
    const existing = this.defs.get(canonical);
    const def = describeResource(canonical, {
      ...(existing && { namespaced: existing.namespaced, kind: existing.kind, builtin: existing.builtin }),
      ...options,
    });
    def.objects = existing ? existing.objects : new Map();
    // Ids in list order (namespace, then name), made on the first list after a create or delete.
    def.order = null;
    this.defs.set(canonical, def);
    return def;
  }

  /**
   * @param {string} key
   * @returns {object|undefined} the resource description, if the type was ever defined
   */
  resource(key) {
    return this.defs.get(resourceKey(key));
  }

  /** @returns {string} the current global resourceVersion */
  get resourceVersion() {
    return String(this.rv);
  }

  /**
   * Stores a new object and emits ADDED.
   * @param {string} key resource key; unknown types are defined (namespaced) on first use
   * @param {object} obj the object; metadata.name (or generateName) is required
   * @returns {object} a copy of what was stored
   */
  create(key, obj) {
    const def = this.resource(key) || this.defineResource(key, obj && obj.kind ? { kind: obj.kind } : {});
    return clone(this.insert(def, withTypeMeta(def, clone(obj || {}))));
  }

  /**
   * Stores many new objects at once, as create() does each, but taking them over instead of
   * copying them (a benchmark's initial load: copies of half a million objects cost seconds).
   * The caller must not touch `objects` afterwards; what comes back is the store's own.
   * @param {string} key
   * @param {object[]} objects
   * @returns {object[]} the stored objects (read-only)
   */
  load(key, objects) {
    const def =
      this.resource(key) || this.defineResource(key, objects[0]?.kind ? { kind: objects[0].kind } : {});
    const stored = objects.map((obj) => this.insert(def, withTypeMeta(def, obj)));
    this.order(def);
    return stored;
  }

  // Stores `stored`, a new object of `def` the store owns; returns it.
  insert(def, stored) {
    const meta = stored.metadata;
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomSuffix();
    if (!meta.name)
      throw new StoreError(
        422,
        'Invalid',
        `${def.kind} "" is invalid: metadata.name: Required value: name or generateName is required`,
      );
    if (def.namespaced) meta.namespace = meta.namespace || 'default';
    else delete meta.namespace;
    const id = objectId(def, meta.namespace, meta.name);
    if (def.objects.has(id)) {
      throw new StoreError(409, 'AlreadyExists', `${def.plural} "${meta.name}" already exists`);
    }
    meta.uid = meta.uid || crypto.randomUUID();
    meta.creationTimestamp = meta.creationTimestamp || timestamp();
    meta.resourceVersion = String(++this.rv);
    def.objects.set(id, stored);
    def.order = null;
    this.record('ADDED', def, stored, null);
    return stored;
  }

  /**
   * Replaces an existing object (server-owned metadata is kept) and emits MODIFIED.
   * @param {string} key
   * @param {object} obj must carry metadata.name (and metadata.namespace when namespaced)
   * @returns {object} a copy of what was stored
   */
  update(key, obj) {
    const def = this.requireDef(key);
    const meta0 = (obj && obj.metadata) || {};
    const prev = this.requireObject(def, meta0.namespace, meta0.name);
    const stored = withTypeMeta(def, clone(obj));
    const meta = stored.metadata;
    meta.name = prev.metadata.name;
    if (def.namespaced) meta.namespace = prev.metadata.namespace;
    meta.uid = prev.metadata.uid;
    meta.creationTimestamp = prev.metadata.creationTimestamp;
    meta.resourceVersion = String(++this.rv);
    def.objects.set(objectId(def, meta.namespace, meta.name), stored);
    this.record('MODIFIED', def, stored, prev);
    return clone(stored);
  }

  /**
   * Read-modify-write: `mutate` gets a copy and either changes it in place or returns a
   * replacement.
   * @param {string} key
   * @param {string|undefined} namespace ignored for cluster-scoped types; default 'default'
   * @param {string} name
   * @param {(obj: object) => (object|void)} mutate
   * @returns {object} a copy of what was stored
   */
  patch(key, namespace, name, mutate) {
    const def = this.requireDef(key);
    const current = clone(this.requireObject(def, namespace, name));
    const result = mutate(current);
    const next = result === undefined ? current : result;
    next.metadata = {
      ...(next.metadata || {}),
      name,
      ...(def.namespaced && { namespace: current.metadata.namespace }),
    };
    return this.update(key, next);
  }

  /**
   * Deletes an object; the DELETED event carries its last state with a new resourceVersion.
   * @param {string} key
   * @param {string|undefined} namespace
   * @param {string} name
   * @returns {object} the deleted object as the DELETED event shows it
   */
  remove(key, namespace, name) {
    const def = this.requireDef(key);
    const prev = this.requireObject(def, namespace, name);
    def.objects.delete(objectId(def, prev.metadata.namespace, name));
    def.order = null;
    const last = { ...prev, metadata: { ...prev.metadata, resourceVersion: String(++this.rv) } };
    this.record('DELETED', def, last, prev);
    return clone(last);
  }

  /**
   * @param {string} key
   * @param {string|undefined} namespace
   * @param {string} name
   * @returns {object|undefined} a copy, or undefined when absent
   */
  get(key, namespace, name) {
    const def = this.resource(key);
    if (!def) return undefined;
    const obj = def.objects.get(objectId(def, namespace || 'default', name));
    return obj && clone(obj);
  }

  /**
   * Current objects sorted as etcd returns them (namespace, then name).
   * @param {string} key
   * @param {{namespace?: string, labelSelector?: string}} [options]
   * @returns {object[]} copies
   */
  list(key, options = {}) {
    return this.snapshot(key, options).map(clone);
  }

  // Internal form of list(): the stored objects themselves, for serialisation only.
  snapshot(key, { namespace, labelSelector } = {}) {
    const def = this.resource(key);
    if (!def) return [];
    const matches = compileSelector(labelSelector);
    const out = [];
    for (const id of this.order(def)) {
      const obj = def.objects.get(id);
      if (namespace && def.namespaced && obj.metadata.namespace !== namespace) continue;
      if (!matches(obj.metadata.labels)) continue;
      out.push(obj);
    }
    return out;
  }

  // The ids of `def` as etcd lists them: by storage key, `namespace/name` (just `name` for a
  // cluster-scoped object), compared as strings, so namespace `team-a` comes before `team`
  // ('-' sorts before '/'). Updates keep the order: it is sorted again only after a create or a
  // delete.
  order(def) {
    if (!def.order) {
      const keys = new Map();
      for (const [id, obj] of def.objects) {
        const { namespace, name } = obj.metadata;
        keys.set(id, namespace ? `${namespace}/${name}` : name);
      }
      def.order = [...def.objects.keys()].sort((x, y) => {
        const a = keys.get(x);
        const b = keys.get(y);
        return a < b ? -1 : a > b ? 1 : 0;
      });
    }
    return def.order;
  }

  /** Forgets all history: a watch from any resourceVersion older than now gets 410. */
  compact() {
    this.history = [];
    this.compactedRv = this.rv;
  }

  /**
   * History entries after `rv`, or null when they are no longer retained.
   * @param {number} rv
   * @returns {object[]|null}
   */
  eventsSince(rv) {
    if (rv < this.compactedRv) return null;
    // History is ordered by rv, so the start can be found by offset from the first entry.
    const first = this.history.length ? this.history[0].rv : this.rv + 1;
    return this.history.slice(Math.max(0, rv + 1 - first));
  }

  /**
   * Calls `fn(entry)` synchronously for every mutation.
   * @param {(entry: object) => void} fn
   * @returns {() => void} unsubscribe
   */
  subscribe(fn) {
    this.subscribers.add(fn);
    return () => this.subscribers.delete(fn);
  }

  record(type, def, object, prevObject) {
    // The object's text is made now, while no request waits for it (sim/text.js).
    if (type !== 'DELETED') addedLine(object);
    const entry = { type, rv: this.rv, def, object, prevObject, lines: {} };
    this.history.push(entry);
    if (this.history.length > this.historyLimit) {
      const dropped = this.history.shift();
      this.compactedRv = dropped.rv;
    }
    for (const fn of this.subscribers) fn(entry);
  }

  requireDef(key) {
    const def = this.resource(key);
    if (!def)
      throw new StoreError(404, 'NotFound', `the server could not find the requested resource (${key})`);
    return def;
  }

  requireObject(def, namespace, name) {
    const obj = def.objects.get(objectId(def, namespace || 'default', name));
    if (!obj) throw new StoreError(404, 'NotFound', `${def.plural} "${name}" not found`);
    return obj;
  }
}

module.exports = { Store, StoreError, clone };
