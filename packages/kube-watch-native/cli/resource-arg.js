'use strict';
/**
 * Reads the resource argument of `kube-watch` the way `kubectl get` reads it. With the
 * server's discovery documents (cli/discovery.js), `resolveResource` finds it among the
 * resources the server serves, under any of their names; without them (discovery failed),
 * `parseResourceArg` uses a built-in table of the well-known resources and API groups.
 *
 * Accepted forms (case-insensitive):
 *   pods | po | pod | Pod               core v1 (short names, singulars and kinds of known resources)
 *   deployments.apps | deploy           a known group: its version comes from the table
 *   deployments.v1.apps                 resource.version.group, as kubectl writes it
 *   crontabs.stable.example.com/v1      any group with an explicit version
 *   apps/v1/deployments | v1/pods       group/version/plural, version/plural (core)
 *   apps/deployments                    group/plural for a known group
 *
 * In the offline fallback, a resource the table does not know is passed through as named
 * (the server answers 404 if it does not exist) and is assumed to be namespaced; only a group
 * the table does not know needs an explicit version.
 */

/** A bad resource argument; its message says how to fix it. */
class ResourceArgError extends Error {
  constructor(message) {
    super(message);
    this.name = 'ResourceArgError';
    this.code = 'ERR_RESOURCE_ARG';
  }
}

/** Preferred version of each well-known API group ('' is the core group). */
const GROUP_VERSIONS = {
  '': 'v1',
  apps: 'v1',
  batch: 'v1',
  autoscaling: 'v2',
  policy: 'v1',
  'networking.k8s.io': 'v1',
  'rbac.authorization.k8s.io': 'v1',
  'apiextensions.k8s.io': 'v1',
  'apiregistration.k8s.io': 'v1',
  'storage.k8s.io': 'v1',
  'coordination.k8s.io': 'v1',
  'discovery.k8s.io': 'v1',
  'events.k8s.io': 'v1',
  'scheduling.k8s.io': 'v1',
  'node.k8s.io': 'v1',
  'certificates.k8s.io': 'v1',
  'admissionregistration.k8s.io': 'v1',
  'flowcontrol.apiserver.k8s.io': 'v1',
};

// [plural, group, namespaced, short names...]; order matters only for a bare name that two
// groups share (`events`): the first row wins, as core wins in kubectl.
const RESOURCES = [
  ['pods', '', true, 'po'],
  ['services', '', true, 'svc'],
  ['configmaps', '', true, 'cm'],
  ['secrets', '', true],
  ['namespaces', '', false, 'ns'],
  ['nodes', '', false, 'no'],
  ['persistentvolumes', '', false, 'pv'],
  ['persistentvolumeclaims', '', true, 'pvc'],
  ['events', '', true, 'ev'],
  ['endpoints', '', true, 'ep'],
  ['serviceaccounts', '', true, 'sa'],
  ['replicationcontrollers', '', true, 'rc'],
  ['resourcequotas', '', true, 'quota'],
  ['limitranges', '', true, 'limits'],
  ['podtemplates', '', true],
  ['componentstatuses', '', false, 'cs'],
  ['deployments', 'apps', true, 'deploy'],
  ['replicasets', 'apps', true, 'rs'],
  ['statefulsets', 'apps', true, 'sts'],
  ['daemonsets', 'apps', true, 'ds'],
  ['controllerrevisions', 'apps', true],
  ['jobs', 'batch', true],
  ['cronjobs', 'batch', true, 'cj'],
  ['horizontalpodautoscalers', 'autoscaling', true, 'hpa'],
  ['poddisruptionbudgets', 'policy', true, 'pdb'],
  ['ingresses', 'networking.k8s.io', true, 'ing'],
  ['ingressclasses', 'networking.k8s.io', false],
  ['networkpolicies', 'networking.k8s.io', true, 'netpol'],
  ['roles', 'rbac.authorization.k8s.io', true],
  ['rolebindings', 'rbac.authorization.k8s.io', true],
  ['clusterroles', 'rbac.authorization.k8s.io', false],
  ['clusterrolebindings', 'rbac.authorization.k8s.io', false],
  ['customresourcedefinitions', 'apiextensions.k8s.io', false, 'crd', 'crds'],
  ['apiservices', 'apiregistration.k8s.io', false],
  ['storageclasses', 'storage.k8s.io', false, 'sc'],
  ['csidrivers', 'storage.k8s.io', false],
  ['csinodes', 'storage.k8s.io', false],
  ['csistoragecapacities', 'storage.k8s.io', true],
  ['volumeattachments', 'storage.k8s.io', false],
  ['leases', 'coordination.k8s.io', true],
  ['endpointslices', 'discovery.k8s.io', true],
  ['events', 'events.k8s.io', true, 'ev'],
  ['priorityclasses', 'scheduling.k8s.io', false, 'pc'],
  ['runtimeclasses', 'node.k8s.io', false],
  ['certificatesigningrequests', 'certificates.k8s.io', false, 'csr'],
  ['mutatingwebhookconfigurations', 'admissionregistration.k8s.io', false],
  ['validatingwebhookconfigurations', 'admissionregistration.k8s.io', false],
  ['validatingadmissionpolicies', 'admissionregistration.k8s.io', false],
  ['validatingadmissionpolicybindings', 'admissionregistration.k8s.io', false],
  ['flowschemas', 'flowcontrol.apiserver.k8s.io', false],
  ['prioritylevelconfigurations', 'flowcontrol.apiserver.k8s.io', false],
].map(([plural, group, namespaced, ...shortNames]) => ({
  plural,
  group,
  namespaced,
  names: new Set([plural, singular(plural), ...shortNames]),
}));

