'use strict';
// NativeInformerFetcher: Backstage's KubernetesFetcher answered from shared native informers.
//
// Backstage's default fetcher sends one LIST per object type per cluster per tab load. This one
// keeps, per cluster and resource type, an informer of the process's NativeKubernetesWatcher and
// answers from its native cache, filtered there by the request's label selector and namespace.
// What it cannot serve the same way it hands to the default fetcher, so the answer is always the
// default's: viewer credentials (client-side auth providers), selectors it does not cache, types
// not configured, informers not yet synced or cut off from their cluster, and pod metrics.
//
// Which informers. Entities are mostly found by `backstage.io/kubernetes-id=<id>`; caching all
// of a type to answer them would make memory grow with the cluster. So a request whose selector
// can only match objects carrying that label is served by one informer per (cluster, type) with
// the existence selector `backstage.io/kubernetes-id`, which holds exactly the objects some
// entity can ask for. Any other selector gets an informer of its own (per selector and
// namespace), shared by the entities that write the same selector. Every informer closes once
// no request has used it for `idleTimeoutMs`.

const { parseSelector, requiresKey, SelectorError } = require('./selector');

/** The label the Kubernetes plugin selects entities' objects by. */
const ID_LABEL = 'backstage.io/kubernetes-id';

/**
 * Auth providers whose credential is the backend's own, the same for every viewer; any other
 * (google, oidc and aks use the viewer's token from the request's `auth`; a custom strategy may
 * too) is never answered from a cache shared between users.
 */
const SERVER_SIDE_PROVIDERS = new Set([
  'serviceAccount',
  'aws',
  'azure',
  'googleServiceAccount',
  'localKubectlProxy',
]);

/** Backstage's `statusCodeToErrorType` (KubernetesConnection). */
function statusCodeToErrorType(statusCode) {
  switch (statusCode) {
    case 400:
      return 'BAD_REQUEST';
    case 401:
      return 'UNAUTHORIZED_ERROR';
    case 404:
      return 'NOT_FOUND';
    case 500:
      return 'SYSTEM_ERROR';
    default:
      return 'UNKNOWN_ERROR';
  }
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

/** The etcd key order in which the API server lists objects. */
function storageKey(object) {
  const { namespace, name } = object.metadata ?? {};
  return namespace ? `${namespace}/${name}` : String(name);
}

function redact(values) {
  return Object.fromEntries(Object.keys(values).map((key) => [key, '***']));
}

/** One informer of the fetcher's: what it has told us so far, and who waits for it. */
class Entry {
  /** Resolves the pending `wait()`s. */
  #waiters = new Set();

  constructor(key, informer, description) {
    this.key = key;
    this.informer = informer;
    this.description = description;
    this.lastUsed = Date.now();
    this.synced = false;
    /** The last ERROR's `{ errorType, statusCode, resourcePath }` and when it came, until a sign of life. */
    this.error = null;
    this.errorAt = 0;
    this.ended = false;
    this.#follow();
  }

  /** Whether a first request can be answered from it now (or as an error). */
  get settled() {
    return this.synced || this.error !== null || this.ended;
  }

  /** Waits until settled, for at most `ms`. */
  wait(ms) {
    if (this.settled) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#waiters.add(done);
    });
  }

  /**
   * The current failure, or null. A failure lasts until the informer shows it works again: a
   * change, a SYNCED, or a bookmark (the informer's `lastEventTime`) after the failure.
   */
  currentError() {
    if (this.error === null) return null;
    const last = this.informer.stats().lastEventTime;
    if (last !== undefined && last > this.errorAt) this.error = null;
    return this.error;
  }

  close() {
    this.ended = true;
    this.informer.close();
    this.#notify();
  }

  /** Reads the informer's events for its state only (the objects are read from the cache). */
  async #follow() {
    try {
      for await (const event of this.informer) {
        if (event.type === 'ERROR') {
          // 410 Expired is the informer's own business: it relists, and the cache stays valid.
          if (event.error.statusCode === 410) continue;
          this.error = event.error;
          this.errorAt = Date.now();
          if (!event.retrying) this.ended = true;
        } else if (event.type === 'SYNCED') {
          this.synced = true;
          this.error = null;
        } else if (this.synced) {
          this.error = null;
        }
        this.#notify();
      }
    } catch {
      // An iterator that fails has ended the informer for us.
    }
    this.ended = true;
    this.#notify();
  }

  #notify() {
    if (!this.settled) return;
    for (const done of [...this.#waiters]) done();
  }
}

