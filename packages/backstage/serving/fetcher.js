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
// The rooms: which informers answer a request (./opening.js), whether their caches answer it
// (./serving.js), whose cache (./identity.js), the informers and their bounds (./pool.js), what
// an answer looks like (./answers.js). This one holds the fetcher's life: its options, a
// request's way through the rooms, what it tells of itself, and the sweep that closes what is no
// longer used.
//
// This wing serves loads and imports nothing of the live tab's following (../following/). It
// tells whoever follows its answers through one interface, the `follower` option:
//   viewer()                 the viewer of the request being answered (undefined: none)
//   prepare(entries, { selector, namespace, field })   before a followed load's answers are read
//                            (`field`: the selector is of fields, an events answer's)
//   viewed(viewer, entries, prepared, { cluster, provenUntil }) after: the viewer is followed (or
//                            not); `provenUntil`, when the viewer's own access decisions behind
//                            the answer expire (undefined: the answer needs none)
//   notFollowed()            a part of the request being answered came from the default fetcher
//   refused(viewer)          the viewer's own access was refused: stop following it
//   entryChanged(entry)      whether the entry's cache is served moved (its credential)
//   entryClosed(entry)       the entry was closed (idle, a bound, a refusal)
// An entry gives a follower its key, description, informer, state() and servable().

const { requiresKey, cacheableRequirements } = require('./selector');
const { DEFAULT_OBJECT_TYPES, DEFAULT_ROTATING_PROVIDERS, DEFAULTS } = require('../config');
const { Identities } = require('./identity');
const { sharedCredential, SERVER_SIDE_PROVIDERS } = require('./credential');
const { DefaultAnswers } = require('./default-answers');
const { ViewerAccess, cachedAs } = require('./access');
const { Pool } = require('./pool');
const { BUILT_IN_GROUPS, resourcePathFor, transform } = require('./answers');
const { Opening, ID_LABEL } = require('./opening');
const { Serving } = require('./serving');
const clock = require('./clock');

/** The core events type, as the proxy's events route reads it (./proxy-events.js). */
const EVENTS = { objectType: 'events', group: '', apiVersion: 'v1', plural: 'events' };