const VERSION_RE = /^v\d+((alpha|beta)\d+)?$/;
const SEGMENT_RE = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/**
 * Splits the argument into the name and, when given, the group and version.
 * @param {string} arg the resource argument as typed
 * @returns {{ name: string, group: string | undefined, version: string | undefined }}
 * @throws {ResourceArgError} for an argument no form reads
 */
function splitResourceArg(arg) {
  const text = String(arg ?? '')
    .trim()
    .toLowerCase();
  if (!text) throw new ResourceArgError('a resource type is required, e.g. pods or deployments.apps');

  let name;
  let group; // undefined: not given
  let version; // undefined: not given
  const slashes = text.split('/');
  if (slashes.length === 3) {
    [group, version, name] = slashes;
    if (group === 'core') group = '';
  } else if (slashes.length === 2) {
    const [left, right] = slashes;
    if (VERSION_RE.test(left)) {
      [version, name, group] = [left, right, ''];
    } else if (VERSION_RE.test(right)) {
      version = right;
      [name, group] = splitDotted(left);
      if (group === undefined) group = '';
    } else {
      [group, name] = [left === 'core' ? '' : left, right];
    }
  } else if (slashes.length === 1) {
    const dotted = splitDotted(text);
    [name, group] = dotted;
    const parts = text.split('.');
    // plural.version.group (kubectl's fully qualified form); plural.version means core.
    if (parts.length >= 2 && VERSION_RE.test(parts[1])) {
      name = parts[0];
      version = parts[1];
      group = parts.slice(2).join('.');
    }
  } else {
    throw new ResourceArgError(
      `cannot read resource "${arg}": use plural, plural.group, plural.group/version or group/version/plural`,
    );
  }

  if (!name || !SEGMENT_RE.test(name) || name.includes('.')) {
    throw new ResourceArgError(`cannot read resource "${arg}": "${name}" is not a resource name`);
  }
  if (group && !SEGMENT_RE.test(group)) {
    throw new ResourceArgError(`cannot read resource "${arg}": "${group}" is not an API group`);
  }
  if (version !== undefined && !VERSION_RE.test(version)) {
    throw new ResourceArgError(
      `cannot read resource "${arg}": "${version}" is not an API version (v1, v1beta1, v2alpha1, ...)`,
    );
  }

  return { name, group, version };
}

/**
 * Offline: the built-in table.
 * @param {string} arg the resource argument as typed
 * @returns {{ group: string, apiVersion: string, plural: string, namespaced: boolean,
 *   known: boolean, display: string }} `display` is `plural` or `plural.group`
 * @throws {ResourceArgError}
 */
function parseResourceArg(arg) {
  const { name, group, version } = splitResourceArg(arg);
  const known = RESOURCES.find((r) => r.names.has(name) && (group === undefined || r.group === group));
  const plural = known ? known.plural : name;
  const resolvedGroup = known ? known.group : (group ?? '');
  const apiVersion = version ?? GROUP_VERSIONS[resolvedGroup];
  if (!apiVersion) {
    throw new ResourceArgError(
      `unknown API group "${resolvedGroup}": give its version too, ` +
        `e.g. ${plural}.${resolvedGroup}/v1 or ${resolvedGroup}/v1/${plural}`,
    );
  }
  return {
    group: resolvedGroup,
    apiVersion,
    plural,
    namespaced: known ? known.namespaced : true,
    known: Boolean(known),
    display: resolvedGroup ? `${plural}.${resolvedGroup}` : plural,
  };
}

