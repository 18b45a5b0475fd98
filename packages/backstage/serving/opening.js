'use strict';
// Which informers answer a request, opened if need be. What a request's answer may come from is
// decided here, before any answer is looked at (./serving.js): the informer each resource is
// cached in, opened within the pool's bounds (./pool.js) as the identity the request is sent as
// (./identity.js), and, for a viewer's own credential, whether the viewer may read it at all
// (./access.js). Each is waited for until it settles, so that a first load is answered from the
// cache when it lists within the sync timeout.
//
// Which informers. Entities are mostly found by `backstage.io/kubernetes-id=<id>`; caching all
// of a type to answer them would make memory grow with the cluster. So a request whose selector
// can only match objects carrying that label is served by one informer per (identity, type)
// with the existence selector `backstage.io/kubernetes-id`, which holds exactly the objects some
// entity can ask for. Any other selector with at least one positive requirement gets an informer
// of its own (per selector and namespace), shared by the entities that write the same selector.
// A selector whose every requirement is negative (`a!=b`, `!a`, `a notin (b)`, or none) selects
// unlabelled objects too, so it would cache the whole type: the default fetcher answers it.
// A request for a whole type (`whole`: the proxy's events, ./proxy-events.js, read by field
// from the native cache) gets one informer per identity and type with no selector, cluster-wide
// as well, and namespaced where that is refused.

const { Entry } = require('./entry');
const { isSecrets } = require('./answers');

/** The label the Kubernetes plugin selects entities' objects by. */
const ID_LABEL = 'backstage.io/kubernetes-id';

const sameResource = (a, b) =>
  (a.group ?? '') === (b.group ?? '') && a.apiVersion === b.apiVersion && a.plural === b.plural;

/** The informers of a request's resources: chosen, opened within the bounds, settled. */
class Opening {
  #watcher;
  #logger;
  #identities;
  #access;
  #pool;
  #follower;
  #idleTimeoutMs;
  #syncTimeoutMs;
  #livenessMs;
  #stripManagedFields;
  #objectTypes;
  #customResources;

  /**
   * @param {object} options the fetcher's (./fetcher.js) and its rooms: the identities, the
   *   viewers' access, the pool and the follower of its answers (null without the live tab)
   */
  constructor(options) {
    this.#watcher = options.watcher;
    this.#logger = options.logger;
    this.#identities = options.identities;
    this.#access = options.access;
    this.#pool = options.pool;
    this.#follower = options.follower;
    this.#idleTimeoutMs = options.idleTimeoutMs;
    this.#syncTimeoutMs = options.syncTimeoutMs;
    this.#livenessMs = options.livenessMs;
    this.#stripManagedFields = options.stripManagedFields;
    this.#objectTypes = new Set(options.objectTypes);
    this.#customResources = options.customResources;
  }

  /**
   * The entries that answer the request's resources once settled, null where the default
   * answers; every entry it opens is pushed to `opened`.
   */
  async open(request, cacheCredential, opened) {
    const { clusterDetails, viewerChecked, types, resources, byId, whole, selector, namespace, viewer } =
      request;
    // One informer per type and identity, cluster-wide (namespaced where that is refused).
    const wide = byId || whole;
    const identity = await this.#identities.resolve(clusterDetails, cacheCredential);
    const entryFor = (resource, i, namespaced) =>
      this.#entryFor(identity, clusterDetails, resource, opened, {
        byId,
        whole,
        selector,
        namespace,
        namespaced,
        owner: viewer?.userEntityRef ?? request.owner ?? null,
        fromBody: i >= types.length && this.#fromBody(resource, clusterDetails),
      });
    const decisions = viewerChecked ? await this.#viewerDecisions(request, identity) : [];
    const entries = resources.map((resource, i) => {
      if (!this.#cached(resource) || (viewerChecked && decisions[i] !== 'allowed')) return null;
      // A credential refused the cluster-wide list of a type: namespaced informers answer.
      const refused =
        wide && namespace && this.#pool.avoided(this.#entryKey(identity, resource, byId ? ID_LABEL : ''));
      return entryFor(resource, i, Boolean(refused));
    });
    await this.#settle(entries);
    return wide && namespace ? this.#namespacedWhereRefused(entries, resources, entryFor) : entries;
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
   * The viewer's own access to exactly the LIST the default would send, asked with its token
   * first: a viewer not allowed (or not known to be) opens nothing, and gets the default's
   * answer with its own token.
   */
  async #viewerDecisions(request, identity) {
    const { params, clusterDetails, resources, namespace, viewer } = request;
    const cached = resources.filter((resource) => this.#cached(resource));
    const { decisions: decided, until } = await this.#access.decide(
      clusterDetails,
      params.credential,
      identity,
      cached,
      namespace,
    );
    // What is answered from the cache is proven only until the oldest decision expires.
    request.provenUntil = until;
    const decisions = resources.map((resource) => (this.#cached(resource) ? decided.shift() : null));
    if (viewer && decisions.includes('refused')) {
      this.#follower?.refused(viewer);
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

  /** The entry that answers `resource`, opened if need be; null when none may be opened. */
  #entryFor(identity, clusterDetails, resource, opened, how) {
    const { byId, whole, selector, namespace, namespaced, owner, fromBody } = how;
    const informerSelector = byId ? ID_LABEL : whole ? '' : selector;
    const informerNamespace = (byId || whole) && !namespaced ? undefined : namespace;
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
      const servability = {
        verifiedUntil: (of) => this.#identities.verifiedUntil(of),
        livenessMs: this.#livenessMs,
      };
      return new Entry(key, identity, informer, description, { owner, fromBody, servability });
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
}

module.exports = { Opening, ID_LABEL };
