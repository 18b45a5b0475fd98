'use strict';
// `kubernetes.nativeInformers` (schema: config.d.ts at the package root), read once at startup.
// A malformed value stops the backend with a message naming the key, as Backstage's own config
// readers do: an informer cache silently running with a default the operator did not choose
// would be worse. Durations are read by @backstage/config's own reader, so every form the
// schema accepts (`{ months: 1 }`, `'1y'`, `'P1W'`, `'10 minutes'`) works.

const { STALENESS_MS } = require('kube-watch-native-protocol');
const { readDurationFromConfig } = require('@backstage/config');
const { durationToMilliseconds } = require('@backstage/types');

const PREFIX = 'kubernetes.nativeInformers';

/** The object types Backstage's Kubernetes plugin knows (`kubernetes.objectTypes`). */
const OBJECT_TYPES = [
  'pods',
  'services',
  'configmaps',
  'limitranges',
  'resourcequotas',
  'deployments',
  'replicasets',
  'horizontalpodautoscalers',
  'jobs',
  'cronjobs',
  'ingresses',
  'statefulsets',
  'daemonsets',
  'secrets',
  'persistentvolumes',
  'persistentvolumeclaims',
  'customresources',
];

/** Cached unless configured otherwise: every type but secrets, whose data stays out of memory. */
const DEFAULT_OBJECT_TYPES = OBJECT_TYPES.filter((t) => t !== 'secrets');

/**
 * Auth providers whose credential rotates: the built-in aws, azure and googleServiceAccount
 * strategies, and serviceAccount's in-cluster projected token. Their informers are keyed by the
 * user the API server reports for the token (./identity.js), so they are shared across
 * rotations, and never across users.
 */
const DEFAULT_ROTATING_PROVIDERS = ['aws', 'azure', 'googleServiceAccount', 'serviceAccount'];

const DEFAULTS = {
  enabled: true,
  proxyLogs: true,
  proxyEvents: true,
  idleTimeoutMs: 10 * 60_000,
  syncTimeoutMs: 5_000,
  stripManagedFields: false,
  // 50 clusters × (13 default types + 2 custom resources) is 750 informers for the entities
  // selected by `backstage.io/kubernetes-id`, one per type and cluster; 2 000 leaves room for
  // as many again of entities with selectors of their own and namespaced fallbacks.
  maxInformers: 2000,
  // JSON held (before the cache's packing, which about halves it): the 500 000-object fleet of
  // bench/fleet.js holds 1.1 GB of JSON, 0.4 GB with managedFields stripped.
  maxCachedBytes: 1024 * 1024 * 1024,
  // A quarter of each bound per user; a tenth of the informers for types named in requests.
  userShare: 0.25,
  bodyShare: 0.1,
  // A real API server sends a bookmark about once a minute: half as long again.
  // The staleness bound the frontend's maxAgeMs shares (../protocol).
  livenessMs: STALENESS_MS,
  credentialCheckMs: 30_000,
  // A viewer's access decision (./access.js): a revoked binding shows within this long.
  authorizationTtlMs: 10_000,
  // 20 viewers × 15 types × 6 clusters × a few namespaces, several times over.
  maxDecisions: 10_000,
  rotatingAuthProviders: DEFAULT_ROTATING_PROVIDERS,
  /** The live tab (./following/publisher.js), when the Signals backend plugin is installed. */
  live: {
    enabled: true,
    viewerTtlMs: 10 * 60_000,
    maxViewers: 10_000,
    maxViewersPerUser: 200,
    minIntervalMs: 250,
    replicas: 1,
  },
};

function configError(key, message) {
  return new Error(`Invalid config at ${PREFIX}.${key}: ${message}`);
}

/**
 * The module's options from the root config.
 * @param {import('@backstage/backend-plugin-api').RootConfigService} config
 */
