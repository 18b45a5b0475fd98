'use strict';
// NativeInformerFetcher: Backstage's KubernetesFetcher answered from shared native informers.
//
// Backstage's default fetcher sends one LIST per object type per cluster per tab load. This one
// keeps, per identity and resource type, an informer of the process's NativeKubernetesWatcher
// and answers from its native cache, filtered there by the request's label selector and
// namespace. What it cannot serve the same way it hands to the default fetcher, so the answer
// is always the default's: viewer credentials (client-side auth providers), selectors that can
// match unlabelled objects, secrets unless configured, types not configured, informers not yet
// synced, failing, silent past the liveness bound or whose credential was not confirmed in
// time, anything past the bounds, and pod metrics.
//
// The rooms: whose cache (./identity.js), the informers and their bounds (./pool.js), what an
// answer looks like (./answers.js), and the live tab's following (./following.js, ./live.js).
//
// Which informers. Entities are mostly found by `backstage.io/kubernetes-id=<id>`; caching all
// of a type to answer them would make memory grow with the cluster. So a request whose selector
// can only match objects carrying that label is served by one informer per (identity, type)
// with the existence selector `backstage.io/kubernetes-id`, which holds exactly the objects some
// entity can ask for. Any other selector with at least one positive requirement gets an informer
// of its own (per selector and namespace), shared by the entities that write the same selector.
// A selector whose every requirement is negative (`a!=b`, `!a`, `a notin (b)`, or none) selects
// unlabelled objects too, so it would cache the whole type: the default fetcher answers it.

const { requiresKey, cacheableRequirements } = require('./selector');
const { DEFAULT_OBJECT_TYPES, DEFAULT_ROTATING_PROVIDERS, DEFAULTS } = require('./config');
const { liveRequestContext, answerNotLive, answerFollowed } = require('./live');
const { Identities, sharedCredential, SERVER_SIDE_PROVIDERS } = require('./identity');
const { DefaultAnswers } = require('./default-answers');
const { ViewerAccess, cachedAs } = require('./access');
const { Pool, Entry, AVOID_MS } = require('./pool');
const { Following } = require('./following');
const { BUILT_IN_GROUPS, resourcePathFor, isSecrets, isError, cachedAnswer } = require('./answers');

/** The label the Kubernetes plugin selects entities' objects by. */
const ID_LABEL = 'backstage.io/kubernetes-id';

/** Statuses that close an informer that has not synced: the credential or the type will not do. */
const REFUSALS = new Set([401, 403, 404]);
/**
 * How long after a watch (re)opens its cache is trusted: a resumed watch first replays what
 * changed while it was closed, which the API server writes right after the headers.
 */
const WATCH_SETTLE_MS = 250;

const sameResource = (a, b) =>
  (a.group ?? '') === (b.group ?? '') && a.apiVersion === b.apiVersion && a.plural === b.plural;

class NativeInformerFetcher {
  #watcher;
  #default;
  #logger;
  #idleTimeoutMs;
  #syncTimeoutMs;
  #livenessMs;
  #stripManagedFields;
  #objectTypes;
  #customResources;
  #identities;
  #access;
  #pool;
  /** The live tab's publisher (./live.js) and following, when the Signals plugin is installed. */
  #publisher;
  #following = null;
  #sweeper;
  #closed = false;

