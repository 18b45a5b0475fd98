'use strict';
// NativeInformerFetcher: Backstage's KubernetesFetcher answered from shared native informers.
//
// Backstage's default fetcher sends one LIST per object type per cluster per tab load. This one
// keeps, per identity and resource type, an informer of the process's NativeKubernetesWatcher
// and answers from its native cache, filtered there by the request's label selector and
// namespace. What it cannot serve the same way it hands to the default fetcher, so the answer
// is always the default's: viewer credentials (client-side auth providers), selectors that can
// match unlabelled objects, secrets unless configured, types not configured, informers not yet
// synced or failing, anything past the bounds, and pod metrics.
//
// Identity. The cache is shared by every viewer and entity, so an informer belongs to exactly
// the identity the default fetcher would send its LIST as: the cluster's URL, CA and TLS
// settings, its auth provider with the whole `authMetadata`, and the credential the request
// resolved to (a keyed hash of the token or certificate, never the secret itself). Two requests
// share an informer only if they would be sent with the same credential. The exception is a
// credential minted afresh from the backend's own identity (aws, azure, googleServiceAccount,
// and the in-cluster service account's projected token: `rotatingAuthProviders`): its rotations
// keep the informer, which takes the newest token through its `getCredential`.
//
// Which informers. Entities are mostly found by `backstage.io/kubernetes-id=<id>`; caching all
// of a type to answer them would make memory grow with the cluster. So a request whose selector
// can only match objects carrying that label is served by one informer per (identity, type)
// with the existence selector `backstage.io/kubernetes-id`, which holds exactly the objects some
// entity can ask for. Any other selector with at least one positive requirement gets an informer
// of its own (per selector and namespace), shared by the entities that write the same selector.
// A selector whose every requirement is negative (`a!=b`, `!a`, `a notin (b)`, or none) selects
// unlabelled objects too, so it would cache the whole type: the default fetcher answers it.
// Every informer closes once no request has used it for `idleTimeoutMs`, and no more than
// `maxInformers` are open nor `maxCachedBytes` of JSON held: past either, new informers are not
// opened and the default fetcher answers what they would have.

const crypto = require('node:crypto');
const { parseSelector, requiresKey, matchesUnlabelled, SelectorError } = require('./selector');
const { DEFAULT_OBJECT_TYPES, DEFAULT_ROTATING_PROVIDERS, DEFAULTS } = require('./config');
const { liveRequestContext, answerNotLive, answerFollowed } = require('./live');

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

/** How long a type found missing (404) is answered by the default fetcher before it is tried again. */
const MISSING_TTL_MS = 60_000;
/** At most one warning per bound this often. */
const WARN_EVERY_MS = 60_000;
/**
 * How long after a watch (re)opens its cache is trusted: a resumed watch first replays what
 * changed while it was closed, which the API server writes right after the headers.
 */
const WATCH_SETTLE_MS = 250;
/** Answers remembered per informer (per namespace and selector); likewise the live tab's keys. */
const MEMO_LIMIT = 256;
/**
 * An informer with live viewers is looked at again at most this often: a busy type's changes
 * cost its answers' comparison a few times a second, not once per change (the publisher then
 * sends at most one signal per viewer per `live.minInterval`).
 */
const LIVE_CHECK_MS = 100;

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

/** The key of the HMAC that turns credentials into identity keys: this process's own, never stored. */
const IDENTITY_KEY = crypto.randomBytes(32);

/** A keyed hash: equal for equal texts, and telling nothing of the text without the process's key. */
function keyedHash(text) {
  return crypto.createHmac('sha256', IDENTITY_KEY).update(text).digest('base64url');
}

/** The secret part of a credential, as one string (only ever hashed). */
function credentialSecret(credential) {
  switch (credential.type) {
    case 'bearer token':
      return `bearer\n${credential.token}`;
    case 'x509 client certificate':
      return `x509\n${credential.cert}\n${credential.key}`;
    default:
      return String(credential.type);
  }
}

/** One identity's informers: the credential the newest request brought, which they answer with. */
class Identity {
  constructor(key, credential, clusterName) {
    this.key = key;
    this.credential = credential;
    this.clusterName = clusterName;
    this.lastUsed = Date.now();
    this.entries = new Set();
    // One function per identity, so the watcher shares its informers between requests of it
    // and no other identity's.
    this.getCredential = () => this.credential;
  }
}