class NativeInformerFetcher {
  #watcher;
  #default;
  #logger;
  #idleTimeoutMs;
  #syncTimeoutMs;
  #stripManagedFields;
  #objectTypes;
  /** Entry by informer key. */
  #entries = new Map();
  /** Per cluster: the newest credential a request brought, which its informers' getCredential answers. */
  #clusters = new Map();
  #sweeper;
  #closed = false;

  /**
   * @param {object} options
   * @param {import('..').NativeKubernetesWatcher} options.watcher the process's watcher
   * @param {object} options.defaultFetcher Backstage's own fetcher (`getDefault()`)
   * @param {object} [options.logger]
   * @param {number} [options.idleTimeoutMs] close an informer no request used for this long
   * @param {number} [options.syncTimeoutMs] a first request waits this long for the initial list
   * @param {boolean} [options.stripManagedFields] answer without `metadata.managedFields`
   * @param {Set<string>} [options.objectTypes] object types served from informers
   */
  constructor({
    watcher,
    defaultFetcher,
    logger,
    idleTimeoutMs = 600_000,
    syncTimeoutMs = 5_000,
    stripManagedFields = true,
    objectTypes,
  }) {
    this.#watcher = watcher;
    this.#default = defaultFetcher;
    this.#logger = logger;
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#syncTimeoutMs = syncTimeoutMs;
    this.#stripManagedFields = stripManagedFields;
    this.#objectTypes = objectTypes ?? null;
    const every = Math.min(Math.max(idleTimeoutMs / 4, 50), 30_000);
    this.#sweeper = setInterval(() => this.#sweep(), every);
    this.#sweeper.unref();
  }

