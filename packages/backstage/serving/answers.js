'use strict';
// What a cached answer looks like: exactly the default fetcher's LIST answer for the same type,
// after JSON parsing. Items in the API server's order; built-in types' items without `kind` and
// `apiVersion` (a custom resource of a built-in group gets the list's `kind`; a CRD's items keep
// both, as the server sends them); secrets' values `***`; a cluster-scoped type asked for in a
// namespace answered with the default's 404.
//
// An answer is remembered per informer, type, namespace and selector until the cache changes,
// kept where no caller reaches it: every load gets its own deep copy (copyJson), so a caller that
// changes what it was handed (an app's objects provider filtering per user in place) never
// changes another load's answer. A copy of the parsed answer, its strings shared (they cannot
// change), costs a fraction of parsing its JSON text again.

/**
 * API groups served by the API server's own types, whose list items carry no `kind` or
 * `apiVersion`; a custom resource of any other group is a CRD, served from unstructured JSON,
 * whose list items keep both.
 */
const BUILT_IN_GROUPS = new Set([
  '',
  'admissionregistration.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'apps',
  'authentication.k8s.io',
  'authorization.k8s.io',
  'autoscaling',
  'batch',
  'certificates.k8s.io',
  'coordination.k8s.io',
  'discovery.k8s.io',
  'events.k8s.io',
  'flowcontrol.apiserver.k8s.io',
  'internal.apiserver.k8s.io',
  'metrics.k8s.io',
  'networking.k8s.io',
  'node.k8s.io',
  'policy',
  'rbac.authorization.k8s.io',
  'resource.k8s.io',
  'scheduling.k8s.io',
  'storage.k8s.io',
  'storagemigration.k8s.io',
]);

/** Answers remembered per informer at most (per type, namespace and selector). */
const MEMO_ENTRIES = 1024;
/**
 * The JSON an informer's remembered answers may hold together: as much as the informer caches
 * (its answers are parts of it; one entity's selector per answer), and at least MEMO_MIN_BYTES.
 */
const MEMO_MIN_BYTES = 256 * 1024;

/**
 * One informer's remembered answers, the least recently used forgotten first: a tab's entities
 * come back in turn, so a memo smaller than their number must not forget them all at once.
 */
class AnswerMemo {
  #answers = new Map();
  #bytes = 0;

  /** The answer remembered for `key` at `generation`, or undefined. */
  get(key, generation) {
    const memo = this.#answers.get(key);
    if (memo === undefined || memo.generation !== generation) return undefined;
    this.#answers.delete(key);
    this.#answers.set(key, memo);
    return memo.answer;
  }

  /** Remembers `answer` (of `bytes` of JSON) for `key`, within the entry and `maxBytes` bounds. */
  set(key, generation, answer, bytes, maxBytes) {
    this.#forget(key);
    if (bytes > maxBytes) return;
    for (const [oldest] of this.#answers) {
      if (this.#answers.size < MEMO_ENTRIES && this.#bytes + bytes <= maxBytes) break;
      this.#forget(oldest);
    }
    this.#answers.set(key, { generation, answer, bytes });
    this.#bytes += bytes;
  }

  get size() {
    return this.#answers.size;
  }

  get bytes() {
    return this.#bytes;
  }

  clear() {
    this.#answers.clear();
    this.#bytes = 0;
  }

  #forget(key) {
    const memo = this.#answers.get(key);
    if (memo === undefined) return;
    this.#answers.delete(key);
    this.#bytes -= memo.bytes;
  }
}

/**
 * A deep copy of a JSON value (objects, arrays, strings, numbers, booleans, null): new objects
 * and arrays throughout, the same strings. A key `__proto__` (JSON.parse makes it an own
 * property) stays an own property, as in the original, rather than setting the copy's prototype.
 */
function copyJson(value) {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; i++) out[i] = copyJson(value[i]);
    return out;
  }
  const out = {};
  for (const key of Object.keys(value)) {
    const copy = copyJson(value[key]);
    if (key === '__proto__') {
      Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
    } else {
      out[key] = copy;
    }
  }
  return out;
}

/** The path the default fetcher's LIST goes to, as its KubernetesFetchError names it. */
function resourcePathFor(clusterDetails, { group, apiVersion, plural }, namespace) {
  const encode = encodeURIComponent;
  let path = group ? `/apis/${encode(group)}/${encode(apiVersion)}` : `/api/${encode(apiVersion)}`;
  if (namespace) path += `/namespaces/${encode(namespace)}`;
  path += `/${encode(plural)}`;
  const url = new URL(clusterDetails.url);
  url.pathname = url.pathname === '/' ? path : url.pathname + path;
  return url.pathname;
}

/** The etcd key order in which the API server lists objects (`namespace/name`). */
function storageKey(object) {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : String(name);
}

function redact(values) {
  return Object.fromEntries(Object.keys(values).map((key) => [key, '***']));
}

/** Whether a resource is secrets, however it is asked for. */
function isSecrets(resource) {
  return (
    resource.objectType === 'secrets' || ((resource.group ?? '') === '' && resource.plural === 'secrets')
  );
}

const isError = (result) => Object.hasOwn(result, 'errorType');

/**
 * The cached objects as the default fetcher returns a LIST's (see the top of the file).
 * Undefined when a custom resource has no kind (the default's answer is then its error).
 */
function transform(resource, items) {
  const custom = resource.objectType === 'customresources';
  const crd = custom && !BUILT_IN_GROUPS.has(resource.group ?? '');
  const secrets = isSecrets(resource);
  const keyed = items.map((item) => [storageKey(item), item]);
  keyed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out = [];
  for (const [, item] of keyed) {
    if (custom && item.kind === undefined) return undefined;
    let object = item;
    if (!crd) {
      const { kind, apiVersion: _apiVersion, ...rest } = item;
      object = custom ? { ...rest, kind } : rest;
    }
    if (secrets || object.kind === 'Secret') {
      if (object.data && typeof object.data === 'object') object.data = redact(object.data);
      if (object.stringData && typeof object.stringData === 'object') {
        object.stringData = redact(object.stringData);
      }
    }
    out.push(object);
  }
  return { type: resource.objectType, resources: out };
}

/**
 * The answer from `entry`'s cache for `resource` in `namespace` by `selector`: a fresh copy per
 * call of the answer remembered for the cache's generation (`state`, read before the list: a
 * change in between only makes the memo stale early). Undefined when the cache cannot answer as
 * the default would (the caller asks the default fetcher).
 */
function cachedAnswer(entry, resource, namespace, selector, state) {
  // The answer's form depends on how the type was asked for (a default type, or the same type
  // as a custom resource, which gets `kind`).
  const memoKey = `${resource.objectType}\0${namespace ?? ''}\0${selector}`;
  const remembered = entry.memo.get(memoKey, state.generation);
  if (remembered !== undefined) return copyJson(remembered);
  let text;
  try {
    text = entry.informer.listText({ namespace, labelSelector: selector });
  } catch {
    // A selector the native cache reads otherwise than the module's parser: the API server decides.
    return undefined;
  }
  const answer = transform(resource, JSON.parse(text));
  if (answer === undefined) return undefined;
  const maxBytes = Math.max(MEMO_MIN_BYTES, state.cachedBytes ?? 0);
  entry.memo.set(memoKey, state.generation, answer, text.length, maxBytes);
  return copyJson(answer);
}

module.exports = {
  BUILT_IN_GROUPS,
  resourcePathFor,
  isSecrets,
  isError,
  transform,
  cachedAnswer,
  copyJson,
  AnswerMemo,
  MEMO_ENTRIES,
};