function readNativeInformersConfig(config) {
  const section = config.getOptionalConfig(PREFIX);
  // The custom resources the operator configured; any other comes from a request body.
  const customResources = (config.getOptionalConfigArray('kubernetes.customResources') ?? []).map((c) => ({
    group: c.getOptionalString('group') ?? '',
    apiVersion: c.getOptionalString('apiVersion'),
    plural: c.getOptionalString('plural'),
  }));
  if (!section) return { ...DEFAULTS, customResources, objectTypes: new Set(DEFAULT_OBJECT_TYPES) };
  const live = section.getOptionalConfig('live');
  /** `key` of `within` (the section, or its `live`), named as the operator writes it. */
  const name = (key, within) => (within === section ? key : `live.${key}`);
  const duration = (key, fallback, within = section, { zero = false } = {}) => {
    if (within.getOptional(key) === undefined) return fallback;
    let ms;
    try {
      ms = durationToMilliseconds(readDurationFromConfig(within, { key }));
    } catch (err) {
      throw configError(name(key, within), err.message);
    }
    if (!Number.isFinite(ms) || ms < 0 || (ms === 0 && !zero)) {
      throw configError(name(key, within), zero ? 'must not be negative' : 'must be longer than zero');
    }
    return ms;
  };
  const count = (key, fallback, within = section) => {
    const value = within.getOptionalNumber(key);
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < 1) {
      throw configError(name(key, within), `must be a whole number above zero, got ${value}`);
    }
    return value;
  };
  const share = (key, fallback) => {
    const value = section.getOptionalNumber(key);
    if (value === undefined) return fallback;
    if (!(value > 0 && value <= 1))
      throw configError(key, `must be a number above 0 and at most 1, got ${value}`);
    return value;
  };
  const types = section.getOptionalStringArray('objectTypes');
  if (types) {
    const unknown = types.filter((t) => !OBJECT_TYPES.includes(t));
    if (unknown.length > 0) {
      throw configError(
        'objectTypes',
        `unknown object type ${unknown.map((t) => `'${t}'`).join(', ')} (known: ${OBJECT_TYPES.join(', ')})`,
      );
    }
  }
  return {
    customResources,
    enabled: section.getOptionalBoolean('enabled') ?? DEFAULTS.enabled,
    proxyLogs: section.getOptionalBoolean('proxyLogs') ?? DEFAULTS.proxyLogs,
    proxyEvents: section.getOptionalBoolean('proxyEvents') ?? DEFAULTS.proxyEvents,
    idleTimeoutMs: duration('idleTimeout', DEFAULTS.idleTimeoutMs),
    syncTimeoutMs: duration('syncTimeout', DEFAULTS.syncTimeoutMs),
    stripManagedFields: section.getOptionalBoolean('stripManagedFields') ?? DEFAULTS.stripManagedFields,
    maxInformers: count('maxInformers', DEFAULTS.maxInformers),
    maxCachedBytes: count('maxCachedBytes', DEFAULTS.maxCachedBytes),
    userShare: share('userShare', DEFAULTS.userShare),
    bodyShare: share('bodyShare', DEFAULTS.bodyShare),
    livenessMs: duration('liveness', DEFAULTS.livenessMs),
    credentialCheckMs: duration('credentialCheckInterval', DEFAULTS.credentialCheckMs),
    authorizationTtlMs: duration('authorizationTtl', DEFAULTS.authorizationTtlMs, section, { zero: true }),
    maxDecisions: count('maxDecisions', DEFAULTS.maxDecisions),
    rotatingAuthProviders:
      section.getOptionalStringArray('rotatingAuthProviders') ?? DEFAULTS.rotatingAuthProviders,
    objectTypes: new Set(types ?? DEFAULT_OBJECT_TYPES),
    live: live
      ? {
          enabled: live.getOptionalBoolean('enabled') ?? DEFAULTS.live.enabled,
          viewerTtlMs: duration('viewerTtl', DEFAULTS.live.viewerTtlMs, live),
          maxViewers: count('maxViewers', DEFAULTS.live.maxViewers, live),
          maxViewersPerUser: count('maxViewersPerUser', DEFAULTS.live.maxViewersPerUser, live),
          replicas: count('replicas', DEFAULTS.live.replicas, live),
          minIntervalMs: duration('minInterval', DEFAULTS.live.minIntervalMs, live),
        }
      : DEFAULTS.live,
  };
}

module.exports = {
  readNativeInformersConfig,
  OBJECT_TYPES,
  DEFAULT_OBJECT_TYPES,
  DEFAULT_ROTATING_PROVIDERS,
  DEFAULTS,
};
