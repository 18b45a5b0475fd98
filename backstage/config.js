'use strict';
// `kubernetes.nativeInformers` (schema: config.d.ts at the package root), read once at startup.
// A malformed value stops the backend with a message naming the key, as Backstage's own config
// readers do: an informer cache silently running with a default the operator did not choose
// would be worse. Durations are read by @backstage/config's own reader, so every form the
// schema accepts (`{ months: 1 }`, `'1y'`, `'P1W'`, `'10 minutes'`) works.

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
 * Auth providers whose credential is minted from the backend's own cloud identity and the
 * cluster's `authMetadata` (a role, a tenant), and rotates: the built-in aws, azure and
 * googleServiceAccount strategies. Their informers are shared across rotations of the token.
 */
const DEFAULT_ROTATING_PROVIDERS = ['aws', 'azure', 'googleServiceAccount'];

const DEFAULTS = {
  enabled: true,
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
  rotatingAuthProviders: DEFAULT_ROTATING_PROVIDERS,
  /** The live tab (./live.js), when the Signals backend plugin is installed. */
  live: { enabled: true, viewerTtlMs: 10 * 60_000, maxViewers: 10_000, minIntervalMs: 250 },
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
  if (!section) return { ...DEFAULTS, objectTypes: new Set(DEFAULT_OBJECT_TYPES) };
  const live = section.getOptionalConfig('live');
  /** `key` of `within` (the section, or its `live`), named as the operator writes it. */
  const name = (key, within) => (within === section ? key : `live.${key}`);
  const duration = (key, fallback, within = section) => {
    if (within.getOptional(key) === undefined) return fallback;
    let ms;
    try {
      ms = durationToMilliseconds(readDurationFromConfig(within, { key }));
    } catch (err) {
      throw configError(name(key, within), err.message);
    }
    if (!Number.isFinite(ms) || ms <= 0) throw configError(name(key, within), 'must be longer than zero');
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
    enabled: section.getOptionalBoolean('enabled') ?? DEFAULTS.enabled,
    idleTimeoutMs: duration('idleTimeout', DEFAULTS.idleTimeoutMs),
    syncTimeoutMs: duration('syncTimeout', DEFAULTS.syncTimeoutMs),
    stripManagedFields: section.getOptionalBoolean('stripManagedFields') ?? DEFAULTS.stripManagedFields,
    maxInformers: count('maxInformers', DEFAULTS.maxInformers),
    maxCachedBytes: count('maxCachedBytes', DEFAULTS.maxCachedBytes),
    rotatingAuthProviders:
      section.getOptionalStringArray('rotatingAuthProviders') ?? DEFAULTS.rotatingAuthProviders,
    objectTypes: new Set(types ?? DEFAULT_OBJECT_TYPES),
    live: live
      ? {
          enabled: live.getOptionalBoolean('enabled') ?? DEFAULTS.live.enabled,
          viewerTtlMs: duration('viewerTtl', DEFAULTS.live.viewerTtlMs, live),
          maxViewers: count('maxViewers', DEFAULTS.live.maxViewers, live),
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