class NativeInformerFetcher {
  #default;
  #logger;
  #idleTimeoutMs;
  #identities;
  #access;
  #pool;
  #opening;
  #serving;
  /** What follows the answers (the live tab's), if anything: see the top of the file. */
  #follower;
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
   * @param {object} [options.follower] what follows the answers (see the top of the file)
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
    follower = null,
    clusterRequest,
  }) {
    this.#follower = follower;
    this.#default = new DefaultAnswers({
      defaultFetcher,
      stripManagedFields,
      notFollowed: () => follower?.notFollowed(),
    });
    this.#logger = logger;
    this.#idleTimeoutMs = idleTimeoutMs;
    this.#identities = new Identities({
      rotatingAuthProviders,
      recheckMs: credentialCheckMs,
      ...(clusterRequest && { request: clusterRequest }),
      onChange: (identity) => {
        for (const entry of identity.entries) follower?.entryChanged(entry);
      },
    });
    this.#access = new ViewerAccess({
      ttlMs: authorizationTtlMs,
      maxDecisions,
      ...(clusterRequest && { request: clusterRequest }),
    });
    this.#pool = new Pool({
      logger,
      maxInformers,
      maxCachedBytes,
      userShare,
      bodyShare,
      onDrop: (entry) => follower?.entryClosed(entry),
    });
    this.#opening = new Opening({
      watcher,
      logger,
      identities: this.#identities,
      access: this.#access,
      pool: this.#pool,
      follower,
      idleTimeoutMs,
      syncTimeoutMs,
      livenessMs,
      stripManagedFields,
      // The proxy's events are asked of the fetcher only when its route is on (../index.js).
      objectTypes: new Set([...objectTypes, EVENTS.objectType]),
      customResources,
    });
    this.#serving = new Serving({ defaultAnswers: this.#default, pool: this.#pool, follower });
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
      viewer: this.#follower?.viewer(),
    };
    const opened = [];
    let entries;
    try {
      entries = await this.#opening.open(request, cacheCredential, opened);
    } catch (err) {
      // The watcher refused the cluster's details (a TypeError naming the field): what this
      // request opened closes now, not at idle.
      for (const entry of opened) this.#pool.drop(entry);
      this.#logger?.warn(`kube-watch-native: cannot cache cluster ${clusterDetails.name}: ${err.message}`);
      return this.#default.all(params);
    }
    return this.#serving.answerAll(request, entries);
  }

  /**
   * The EventList the API server would answer for `GET /api/v1/namespaces/{namespace}/events?
   * fieldSelector=…` sent with `params.credential` to `params.clusterDetails`, from one events
   * informer per identity and cluster, the selector read natively from its cache; undefined where
   * it cannot answer so (the caller asks the API server): a credential not shared and not viewer
   * checked, a viewer not allowed to list events there, an informer not servable now.
   * @param {{ clusterDetails: object, credential: object }} params
   * @param {string} namespace
   * @param {string} fieldSelector
   * @param {string | null} owner the user asking (the pool's share of one user)
   * @param {{ userEntityRef: string, entityRef: string } | null} [viewer] whom the follower (the
   *   live tab's) follows this answer for, as it follows a load of objects; null: nobody
   */
  async eventsAnswer(params, namespace, fieldSelector, owner, viewer = null) {
    const { viewerChecked, clusterDetails, cacheCredential } = cachedAs(params);
    if (this.#closed || (!viewerChecked && !sharedCredential(clusterDetails, params.credential))) {
      return undefined;
    }
    const request = {
      params,
      clusterDetails,
      viewerChecked,
      types: [EVENTS],
      resources: [EVENTS],
      whole: true,
      selector: '',
      namespace,
      owner,
      viewer,
    };
    const opened = [];
    let entry;
    try {
      [entry] = await this.#opening.open(request, cacheCredential, opened);
    } catch (err) {
      for (const one of opened) this.#pool.drop(one);
      this.#logger?.warn(`kube-watch-native: cannot cache cluster ${clusterDetails.name}: ${err.message}`);
      return undefined;
    }
    const state = entry && this.#serving.usable(entry);
    if (!state) return undefined;
    entry.touch();
    // As a load of objects is followed (./serving.js answerAll): looked at before it is read.
    const follower = viewer && this.#follower;
    const prepared =
      follower && follower.prepare([entry], { selector: fieldSelector, namespace, field: true });
    const text = entry.informer.listText({ namespace, fieldSelector });
    if (follower) {
      const { provenUntil } = request;
      follower.viewed(viewer, [entry], prepared, { cluster: clusterDetails.name, provenUntil });
    }
    return {
      kind: 'EventList',
      apiVersion: 'v1',
      metadata: { resourceVersion: entry.informer.resourceVersion ?? '' },
      items: transform(EVENTS, JSON.parse(text)).resources,
    };
  }

  /**
   * The cluster and credential a log of `pod` asked for with `params.credential` is read with,
   * and until when that holds (ms since the epoch): the request's own, or, for a viewer-checked
   * cluster, its service account's while the API server lets the viewer `get` the pod's `log`
   * (a SelfSubjectAccessReview, remembered per `authorizationTtl`), so that one follow serves
   * every viewer allowed. Null when the viewer is refused or no decision could be had.
   */
  async logAccess(params, namespace, pod) {
    const { viewerChecked, clusterDetails, cacheCredential } = cachedAs(params);
    if (!viewerChecked) return { clusterDetails, credential: params.credential, until: Infinity };
    if (this.#closed) return null;
    const identity = await this.#identities.resolve(clusterDetails, cacheCredential);
    const log = { group: '', plural: 'pods', verb: 'get', subresource: 'log', name: pod };
    const { decisions, until } = await this.#access.decide(
      clusterDetails,
      params.credential,
      identity,
      [log],
      namespace,
    );
    return decisions[0] === 'allowed' ? { clusterDetails, credential: cacheCredential, until } : null;
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
        indexBytes: state.indexBytes,
        error: state.error,
        idleMs: clock.now() - entry.lastUsed,
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