const display = (r) => (r.group ? `${r.plural}.${r.group}` : r.plural);

/** Groups that come with Kubernetes: a custom resource never shadows them. */
const isBuiltinGroup = (group) => group === '' || !group.includes('.') || group.endsWith('.k8s.io');

/**
 * Finds the argument among the server's resources (from cli/discovery.js), as kubectl does:
 * by plural, then singular or kind, then short name; with or without group and version. A
 * name several groups serve resolves to the core group's, else the one built-in group's;
 * otherwise it is ambiguous and the error lists the candidates, as it does for an unknown name.
 * @param {string} arg the resource argument as typed
 * @param {Array<{ group: string, version: string, plural: string, singular: string, kind: string,
 *   shortNames: string[], namespaced: boolean, verbs: string[], preferred: boolean }>} resources
 * @returns {{ group: string, apiVersion: string, plural: string, namespaced: boolean, kind: string,
 *   known: boolean, display: string }}
 * @throws {ResourceArgError}
 */
function resolveResource(arg, resources) {
  const { name, group, version } = splitResourceArg(arg);
  const pool = resources.filter((r) => group === undefined || r.group === group);
  const tiers = [
    (r) => r.plural === name,
    (r) => r.singular === name || r.kind.toLowerCase() === name,
    (r) => r.shortNames.some((s) => s.toLowerCase() === name),
  ];
  let matches = [];
  for (const tier of tiers) {
    matches = pool.filter(tier);
    if (matches.length) break;
  }
  if (matches.length === 0) {
    const candidates = suggestions(name, group, resources);
    throw new ResourceArgError(
      `the server doesn't have a resource type "${arg}"` +
        (candidates.length ? `; did you mean ${candidates.join(', ')}?` : ''),
    );
  }
  const byResource = new Map();
  for (const m of matches) {
    const key = display(m);
    if (!byResource.has(key)) byResource.set(key, []);
    byResource.get(key).push(m);
  }
  let keys = [...byResource.keys()];
  if (keys.length > 1) {
    const core = keys.filter((k) => byResource.get(k)[0].group === '');
    const builtin = keys.filter((k) => isBuiltinGroup(byResource.get(k)[0].group));
    if (core.length === 1) keys = core;
    else if (builtin.length === 1) keys = builtin;
    else {
      throw new ResourceArgError(
        `"${arg}" is ambiguous: the server has ${keys.join(', ')}; name one with its group`,
      );
    }
  }
  const versions = byResource.get(keys[0]);
  let chosen;
  if (version !== undefined) {
    chosen = versions.find((r) => r.version === version);
    if (!chosen) {
      throw new ResourceArgError(
        `the server does not serve ${keys[0]} in version ${version}; it serves ${versions.map((r) => r.version).join(', ')}`,
      );
    }
  } else {
    chosen = versions.find((r) => r.preferred) || versions[0];
  }
  if (chosen.verbs.length && !chosen.verbs.includes('watch')) {
    throw new ResourceArgError(`${keys[0]} cannot be watched (the server allows ${chosen.verbs.join(', ')})`);
  }
  return {
    group: chosen.group,
    apiVersion: chosen.version,
    plural: chosen.plural,
    namespaced: chosen.namespaced,
    kind: chosen.kind,
    known: true,
    display: keys[0],
  };
}

/** Up to 8 resources whose names are close to `name` (or that have it, in another group). */
function suggestions(name, group, resources) {
  const near = (a) => a && (a.startsWith(name) || name.startsWith(a) || editDistance(a, name) <= 2);
  const out = new Set();
  for (const r of resources) {
    const names = [r.plural, r.singular, r.kind.toLowerCase(), ...r.shortNames];
    if (names.includes(name) || names.some(near)) out.add(display(r));
  }
  return [...out].slice(0, 8);
}

function editDistance(a, b) {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = cur;
  }
  return prev[b.length];
}

/** `deployments.apps` → ['deployments', 'apps']; `pods` → ['pods', undefined]. */
function splitDotted(s) {
  const dot = s.indexOf('.');
  return dot < 0 ? [s, undefined] : [s.slice(0, dot), s.slice(dot + 1)];
}

function singular(plural) {
  if (plural === 'endpoints') return plural;
  if (plural.endsWith('ies')) return `${plural.slice(0, -3)}y`;
  if (/(ss|x|ch|sh|us)es$/.test(plural)) return plural.slice(0, -2);
  return plural.replace(/s$/, '');
}

module.exports = { parseResourceArg, splitResourceArg, resolveResource, ResourceArgError, GROUP_VERSIONS };