  /** Pod metrics are not watchable: always the default fetcher's. */
  fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector) {
    return this.#default.fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector);
  }

  async fetchObjectsForService(params) {
    const { clusterDetails, credential } = params;
    if (this.#closed || !this.#sharedCredential(clusterDetails, credential)) return this.#delegate(params);
    const selector = params.labelSelector ?? '';
    let requirements;
    try {
      requirements = parseSelector(selector);
    } catch (err) {
      if (!(err instanceof SelectorError)) throw err;
      // The API server's 400 for it, exactly as the default fetcher reports it; no informer.
      return this.#delegate(params);
    }
    // No selector would mean caching whole types: left to the default fetcher.
    if (requirements.length === 0) return this.#delegate(params);

    const cluster = this.#cluster(clusterDetails, credential);
    const types = [...params.objectTypesToFetch];
    const resources = [...types, ...params.customResources];
    const byId = requiresKey(requirements, ID_LABEL);
    const namespace = params.namespace || undefined;
    let entries;
    try {
      entries = resources.map((resource) =>
        this.#cached(resource)
          ? this.#entryFor(cluster, clusterDetails, resource, byId, selector, namespace)
          : null,
      );
    } catch (err) {
      // The watcher refused the cluster's details (a TypeError naming the field).
      this.#logger?.warn(`kube-watch-native: cannot cache cluster ${clusterDetails.name}: ${err.message}`);
      return this.#delegate(params);
    }
    await this.#settle(entries);
    // A credential allowed to list a type in the entity's namespace only: the cluster-wide
    // informer is refused (403); a namespaced one answers instead.
    if (byId && namespace) {
      let fallback = false;
      entries = entries.map((entry, i) => {
        if (entry?.currentError()?.statusCode !== 403 || entry.description.namespace) return entry;
        fallback = true;
        return this.#entryFor(cluster, clusterDetails, resources[i], byId, selector, namespace, true);
      });
      if (fallback) await this.#settle(entries);
    }

    const results = resources.map((resource, i) => {
      const custom = i >= types.length;
      const entry = entries[i];
      const live = () => this.#live(params, resource, custom);
      if (!entry) return live();
      entry.lastUsed = Date.now();
      if (entry.ended) {
        this.#drop(entry);
        return live();
      }
      const error = entry.currentError();
      if (error) {
        // Below HTTP (connect, TLS, reset): the default fetcher's own FetchError, or its fresh
        // answer once the cluster is back and before the informer has shown it. A 401: this
        // request's credential may be newer than the one the informer was refused with (a
        // rotated token), and the informer takes it only at its next retry.
        if (!error.statusCode || error.statusCode === 401) return live();
        return {
          errorType: statusCodeToErrorType(error.statusCode),
          statusCode: error.statusCode,
          resourcePath: resourcePathFor(clusterDetails, resource, namespace),
        };
      }
      if (!entry.synced) return live();
      let items;
      try {
        items = entry.informer.list({ namespace, labelSelector: selector });
      } catch {
        // A selector the native cache reads otherwise than this parser: the API server decides.
        return live();
      }
      const answered = this.#transform(resource, items);
      return answered ?? live();
    });
    return Promise.all(results).then((all) => ({
      errors: all.filter((r) => Object.hasOwn(r, 'errorType')),
      responses: all.filter((r) => !Object.hasOwn(r, 'errorType')),
    }));
  }

  /** What the fetcher's informers are, for diagnostics and tests. */
  informers() {
    return [...this.#entries.values()].map((entry) => ({
      ...entry.description,
      synced: entry.synced,
      size: entry.informer.size,
      error: entry.error,
      idleMs: Date.now() - entry.lastUsed,
    }));
  }

  /** Closes every informer; requests after this go to the default fetcher. */
  close() {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const entry of this.#entries.values()) entry.close();
    this.#entries.clear();
    this.#clusters.clear();
  }

  #sharedCredential(clusterDetails, credential) {
    const provider = clusterDetails?.authMetadata?.['kubernetes.io/auth-provider'];
    if (!SERVER_SIDE_PROVIDERS.has(provider) || !credential) return false;
    return credential.type !== 'anonymous' || provider === 'localKubectlProxy';
  }

  #cached(resource) {
    return this.#objectTypes === null || this.#objectTypes.has(resource.objectType);
  }

  /** The cluster's credential holder, updated with this request's credential. */
  #cluster(clusterDetails, credential) {
    const key = JSON.stringify([
      clusterDetails.name,
      clusterDetails.url,
      clusterDetails.authMetadata['kubernetes.io/auth-provider'],
      clusterDetails.caData ?? '',
      clusterDetails.caFile ?? '',
      Boolean(clusterDetails.skipTLSVerify),
    ]);
    let cluster = this.#clusters.get(key);
    if (!cluster) {
      cluster = { key, credential };
      // One function per cluster, so the watcher shares its informers between requests.
      cluster.getCredential = () => cluster.credential;
      this.#clusters.set(key, cluster);
    }
    cluster.credential = credential;
    return cluster;
  }

  #entryFor(cluster, clusterDetails, resource, byId, selector, namespace, namespaced = false) {
    const informerSelector = byId ? ID_LABEL : selector;
    const informerNamespace = byId && !namespaced ? undefined : namespace;
    const { group = '', apiVersion, plural } = resource;
    const key = JSON.stringify([
      cluster.key,
      group,
      apiVersion,
      plural,
      informerNamespace ?? '',
      informerSelector,
    ]);
    let entry = this.#entries.get(key);
    if (entry && !entry.ended) return entry;
    if (entry) this.#drop(entry);
    const informer = this.#watcher.informer(
      { clusterDetails, getCredential: cluster.getCredential, group, apiVersion, plural },
      {
        labelSelector: informerSelector,
        namespace: informerNamespace,
        // Dropped natively before the object is cached: the cache never holds them.
        ...(this.#stripManagedFields ? { strip: ['metadata.managedFields'] } : {}),
      },
    );
    entry = new Entry(key, informer, {
      cluster: clusterDetails.name,
      group,
      apiVersion,
      plural,
      namespace: informerNamespace,
      labelSelector: informerSelector,
    });
    this.#entries.set(key, entry);
    this.#logger?.debug?.(
      `kube-watch-native: informer for ${plural} of cluster ${clusterDetails.name} (${informerSelector}${
        informerNamespace ? ` in ${informerNamespace}` : ''
      }) opened`,
    );
    return entry;
  }

  async #settle(entries) {
    const pending = entries.filter((entry) => entry && !entry.settled);
    if (pending.length > 0) await Promise.all(pending.map((entry) => entry.wait(this.#syncTimeoutMs)));
  }

  /** The default fetcher's answer, without `managedFields` when configured (as cached answers are). */
  #delegate(params) {
    const answer = this.#default.fetchObjectsForService(params);
    if (!this.#stripManagedFields) return answer;
    return answer.then((wrapper) => {
      for (const response of wrapper.responses) {
        for (const item of response.resources ?? []) {
          if (item?.metadata?.managedFields !== undefined) delete item.metadata.managedFields;
        }
      }
      return wrapper;
    });
  }

  /** The default fetcher's answer for this one resource: one LIST, its result or its error. */
  #live(params, resource, custom) {
    return this.#delegate({
      ...params,
      objectTypesToFetch: new Set(custom ? [] : [resource]),
      customResources: custom ? [resource] : [],
    }).then(({ errors, responses }) => errors[0] ?? responses[0]);
  }

  /**
   * The cached objects as the default fetcher returns a LIST's: in the API server's order,
   * without the `kind` and `apiVersion` list items lack (custom resources get `kind`, as the
   * default gives them), secrets' values redacted (`managedFields` never reached the cache when
   * `stripManagedFields` is on: the informer strips them).
   * Undefined when a custom resource has no kind (the default's answer is then its error).
   */
  #transform(resource, items) {
    const custom = resource.objectType === 'customresources';
    const secrets =
      resource.objectType === 'secrets' ||
      (resource.group === '' && resource.apiVersion === 'v1' && resource.plural === 'secrets');
    const keyed = items.map((item) => [storageKey(item), item]);
    keyed.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const out = [];
    for (const [, item] of keyed) {
      const { kind, apiVersion: _apiVersion, ...rest } = item;
      if (custom && kind === undefined) return undefined;
      if (secrets || kind === 'Secret') {
        if (rest.data && typeof rest.data === 'object') rest.data = redact(rest.data);
        if (rest.stringData && typeof rest.stringData === 'object') rest.stringData = redact(rest.stringData);
      }
      out.push(custom ? { ...rest, kind } : rest);
    }
    return { type: resource.objectType, resources: out };
  }

  #sweep() {
    const now = Date.now();
    for (const entry of this.#entries.values()) {
      if (now - entry.lastUsed >= this.#idleTimeoutMs) {
        this.#logger?.debug?.(
          `kube-watch-native: informer for ${entry.description.plural} of cluster ${entry.description.cluster} closed after ${Math.round(
            (now - entry.lastUsed) / 1000,
          )} s unused`,
        );
        this.#drop(entry);
      }
    }
  }

  #drop(entry) {
    if (this.#entries.get(entry.key) === entry) this.#entries.delete(entry.key);
    entry.close();
  }
}

module.exports = {
  NativeInformerFetcher,
  statusCodeToErrorType,
  resourcePathFor,
  ID_LABEL,
  SERVER_SIDE_PROVIDERS,
};