/** One informer of the fetcher's, with the answers computed from its cache. */
class Entry {
  constructor(key, identity, informer, description) {
    this.key = key;
    this.identity = identity;
    this.informer = informer;
    this.description = description;
    this.lastUsed = Date.now();
    /** Requests between choosing this entry and answering from it: the idle sweep leaves it be. */
    this.inUse = 0;
    /** Until when the first requests wait for the initial list; null before the first. */
    this.waitUntil = null;
    /** 'namespaced' or 'cluster' once known (a cluster-wide informer asked for a namespace). */
    this.scope = undefined;
    /** `${objectType}\0${namespace}\0${selector}` → { generation, answer }. */
    this.memo = new Map();
    /** The live tab's watch keys on this informer → { namespace, selector, last fingerprint }. */
    this.watched = new Map();
    /** Ends the live tab's following of this informer; null while not followed. */
    this.unfollow = null;
    this.checkTimer = null;
    this.checkedAt = 0;
  }

  touch() {
    this.lastUsed = Date.now();
    this.identity.lastUsed = this.lastUsed;
  }

  /** Synced, failing or ended: an answer (from the cache, or live) can be given now. */
  settled() {
    const state = this.informer.state();
    return state.synced || state.error !== null || state.finished;
  }

  /**
   * Waits until settled, at most until `syncTimeoutMs` after the first request that waited:
   * the sync timeout is spent once per informer, not once per load.
   */
  wait(syncTimeoutMs) {
    if (this.settled()) return Promise.resolve();
    this.waitUntil ??= Date.now() + syncTimeoutMs;
    const ms = this.waitUntil - Date.now();
    if (ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      let stop = () => {};
      const done = () => {
        clearTimeout(timer);
        stop();
        resolve();
      };
      const timer = setTimeout(done, ms);
      stop = this.informer.onStateChange(() => {
        if (this.settled()) done();
      });
    });
  }

  close() {
    this.memo.clear();
    this.watched.clear();
    this.unfollow?.();
    this.unfollow = null;
    clearTimeout(this.checkTimer);
    this.informer.close();
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
  #maxInformers;
  #maxCachedBytes;
  #rotating;
  /** The live tab's publisher (./live.js), when the Signals plugin is installed. */
  #publisher;
  /** Entry by informer key. */
  #entries = new Map();
  /** Identity by identity key: what holds credentials, pruned with the informers. */
  #identities = new Map();
  /**
   * Informer keys not to open for now, with until when: types the cluster does not serve (404,
   * tried again after MISSING_TTL_MS), and cluster-wide informers the credential is refused
   * (403, answered by namespaced ones; forgotten once unused for idleTimeoutMs).
   */
  #avoid = new Map();
  /** When each bound last warned. */
  #warned = new Map();
  /** How resources were answered: from a cache, or by the default fetcher (per resource). */
  #answered = { cached: 0, delegated: 0 };
  /** The JSON cached by all informers, recounted at most once a second. */
  #cachedBytes = { at: 0, bytes: 0 };
  #sweeper;
  #closed = false;

  /**
   * @param {object} options
   * @param {import('..').NativeKubernetesWatcher} options.watcher the process's watcher
   * @param {object} options.defaultFetcher Backstage's own fetcher (`getDefault()`)
   * @param {object} [options.logger]
   * @param {number} [options.idleTimeoutMs] close an informer no request used for this long
   * @param {number} [options.syncTimeoutMs] the first requests wait this long for the initial list
   * @param {boolean} [options.stripManagedFields] answer without `metadata.managedFields` (default false)
   * @param {Set<string>} [options.objectTypes] object types served from informers (default: all but secrets)
   * @param {number} [options.maxInformers] informers open at most
   * @param {number} [options.maxCachedBytes] JSON cached at most, over all informers
   * @param {string[]} [options.rotatingAuthProviders] providers whose rotating tokens keep their informers
   * @param {ReturnType<import('./live').createLivePublisher>} [options.live] the live tab's publisher
   */
  constructor({
    watcher,
    defaultFetcher,
    logger,
    idleTimeoutMs = DEFAULTS.idleTimeoutMs,
    syncTimeoutMs = DEFAULTS.syncTimeoutMs,
    stripManagedFields = DEFAULTS.stripManagedFields,
    objectTypes = new Set(DEFAULT_OBJECT_TYPES),
    maxInformers = DEFAULTS.maxInformers,
    maxCachedBytes = DEFAULTS.maxCachedBytes,
    rotatingAuthProviders = DEFAULT_ROTATING_PROVIDERS,
    live,
  }) {
    this.#watcher = watcher;
    this.#default = defaultFetcher;
    this.#logger = logger;
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#syncTimeoutMs = syncTimeoutMs;
    this.#stripManagedFields = stripManagedFields;
    this.#objectTypes = new Set(objectTypes);
    this.#maxInformers = maxInformers;
    this.#maxCachedBytes = maxCachedBytes;
    this.#rotating = new Set(rotatingAuthProviders);
    this.#publisher = live ?? null;
    const every = Math.min(Math.max(idleTimeoutMs / 4, 50), 30_000);
    this.#sweeper = setInterval(() => this.#sweep(), every);
    this.#sweeper.unref();
  }

  /** Pod metrics are not watchable: always the default fetcher's. */
  fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector) {
    answerNotLive();
    return this.#default.fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector);
  }

  async fetchObjectsForService(params) {
    const { clusterDetails, credential } = params;
    if (this.#closed || !this.#sharedCredential(clusterDetails, credential)) return this.#delegateAll(params);
    const selector = params.labelSelector ?? '';
    let requirements;
    try {
      requirements = parseSelector(selector);
    } catch (err) {
      if (!(err instanceof SelectorError)) throw err;
      // The API server's 400 for it, exactly as the default fetcher reports it; no informer.
      return this.#delegateAll(params);
    }
    // A selector that unlabelled objects match would cache whole types: the default answers.
    if (matchesUnlabelled(requirements)) return this.#delegateAll(params);

    const types = [...params.objectTypesToFetch];
    const resources = [...types, ...params.customResources];
    const byId = requiresKey(requirements, ID_LABEL);
    const namespace = params.namespace || undefined;
    const opened = [];
    let entries;
    try {
      const identity = this.#identity(clusterDetails, credential);
      const entryFor = (resource, namespaced) =>
        this.#entryFor(identity, clusterDetails, resource, { byId, selector, namespace, namespaced }, opened);
      entries = resources.map((resource) => {
        if (!this.#cached(resource)) return null;
        // A credential refused the cluster-wide list of a type: namespaced informers answer.
        const refused = byId && namespace && this.#avoided(this.#entryKey(identity, resource, ID_LABEL));
        return entryFor(resource, Boolean(refused));
      });
      await this.#settle(entries);
      // A credential allowed to list a type in the entity's namespace only: the cluster-wide
      // informer is refused (403); a namespaced one answers instead, and the cluster-wide one
      // is not tried again while requests keep coming.
      if (byId && namespace) {
        let fallback = false;
        entries = entries.map((entry, i) => {
          if (!entry || entry.description.namespace || entry.informer.state().error?.statusCode !== 403) {
            return entry;
          }
          fallback = true;
          this.#avoid.set(entry.key, { until: Date.now() + this.#idleTimeoutMs, refresh: true });
          this.#drop(entry);
          return entryFor(resources[i], true);
        });
        if (fallback) await this.#settle(entries);
      }
    } catch (err) {
      // The watcher refused the cluster's details (a TypeError naming the field): what this
      // request opened closes now, not at idle.
      for (const entry of opened) this.#drop(entry);
      this.#logger?.warn(`kube-watch-native: cannot cache cluster ${clusterDetails.name}: ${err.message}`);
      return this.#delegateAll(params);
    }

    // Answered now: the entries are used as of this moment, whatever the wait took.
    for (const entry of entries) entry?.touch();
    const results = resources.map((resource, i) => {
      const answer = this.#answer(params, resource, i >= types.length, entries[i], selector, namespace);
      this.#answered[answer instanceof Promise ? 'delegated' : 'cached']++;
      return answer;
    });
    if (this.#publisher) this.#viewed(entries, selector, namespace);
    return Promise.all(results).then((all) => ({
      errors: all.filter(isError),
      responses: all.filter((r) => !isError(r)),
    }));
  }

  /** What the fetcher's informers are, for diagnostics and tests. */
  informers() {
    return [...this.#entries.values()].map((entry) => {
      const state = entry.informer.state();
      return {
        ...entry.description,
        synced: state.synced,
        size: state.size,
        error: state.error,
        idleMs: Date.now() - entry.lastUsed,
      };
    });
  }

  /** How many resources were answered from a cache, and how many by the default fetcher. */
  answered() {
    return { ...this.#answered };
  }

  /** Identities holding credentials now (for tests: they are pruned with their informers). */
  identities() {
    return this.#identities.size;
  }

  /** Closes every informer; requests after this go to the default fetcher. */
  close() {
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const entry of this.#entries.values()) entry.close();
    this.#entries.clear();
    this.#identities.clear();
    this.#avoid.clear();
  }

  #sharedCredential(clusterDetails, credential) {
    const provider = clusterDetails?.authMetadata?.['kubernetes.io/auth-provider'];
    if (!SERVER_SIDE_PROVIDERS.has(provider) || !credential) return false;
    return credential.type !== 'anonymous' || provider === 'localKubectlProxy';
  }

  /** Configured to be cached; secrets only when named, whatever route asks for them. */
  #cached(resource) {
    if (isSecrets(resource)) return this.#objectTypes.has('secrets');
    return this.#objectTypes.has(resource.objectType);
  }

  /** The identity the default fetcher would send this request as (see the top of the file). */
  #identity(clusterDetails, credential) {
    const authMetadata = clusterDetails.authMetadata ?? {};
    const provider = authMetadata['kubernetes.io/auth-provider'];
    const rotating =
      this.#rotating.has(provider) || (provider === 'serviceAccount' && !authMetadata.serviceAccountToken);
    const key = keyedHash(
      JSON.stringify([
        clusterDetails.url,
        clusterDetails.caData ?? '',
        clusterDetails.caFile ?? '',
        Boolean(clusterDetails.skipTLSVerify),
        Object.keys(authMetadata)
          .sort()
          .map((k) => [k, authMetadata[k]]),
        rotating ? `rotating\n${credential.type}` : credentialSecret(credential),
      ]),
    );
    let identity = this.#identities.get(key);
    if (!identity) {
      identity = new Identity(key, credential, clusterDetails.name);
      this.#identities.set(key, identity);
    }
    // The same identity's newest credential (a rotated token); for any other provider it is
    // the same credential, since the key holds its hash.
    identity.credential = credential;
    identity.lastUsed = Date.now();
    return identity;
  }

  #entryKey(identity, { group = '', apiVersion, plural }, selector, namespace) {
    return JSON.stringify([identity.key, group, apiVersion, plural, namespace ?? '', selector]);
  }

  /** Whether `key` is to be avoided now (refreshing its time when it is kept while used). */
  #avoided(key) {
    const avoid = this.#avoid.get(key);
    if (!avoid) return false;
    const now = Date.now();
    if (now >= avoid.until) {
      this.#avoid.delete(key);
      return false;
    }
    if (avoid.refresh) avoid.until = now + this.#idleTimeoutMs;
    return true;
  }

  /** The entry that answers `resource`, opened if need be; null when none may be opened. */
  #entryFor(identity, clusterDetails, resource, { byId, selector, namespace, namespaced }, opened) {
    const informerSelector = byId ? ID_LABEL : selector;
    const informerNamespace = byId && !namespaced ? undefined : namespace;
    const key = this.#entryKey(identity, resource, informerSelector, informerNamespace);
    let entry = this.#entries.get(key);
    if (entry && !entry.informer.state().finished) {
      entry.touch();
      return entry;
    }
    if (entry) this.#drop(entry);
    if (this.#avoided(key) || !this.#roomForOne()) return null;
    const { group = '', apiVersion, plural } = resource;
    const informer = this.#watcher.informer(
      { clusterDetails, getCredential: identity.getCredential, group, apiVersion, plural },
      {
        labelSelector: informerSelector,
        namespace: informerNamespace,
        // Dropped natively before the object is cached: the cache never holds them.
        ...(this.#stripManagedFields ? { strip: ['metadata.managedFields'] } : {}),
      },
    );
    entry = new Entry(key, identity, informer, {
      cluster: clusterDetails.name,
      group,
      apiVersion,
      plural,
      namespace: informerNamespace,
      labelSelector: informerSelector,
    });
    this.#entries.set(key, entry);
    identity.entries.add(entry);
    opened.push(entry);
    entry.touch();
    this.#logger?.debug?.(
      `kube-watch-native: informer for ${plural} of cluster ${clusterDetails.name} (${informerSelector}${
        informerNamespace ? ` in ${informerNamespace}` : ''
      }) opened`,
    );
    return entry;
  }

  /** Whether the bounds leave room for one more informer; warns (rate-limited) when not. */
  #roomForOne() {
    if (this.#entries.size >= this.#maxInformers) {
      this.#warnBound('maxInformers', `${this.#maxInformers} informers are open`);
      return false;
    }
    const now = Date.now();
    if (now - this.#cachedBytes.at >= 1000) {
      let bytes = 0;
      for (const entry of this.#entries.values()) bytes += entry.informer.state().cachedBytes;
      this.#cachedBytes = { at: now, bytes };
    }
    if (this.#cachedBytes.bytes >= this.#maxCachedBytes) {
      this.#warnBound('maxCachedBytes', `the informers hold ${this.#cachedBytes.bytes} bytes of JSON`);
      return false;
    }
    return true;
  }

  #warnBound(bound, why) {
    const now = Date.now();
    if (now - (this.#warned.get(bound) ?? -Infinity) < WARN_EVERY_MS) return;
    this.#warned.set(bound, now);
    this.#logger?.warn(
      `kube-watch-native: kubernetes.nativeInformers.${bound} reached (${why}): requests that need another informer are answered by the default fetcher; what is cached stays`,
    );
  }

  /** Waits for the entries to settle (at most syncTimeout), kept from the idle sweep meanwhile. */
  async #settle(entries) {
    const held = entries.filter(Boolean);
    for (const entry of held) entry.inUse++;
    try {
      await Promise.all(held.map((entry) => entry.wait(this.#syncTimeoutMs)));
    } finally {
      for (const entry of held) entry.inUse--;
    }
  }

  /** One resource's answer: from the cache when it equals the default's, else the default's. */
  #answer(params, resource, custom, entry, selector, namespace) {
    const live = () => this.#live(params, resource, custom);
    if (!entry) return live();
    const state = entry.informer.state();
    if (state.finished) {
      this.#drop(entry);
      return live();
    }
    if (state.error) {
      // A type the cluster does not serve: closed now, and not opened again for a while.
      if (state.error.statusCode === 404 && !state.synced) {
        this.#avoid.set(entry.key, { until: Date.now() + MISSING_TTL_MS, refresh: false });
        this.#drop(entry);
      }
      // Any other failure not yet over (the informer retries): the default's fresh answer,
      // whatever it is, until a successful request, an event or a bookmark shows the cache
      // is live again.
      return live();
    }
    // Not synced yet, or between watches (a backoff after a watch ended, a reconnect, a relist):
    // the cache may be behind the server, so the default's fresh answer.
    if (!state.synced || state.watchingSince === null || Date.now() - state.watchingSince < WATCH_SETTLE_MS) {
      return live();
    }
    // A cluster-wide informer asked for a namespace: the default's namespaced LIST of a
    // cluster-scoped type is a 404, learnt from its answer once.
    if (namespace && !entry.description.namespace && entry.scope !== 'namespaced') {
      if (entry.scope === 'cluster') {
        return {
          errorType: 'NOT_FOUND',
          statusCode: 404,
          resourcePath: resourcePathFor(params.clusterDetails, resource, namespace),
        };
      }
      return live().then((result) => {
        if (!isError(result)) entry.scope = 'namespaced';
        else if (result.statusCode === 404) entry.scope = 'cluster';
        return result;
      });
    }
    // The answer's form depends on how the type was asked for (a default type, or the same
    // type as a custom resource, which gets `kind`).
    const memoKey = `${resource.objectType}\0${namespace ?? ''}\0${selector}`;
    const memo = entry.memo.get(memoKey);
    if (memo && memo.generation === state.generation) return memo.answer;
    let items;
    try {
      items = entry.informer.list({ namespace, labelSelector: selector });
    } catch {
      // A selector the native cache reads otherwise than this parser: the API server decides.
      return live();
    }
    const answer = this.#transform(resource, items);
    if (answer === undefined) return live();
    if (entry.memo.size >= MEMO_LIMIT) entry.memo.clear();
    // The generation read before the list: a change in between only makes the memo stale early.
    entry.memo.set(memoKey, { generation: state.generation, answer });
    return answer;
  }

  /** The whole request answered by the default fetcher. */
  #delegateAll(params) {
    this.#answered.delegated += params.objectTypesToFetch.size + params.customResources.length;
    return this.#delegate(params);
  }

  /** The default fetcher's answer, without `managedFields` when configured (as cached answers are). */
  #delegate(params) {
    answerNotLive();
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
   * The cached objects as the default fetcher returns a LIST's: in the API server's order; the
   * `kind` and `apiVersion` that built-in types' list items lack are dropped (a custom resource
   * of a built-in group gets `kind`, as the default gives it; a CRD's items keep both, as the
   * server sends them); secrets' values redacted (`managedFields` never reached the cache when
   * `stripManagedFields` is on: the informer strips them).
   * Undefined when a custom resource has no kind (the default's answer is then its error).
   */
  #transform(resource, items) {
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
   * The live tab: a user's load (the objects provider's `liveRequestContext`) depends on these
   * informers' answers for its selector and namespace; the publisher is told, and each informer
   * is followed, so that a change to any of those answers signals the user.
   */
  #viewed(entries, selector, namespace) {
    const viewer = liveRequestContext.getStore();
    if (!viewer) return;
    const keys = [];
    for (const entry of entries) {
      if (!entry || this.#entries.get(entry.key) !== entry) continue;
      const key = `${entry.key}\0${namespace ?? ''}\0${selector}`;
      if (!entry.watched.has(key)) {
        if (entry.watched.size >= MEMO_LIMIT) entry.watched.delete(entry.watched.keys().next().value);
        entry.watched.set(key, { namespace, selector, last: this.#fingerprint(entry, namespace, selector) });
      }
      this.#follow(entry);
      keys.push(key);
    }
    if (keys.length === 0) return;
    if (this.#publisher.viewed(viewer.userEntityRef, viewer.entityRef, keys)) answerFollowed();
    else answerNotLive();
  }

  /**
   * What a viewer's answer from `entry` is now, as a short string: its failure, whether it is
   * synced, and a hash of the objects it selects (the text, unparsed).
   */
  #fingerprint(entry, namespace, selector) {
    const state = entry.informer.state();
    let text = '';
    if (state.synced) {
      try {
        text = entry.informer.listText({ namespace, labelSelector: selector });
      } catch {
        // A selector the native cache refuses: its answer is the default's, which never changes here.
      }
    }
    const digest = crypto.createHash('sha256').update(text).digest('base64url');
    return `${state.error?.statusCode ?? ''}|${state.synced}|${digest}`;
  }

  /** Looks again at `entry` when it syncs, fails, recovers, ends or (once armed) changes. */
  #follow(entry) {
    if (entry.unfollow) return;
    entry.unfollow = entry.informer.onStateChange(() => this.#scheduleCheck(entry));
    if (!entry.informer.armChangeNotice(entry.informer.state().generation)) this.#scheduleCheck(entry);
  }

  #scheduleCheck(entry) {
    if (entry.checkTimer !== null) return;
    const wait = Math.max(0, entry.checkedAt + LIVE_CHECK_MS - Date.now());
    entry.checkTimer = setTimeout(() => {
      entry.checkTimer = null;
      this.#check(entry);
    }, wait);
    entry.checkTimer.unref?.();
  }

  /** Signals every watch key of `entry` whose answer changed; forgets the keys nobody watches. */
  #check(entry) {
    if (this.#entries.get(entry.key) !== entry || !this.#publisher) return;
    entry.checkedAt = Date.now();
    // Read before the answers, so a change while they are compared arms no stale notice.
    const { generation } = entry.informer.state();
    for (const [key, watched] of entry.watched) {
      if (!this.#publisher.watching(key)) {
        entry.watched.delete(key);
        continue;
      }
      const now = this.#fingerprint(entry, watched.namespace, watched.selector);
      if (now === watched.last) continue;
      watched.last = now;
      this.#publisher.changed(key, { clusters: [entry.description.cluster] });
    }
    if (entry.watched.size === 0) {
      entry.unfollow?.();
      entry.unfollow = null;
      return;
    }
    if (!entry.informer.armChangeNotice(generation)) this.#scheduleCheck(entry);
  }

  #sweep() {
    const now = Date.now();
    for (const entry of this.#entries.values()) {
      if (entry.inUse === 0 && now - entry.lastUsed >= this.#idleTimeoutMs) {
        this.#logger?.debug?.(
          `kube-watch-native: informer for ${entry.description.plural} of cluster ${entry.description.cluster} closed after ${Math.round(
            (now - entry.lastUsed) / 1000,
          )} s unused`,
        );
        this.#drop(entry);
      }
    }
    for (const [key, identity] of this.#identities) {
      if (identity.entries.size === 0 && now - identity.lastUsed >= this.#idleTimeoutMs) {
        this.#identities.delete(key);
      }
    }
    for (const [key, avoid] of this.#avoid) if (now >= avoid.until) this.#avoid.delete(key);
  }

  #drop(entry) {
    if (this.#entries.get(entry.key) === entry) this.#entries.delete(entry.key);
    entry.identity.entries.delete(entry);
    entry.close();
  }
}

module.exports = {
  NativeInformerFetcher,
  resourcePathFor,
  ID_LABEL,
  SERVER_SIDE_PROVIDERS,
  BUILT_IN_GROUPS,
};
