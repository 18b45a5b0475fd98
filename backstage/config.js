'use strict';
// `kubernetes.nativeInformers` (schema: config.d.ts at the package root), read once at startup.
// A malformed value stops the backend with a message naming the key, as Backstage's own config
// readers do: an informer cache silently running with a default the operator did not choose
// would be worse.

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

const DEFAULTS = {
  enabled: true,
  idleTimeoutMs: 10 * 60_000,
  syncTimeoutMs: 5_000,
  stripManagedFields: true,
};

const UNIT_MS = {
  ms: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const HUMAN_DURATION_MS = {
  milliseconds: 1,
  seconds: 1000,
  minutes: 60_000,
  hours: 3_600_000,
  days: 86_400_000,
  weeks: 7 * 86_400_000,
};

function configError(key, message) {
  return new Error(`Invalid config at ${PREFIX}.${key}: ${message}`);
}

/**
 * A duration as Backstage configs write them: a HumanDuration object (`{ minutes: 10 }`), a
 * string with a unit (`'10m'`, `'5 seconds'`, `'500ms'`) or an ISO 8601 duration (`'PT5S'`).
 * @returns {number} milliseconds
 */
function readDuration(value, key) {
  const expected = "a duration such as { minutes: 10 }, '10m' or 'PT10M'";
  let ms;
  if (typeof value === 'string') {
    const unit = /^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$/i.exec(value);
    const iso =
      /^P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?$/i.exec(
        value.trim(),
      );
    if (unit && UNIT_MS[unit[2].toLowerCase()] !== undefined) {
      ms = Number(unit[1]) * UNIT_MS[unit[2].toLowerCase()];
    } else if (iso && value.trim().length > 1 && !/T$/i.test(value.trim())) {
      const [, d = 0, h = 0, m = 0, s = 0] = iso;
      ms = ((Number(d) * 24 + Number(h)) * 60 + Number(m)) * 60_000 + Number(s) * 1000;
    }
  } else if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const keys = Object.keys(value);
    const unknown = keys.filter((k) => HUMAN_DURATION_MS[k] === undefined);
    if (unknown.length > 0) {
      throw configError(key, `unknown duration field ${unknown.map((k) => `'${k}'`).join(', ')}`);
    }
    if (keys.length > 0 && keys.every((k) => typeof value[k] === 'number' && value[k] >= 0)) {
      ms = keys.reduce((sum, k) => sum + value[k] * HUMAN_DURATION_MS[k], 0);
    }
  }
  if (ms === undefined || !Number.isFinite(ms)) {
    throw configError(key, `expected ${expected}, got ${JSON.stringify(value)}`);
  }
  return ms;
}

/**
 * The module's options from the root config.
 * @param {import('@backstage/backend-plugin-api').RootConfigService} config
 */
function readNativeInformersConfig(config) {
  const section = config.getOptionalConfig(PREFIX);
  if (!section) return { ...DEFAULTS, objectTypes: new Set(DEFAULT_OBJECT_TYPES) };
  const duration = (key, fallback) => {
    const raw = section.getOptional(key);
    if (raw === undefined) return fallback;
    const ms = readDuration(raw, key);
    if (ms <= 0) throw configError(key, 'must be longer than zero');
    return ms;
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
    objectTypes: new Set(types ?? DEFAULT_OBJECT_TYPES),
  };
}

module.exports = { readNativeInformersConfig, readDuration, OBJECT_TYPES, DEFAULT_OBJECT_TYPES, DEFAULTS };
