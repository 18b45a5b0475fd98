'use strict';

// API discovery for the resources the simulated server has: the legacy documents
// (`/api` APIVersions, `/apis` APIGroupList, `/apis/{g}` APIGroup, `/api/v1` and
// `/apis/{g}/{v}` APIResourceList) and, when the client asks for it with
// `Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, the
// aggregated `apidiscovery.k8s.io/v2` list on `/api` and `/apis` (Kubernetes 1.30+). A
// simulator created with `discovery: 'legacy'` ignores that Accept, as servers before 1.26 do.

/** Content type of an aggregated discovery answer. */
const AGGREGATED_TYPE = 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList';

/** kubectl's short names for the built-in resources, by `group/plural` (a CRD's come from defineResource). */
const SHORT_NAMES = {
  '/pods': ['po'],
  '/services': ['svc'],
  '/endpoints': ['ep'],
  '/configmaps': ['cm'],
  '/limitranges': ['limits'],
  '/resourcequotas': ['quota'],
  '/serviceaccounts': ['sa'],
  '/events': ['ev'],
  '/namespaces': ['ns'],
  '/nodes': ['no'],
  '/persistentvolumes': ['pv'],
  '/persistentvolumeclaims': ['pvc'],
  'apps/deployments': ['deploy'],
  'apps/replicasets': ['rs'],
  'apps/statefulsets': ['sts'],
  'apps/daemonsets': ['ds'],
  'batch/cronjobs': ['cj'],
  'networking.k8s.io/ingresses': ['ing'],
  'autoscaling/horizontalpodautoscalers': ['hpa'],
  'apiextensions.k8s.io/customresourcedefinitions': ['crd', 'crds'],
};

/** Whether the Accept header asks for aggregated discovery v2. */
function wantsAggregated(accept) {
  return String(accept || '')
    .split(',')
    .some((part) => {
      const params = part
        .split(';')
        .map((p) => p.trim())
        .slice(1);
      return (
        params.includes('g=apidiscovery.k8s.io') &&
        params.includes('v=v2') &&
        params.includes('as=APIGroupDiscoveryList')
      );
    });
}

/** Kubernetes' version priority: GA before beta before alpha, higher numbers first. */
function versionRank(v) {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v);
  if (!m) return [3, 0, 0, v];
  const level = m[2] === 'alpha' ? 2 : m[2] === 'beta' ? 1 : 0;
  return [level, -Number(m[1]), -Number(m[3] || 0), v];
}

function compareVersions(a, b) {
  const ra = versionRank(a);
  const rb = versionRank(b);
  for (let i = 0; i < ra.length; i++) {
    if (ra[i] !== rb[i]) return ra[i] < rb[i] ? -1 : 1;
  }
  return 0;
}

/** group → versions (preferred first) → resource descriptions. */
function groupsOf(sim) {
  const groups = new Map();
  for (const d of sim.store.defs.values()) {
    if (!groups.has(d.group)) groups.set(d.group, new Map());
    const versions = groups.get(d.group);
    if (!versions.has(d.version)) versions.set(d.version, []);
    versions.get(d.version).push(d);
  }
  const sorted = new Map();
  for (const name of [...groups.keys()].sort()) {
    const versions = groups.get(name);
    sorted.set(name, new Map([...versions.keys()].sort(compareVersions).map((v) => [v, versions.get(v)])));
  }
  return sorted;
}

function namesOf(sim, d) {
  const extra = (sim.discoveryNames && sim.discoveryNames.get(d.key)) || {};
  return {
    singular: extra.singularName || d.kind.toLowerCase(),
    shortNames: extra.shortNames || SHORT_NAMES[`${d.group}/${d.plural}`] || [],
    categories: extra.categories || [],
  };
}

function aggregated(sim, legacyCore) {
  const items = [];
  for (const [group, versions] of groupsOf(sim)) {
    if ((group === '') !== legacyCore) continue;
    items.push({
      metadata: group ? { name: group } : {},
      versions: [...versions].map(([version, defs]) => ({
        version,
        resources: defs.map((d) => {
          const n = namesOf(sim, d);
          const r = {
            resource: d.plural,
            responseKind: { group: d.group, version: d.version, kind: d.kind },
            scope: d.namespaced ? 'Namespaced' : 'Cluster',
            singularResource: n.singular,
            verbs: ['get', 'list', 'watch'],
          };
          if (n.shortNames.length) r.shortNames = n.shortNames;
          if (n.categories.length) r.categories = n.categories;
          return r;
        }),
        freshness: 'Current',
      })),
    });
  }
  return { kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.k8s.io/v2', metadata: {}, items };
}

/**
 * The discovery document for a route, or null for a 404.
 * @param {object} sim the Simulator
 * @param {{type: string, group?: string, version?: string}} route from parseApiPath
 * @param {import('http').IncomingMessage} req
 * @returns {{body: object, headers?: object}|null}
 */
function discovery(sim, route, req) {
  const groups = groupsOf(sim);
  const aggregatedOk = sim.options.discovery !== 'legacy' && wantsAggregated(req.headers.accept);
  if ((route.type === 'apiVersions' || route.type === 'apiGroups') && aggregatedOk) {
    return {
      body: aggregated(sim, route.type === 'apiVersions'),
      headers: { 'content-type': AGGREGATED_TYPE },
    };
  }
  if (route.type === 'apiVersions') {
    return {
      body: {
        kind: 'APIVersions',
        versions: ['v1'],
        serverAddressByClientCIDRs: [
          { clientCIDR: '0.0.0.0/0', serverAddress: sim.origin.replace(/^https?:\/\//, '') },
        ],
      },
    };
  }
  const groupInfo = (name) => {
    const versions = [...groups.get(name).keys()].map((v) => ({ groupVersion: `${name}/${v}`, version: v }));
    return { name, versions, preferredVersion: versions[0] };
  };
  const named = [...groups.keys()].filter(Boolean);
  if (route.type === 'apiGroups') {
    return { body: { kind: 'APIGroupList', apiVersion: 'v1', groups: named.map(groupInfo) } };
  }
  if (route.type === 'apiGroup') {
    return route.group && groups.has(route.group)
      ? { body: { kind: 'APIGroup', apiVersion: 'v1', ...groupInfo(route.group) } }
      : null;
  }
  const defs = (groups.get(route.group) && groups.get(route.group).get(route.version)) || [];
  if (defs.length === 0 && !(route.group === '' && route.version === 'v1')) return null;
  return {
    body: {
      kind: 'APIResourceList',
      apiVersion: 'v1',
      groupVersion: route.group ? `${route.group}/${route.version}` : route.version,
      resources: defs.map((d) => {
        const n = namesOf(sim, d);
        const r = {
          name: d.plural,
          singularName: n.singular,
          namespaced: d.namespaced,
          kind: d.kind,
          verbs: ['get', 'list', 'watch'],
        };
        if (n.shortNames.length) r.shortNames = n.shortNames;
        if (n.categories.length) r.categories = n.categories;
        return r;
      }),
    },
  };
}

module.exports = { discovery, wantsAggregated, compareVersions, AGGREGATED_TYPE, SHORT_NAMES };