  /**
   * @param {object} options
   * @param {import('..').NativeKubernetesWatcher} options.watcher the process's watcher
   * @param {object} options.defaultFetcher Backstage's own fetcher (`getDefault()`)
   * @param {object} [options.logger]
   * @param {number} [options.idleTimeoutMs] close an informer no request used for this long
   * @param {number} [options.syncTimeoutMs] the first requests wait this long for the initial list
   * @param {number} [options.livenessMs] serve a cache only while its watch showed life this recently
   * @param {number} [options.credentialCheckMs] check a credential in use this often
   * @param {boolean} [options.stripManagedFields] answer without `metadata.managedFields` (default false)
   * @param {Set<string>} [options.objectTypes] object types served from informers (default: all but secrets)
   * @param {object[]} [options.customResources] the custom resources the config names (others come from requests)
   * @param {number} [options.maxInformers] informers open at most
   * @param {number} [options.maxCachedBytes] JSON cached at most, over all informers
   * @param {number} [options.userShare] the part of each bound one user's loads may take
   * @param {number} [options.bodyShare] the part of maxInformers custom resources named in requests may take
   * @param {string[]} [options.rotatingAuthProviders] providers keyed by the user the API server reports
   * @param {number} [options.authorizationTtlMs] a viewer's access decision is remembered this long
   * @param {number} [options.maxDecisions] access decisions remembered at most
   * @param {ReturnType<import('./live').createLivePublisher>} [options.live] the live tab's publisher
   * @param {Function} [options.clusterRequest] how credentials are checked (tests stub it)
   */
  constructor({
    watcher,
    defaultFetcher,
    logger,
    idleTimeoutMs = DEFAULTS.idleTimeoutMs,
    syncTimeoutMs = DEFAULTS.syncTimeoutMs,
    livenessMs = DEFAULTS.livenessMs,
    credentialCheckMs = DEFAULTS.credentialCheckMs,
    stripManagedFields = DEFAULTS.stripManagedFields,
    objectTypes = new Set(DEFAULT_OBJECT_TYPES),
    customResources = [],
    maxInformers = DEFAULTS.maxInformers,
    maxCachedBytes = DEFAULTS.maxCachedBytes,
    userShare = DEFAULTS.userShare,
    bodyShare = DEFAULTS.bodyShare,
    rotatingAuthProviders = DEFAULT_ROTATING_PROVIDERS,
    authorizationTtlMs = DEFAULTS.authorizationTtlMs,
    maxDecisions = DEFAULTS.maxDecisions,
    live,
    clusterRequest,
  }) {
    this.#watcher = watcher;
    this.#default = new DefaultAnswers({ defaultFetcher, stripManagedFields });
    this.#logger = logger;
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#syncTimeoutMs = syncTimeoutMs;
    this.#livenessMs = livenessMs;
    this.#stripManagedFields = stripManagedFields;
    this.#objectTypes = new Set(objectTypes);
    this.#customResources = customResources;
    this.#publisher = live ?? null;
    this.#identities = new Identities({
      rotatingAuthProviders,
      recheckMs: credentialCheckMs,
      ...(clusterRequest && { request: clusterRequest }),
      onChange: (identity) => {
        for (const entry of identity.entries) this.#following?.changed(entry);
      },
    });
    this.#access = new ViewerAccess({
      ttlMs: authorizationTtlMs,
      maxDecisions,
      ...(clusterRequest && { request: clusterRequest }),
    });
    this.#pool = new Pool({ logger, maxInformers, maxCachedBytes, userShare, bodyShare });
    if (this.#publisher) {
      this.#following = new Following({
        publisher: this.#publisher,
        entries: this.#pool.entries,
        servable: (entry) => this.#servable(entry),
      });
    }
    const every = Math.min(Math.max(idleTimeoutMs / 4, 50), 30_000);
    this.#sweeper = setInterval(() => this.#sweep(), every);
    this.#sweeper.unref();
  }

  /** Pod metrics are not watchable: always the default fetcher's. */
  fetchPodMetricsByNamespaces(clusterDetails, credential, namespaces, labelSelector) {
    return this.#default.podMetrics(clusterDetails, credential, namespaces, labelSelector);
  }

  async fetchObjectsForService(params) {
    const { viewerChecked, clusterDetails, cacheCredential } = cachedAs(params);
    if (this.#closed || (!viewerChecked && !sharedCredential(clusterDetails, params.credential))) {
      return this.#default.all(params);
    }
    const selector = params.labelSelector ?? '';
    const requirements = cacheableRequirements(selector);
    if (!requirements) return this.#default.all(params);

    const types = [...params.objectTypesToFetch];
    const request = {
      params,
      clusterDetails,
      viewerChecked,
      types,
      resources: [...types, ...params.customResources],
      byId: requiresKey(requirements, ID_LABEL),
      selector,
      namespace: params.namespace || undefined,
      viewer: liveRequestContext.getStore(),
    };
    const opened = [];
    let entries;
    try {
      entries = await this.#openEntries(request, cacheCredential, opened);
    } catch (err) {
      // The watcher refused the cluster's details (a TypeError naming the field): what this
      // request opened closes now, not at idle.
      for (const entry of opened) this.#pool.drop(entry);
      this.#logger?.warn(`kube-watch-native: cannot cache cluster ${clusterDetails.name}: ${err.message}`);
      return this.#default.all(params);
    }
    return this.#answerAll(request, entries);
  }

  /** Viewers' access decisions: allowed, refused, failed, answered from memory, remembered now. */
  decisions() {
    return this.#access.counts();
  }

  /** What the fetcher's informers are, for diagnostics and tests. */
  informers() {
    return [...this.#pool.entries.values()].map((entry) => {
      const state = entry.informer.state();
      return {
        ...entry.description,
        synced: state.synced,
        size: state.size,
        cachedBytes: state.cachedBytes,
        error: state.error,
        idleMs: Date.now() - entry.lastUsed,
      };
    });
  }

  /** How many resources were answered from a cache, and how many by the default fetcher. */
  answered() {
    return this.#default.answered();
  }

  /** Identities holding credentials now (for tests: they are pruned with their informers). */
  identities() {
    return this.#identities.size;
  }

  /** Closes every informer; requests after this go to the default fetcher. */
  close() {
    this.#closed = true;
    clearInterval(this.#sweeper);
    this.#pool.close();
    this.#identities.clear();
    this.#access.clear();
  }

  /** Configured to be cached; secrets only when named, whatever route asks for them. */
  #cached(resource) {
    if (isSecrets(resource)) return this.#objectTypes.has('secrets');
    return this.#objectTypes.has(resource.objectType);
  }

  /** Whether a custom resource came from the request rather than the config or the cluster's. */
  #fromBody(resource, clusterDetails) {
    const configured = [...this.#customResources, ...(clusterDetails.customResources ?? [])];
    return !configured.some((c) => sameResource(c, resource));
  }

  #entryKey(identity, { group = '', apiVersion, plural }, selector, namespace) {
    return JSON.stringify([identity.key, group, apiVersion, plural, namespace ?? '', selector]);
  }

  /**
   * The entries that answer the request's resources once settled, null where the default
   * answers; every entry it opens is pushed to `opened`.
   */
  async #openEntries(request, cacheCredential, opened) {
    const { clusterDetails, viewerChecked, types, resources, byId, selector, namespace, viewer } = request;
    const identity = await this.#identities.resolve(clusterDetails, cacheCredential);
    const entryFor = (resource, i, namespaced) =>
      this.#entryFor(identity, clusterDetails, resource, opened, {
        byId,
        selector,
        namespace,
        namespaced,
        owner: viewer?.userEntityRef ?? null,
        fromBody: i >= types.length && this.#fromBody(resource, clusterDetails),
      });
    const decisions = viewerChecked ? await this.#viewerDecisions(request, identity) : [];
    const entries = resources.map((resource, i) => {
      if (!this.#cached(resource) || (viewerChecked && decisions[i] !== 'allowed')) return null;
      // A credential refused the cluster-wide list of a type: namespaced informers answer.
      const refused = byId && namespace && this.#pool.avoided(this.#entryKey(identity, resource, ID_LABEL));
      return entryFor(resource, i, Boolean(refused));
    });
    await this.#settle(entries);
    return byId && namespace ? this.#namespacedWhereRefused(entries, resources, entryFor) : entries;
  }

  /**
   * The viewer's own access to exactly the LIST the default would send, asked with its token
   * first: a viewer not allowed (or not known to be) opens nothing, and gets the default's
   * answer with its own token.
   */
  async #viewerDecisions({ params, clusterDetails, resources, namespace, viewer }, identity) {
    const decisions = await Promise.all(
      resources.map((resource) =>
        this.#cached(resource)
          ? this.#access.decide(clusterDetails, params.credential, identity, resource, namespace)
          : null,
      ),
    );
    if (viewer && decisions.includes('refused')) {
      this.#publisher?.forget(viewer.userEntityRef, viewer.entityRef);
    }
    return decisions;
  }

  /**
   * A credential allowed to list a type in the entity's namespace only: the cluster-wide
   * informer is refused (403); a namespaced one answers instead, and the cluster-wide one
   * is not tried again while requests keep coming.
   */
  async #namespacedWhereRefused(entries, resources, entryFor) {
    let fallback = false;
    const answering = entries.map((entry, i) => {
      if (!entry || entry.description.namespace || entry.informer.state().error?.statusCode !== 403) {
        return entry;
      }
      fallback = true;
      this.#pool.avoid(entry.key, this.#idleTimeoutMs, { refresh: true });
      this.#pool.drop(entry);
      return entryFor(resources[i], i, true);
    });
    if (fallback) await this.#settle(answering);
    return answering;
  }

  /** Every resource's answer, and the viewer's live following of them. */
  #answerAll({ params, clusterDetails, types, resources, selector, namespace, viewer }, entries) {
    // Answered now: the entries are used as of this moment, whatever the wait took.
    for (const entry of entries) entry?.touch();
    const results = resources.map((resource, i) => {
      const answer = this.#answer(params, resource, i >= types.length, entries[i], selector, namespace);
      this.#default.count(answer);
      return answer;
    });
    if (viewer && this.#following) {
      const followed = this.#following.viewed(viewer, entries, {
        selector,
        namespace,
        cluster: clusterDetails.name,
      });
      if (followed) answerFollowed();
      else answerNotLive();
    }
    return Promise.all(results).then((all) => ({
      errors: all.filter(isError),
      responses: all.filter((r) => !isError(r)),
    }));
  }

  /** The entry that answers `resource`, opened if need be; null when none may be opened. */
  #entryFor(identity, clusterDetails, resource, opened, how) {
    const { byId, selector, namespace, namespaced, owner, fromBody } = how;
    const informerSelector = byId ? ID_LABEL : selector;
    const informerNamespace = byId && !namespaced ? undefined : namespace;
    const key = this.#entryKey(identity, resource, informerSelector, informerNamespace);
    const found = this.#pool.entries.get(key);
    if (found && !found.state().finished) {
      found.touch();
      return found;
    }
    if (found) this.#pool.drop(found);
    const { group = '', apiVersion, plural } = resource;
    const entry = this.#pool.add(key, { owner, fromBody }, () => {
      const informer = this.#watcher.informer(
        { clusterDetails, getCredential: identity.getCredential, group, apiVersion, plural },
        {
          labelSelector: informerSelector,
          namespace: informerNamespace,
          // A stream silent past the liveness bound is cut and watched again from where it was.
          idleTimeoutSeconds: this.#livenessMs / 1000,
          // Dropped natively before the object is cached: the cache never holds them.
          ...(this.#stripManagedFields ? { strip: ['metadata.managedFields'] } : {}),
        },
      );
      const description = {
        cluster: clusterDetails.name,
        group,
        apiVersion,
        plural,
        namespace: informerNamespace,
        labelSelector: informerSelector,
      };
      return new Entry(key, identity, informer, description, { owner, fromBody });
    });
    if (!entry) return null;
    opened.push(entry);
    this.#logger?.debug?.(
      `kube-watch-native: informer for ${plural} of cluster ${clusterDetails.name} (${informerSelector}${
        informerNamespace ? ` in ${informerNamespace}` : ''
      }) opened`,
    );
    return entry;
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

  /**
   * Whether `entry`'s cache answers loads now, and until when at most: while its watch showed
   * life (a watch opened, an event, a bookmark) within `livenessMs` and its credential was
   * confirmed in time (./identity.js).
   */
  #servable(entry) {
    const verifiedUntil = this.#identities.verifiedUntil(entry.identity);
    const { aliveAt } = entry.state();
    const aliveUntil = aliveAt === null || aliveAt === undefined ? 0 : aliveAt + this.#livenessMs;
    const until = Math.min(verifiedUntil, aliveUntil);
    return { servable: Date.now() < until, until: until > 0 ? until : Infinity };
  }

  /** One resource's answer: from the cache when it equals the default's, else the default's. */
  #answer(params, resource, custom, entry, selector, namespace) {
    const live = () => this.#default.one(params, resource, custom);
    if (!entry) return live();
    const state = entry.state();
    if (state.finished) {
      this.#pool.drop(entry);
      return live();
    }
    if (state.error) {
      // Refused (401, 403) or not served (404) before it synced: closed now, and not opened
      // again for a while, so made-up types and refused credentials pin nothing.
      if (REFUSALS.has(state.error.statusCode) && !state.synced) {
        this.#pool.avoid(entry.key, AVOID_MS);
        this.#pool.drop(entry);
      }
      // Any other failure not yet over (the informer retries): the default's fresh answer,
      // whatever it is, until a successful request, an event or a bookmark shows the cache
      // is live again.
      return live();
    }
    // Not synced yet, between watches (a backoff, a reconnect, a relist), silent too long, or
    // its credential not confirmed: the cache may be behind the server or not ours to show.
    if (
      !state.synced ||
      state.watchingSince === null ||
      Date.now() - state.watchingSince < WATCH_SETTLE_MS ||
      !this.#servable(entry).servable
    ) {
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
    return cachedAnswer(entry, resource, namespace, selector, state.generation) ?? live();
  }

  #sweep() {
    this.#pool.sweep(this.#idleTimeoutMs);
    this.#identities.prune(this.#idleTimeoutMs);
    this.#access.prune();
  }
}

module.exports = {
  NativeInformerFetcher,
  resourcePathFor,
  ID_LABEL,
  SERVER_SIDE_PROVIDERS,
  BUILT_IN_GROUPS,
};
