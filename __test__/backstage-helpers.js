'use strict';
// Shared pieces of the Backstage suites: simulated clusters holding every type the Kubernetes
// tab asks for, a catalog of entities that select their objects in the ways entities do, a real
// Backstage backend (startTestBackend + @backstage/plugin-kubernetes-backend) with or without
// kube-watch-native-backstage, and the comparison of two answers.

const { startTestBackend, mockServices } = require('@backstage/backend-test-utils');
const { catalogServiceMock } = require('@backstage/plugin-catalog-node/testUtils');
const { createSimulator, certs } = require('../packages/kube-watch-native/sim');

const ID = 'backstage.io/kubernetes-id';
const CA_DATA = Buffer.from(certs.ca).toString('base64');

/** The Kubernetes tab's 13 default types plus secrets: [sim key, kind, objectType]. */
const TYPES = [
  ['pods', 'Pod', 'pods'],
  ['services', 'Service', 'services'],
  ['configmaps', 'ConfigMap', 'configmaps'],
  ['limitranges', 'LimitRange', 'limitranges'],
  ['resourcequotas', 'ResourceQuota', 'resourcequotas'],
  ['apps/v1/deployments', 'Deployment', 'deployments'],
  ['apps/v1/replicasets', 'ReplicaSet', 'replicasets'],
  ['autoscaling/v2/horizontalpodautoscalers', 'HorizontalPodAutoscaler', 'horizontalpodautoscalers'],
  ['batch/v1/jobs', 'Job', 'jobs'],
  ['batch/v1/cronjobs', 'CronJob', 'cronjobs'],
  ['networking.k8s.io/v1/ingresses', 'Ingress', 'ingresses'],
  ['apps/v1/statefulsets', 'StatefulSet', 'statefulsets'],
  ['apps/v1/daemonsets', 'DaemonSet', 'daemonsets'],
  ['secrets', 'Secret', 'secrets'],
];
const OBJECT_TYPES = TYPES.map(([, , objectType]) => objectType);
const WIDGETS = 'example.com/v1/widgets';
const WIDGET_RESOURCE = { group: 'example.com', apiVersion: 'v1', plural: 'widgets' };

/** The objects of one type: entities' and others'. */
function objectsOf(prefix) {
  const managedFields = [
    { manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', fieldsType: 'FieldsV1' },
  ];
  return [
    { metadata: { name: `${prefix}-a1`, namespace: 'default', labels: { [ID]: 'svc-a', app: 'web' } } },
    {
      metadata: {
        name: `${prefix}-a2`,
        namespace: 'team',
        labels: { [ID]: 'svc-a', app: 'api' },
        managedFields,
      },
      spec: { replicas: 2 },
    },
    {
      metadata: {
        name: `${prefix}-b1`,
        namespace: 'team',
        labels: { [ID]: 'svc-b', app: 'web', tier: 'db' },
      },
    },
    { metadata: { name: `${prefix}-x`, namespace: 'default', labels: { app: 'web' } } },
    { metadata: { name: `${prefix}-noise`, namespace: 'default', labels: { other: 'y' } } },
  ];
}

/** Fills `sim` with objects of every type (and widgets, when the cluster has their CRD). */
function populate(sim, { widgets }) {
  for (const [key, kind] of TYPES) {
    for (const object of objectsOf(kind.toLowerCase())) {
      if (kind === 'Secret') object.data = { password: 'aHVudGVyMg==' };
      sim.create(key, object);
    }
  }
  if (widgets) {
    sim.defineResource(WIDGETS, { kind: 'Widget' });
    for (const object of objectsOf('widget')) sim.create(WIDGETS, object);
  }
}

/**
 * How long the clusters keep an idle HTTP/1.1 connection: longer than any gap in a test run. At
 * Node's default 5 s, a busy machine's pauses let the server close a pooled connection the
 * default fetcher is about to reuse, and one backend's answer has a FETCH_ERROR (`socket hang up`)
 * the other's has not: a race of the test set-up, not a difference between the backends.
 */
const KEEP_ALIVE_MS = 10 * 60 * 1000;

/** Three clusters: two with the backend's service account (one behind a path prefix), one with the viewer's token. */
async function startClusters() {
  const options = { tls: true, bookmarkIntervalMs: 300, keepAliveTimeoutMs: KEEP_ALIVE_MS };
  const alpha = await createSimulator({ ...options, token: 'tok-alpha-5d1e' });
  const beta = await createSimulator({ ...options, token: 'tok-beta-8c2f', pathPrefix: '/k8s/clusters/c-1' });
  const viewer = await createSimulator({ ...options, token: 'tok-viewer-3a9b' });
  populate(alpha, { widgets: true });
  populate(beta, { widgets: false });
  populate(viewer, { widgets: true });
  return { alpha, beta, viewer };
}

/** The clusters as kubernetes.clusterLocatorMethods[0].clusters. */
function clusterConfig({ alpha, beta, viewer }) {
  return [
    {
      name: 'alpha',
      url: alpha.url,
      authProvider: 'serviceAccount',
      serviceAccountToken: 'tok-alpha-5d1e',
      caData: CA_DATA,
      skipMetricsLookup: true,
    },
    {
      name: 'beta',
      title: 'Beta',
      url: beta.url,
      authProvider: 'serviceAccount',
      serviceAccountToken: 'tok-beta-8c2f',
      caData: CA_DATA,
      skipMetricsLookup: true,
    },
    // The viewer's own token (the request's `auth`): metrics looked up, never cached.
    { name: 'viewer', url: viewer.url, authProvider: 'oidc', oidcTokenProvider: 'okta', caData: CA_DATA },
  ];
}

const entity = (name, annotations = {}) => ({
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: { name, namespace: 'default', annotations },
  spec: { type: 'service', owner: 'team', lifecycle: 'production' },
});

/** Entities selecting their objects each way an entity can. */
const ENTITIES = [
  entity('svc-a', { [ID]: 'svc-a' }),
  entity('svc-b'),
  entity('svc-team', { [ID]: 'svc-a', 'backstage.io/kubernetes-namespace': 'team' }),
  entity('by-app', { 'backstage.io/kubernetes-label-selector': 'app in (web,api),tier!=db' }),
  entity('id-set', { 'backstage.io/kubernetes-label-selector': `${ID} in (svc-a,svc-b),app=web` }),
  entity('bad-selector', { 'backstage.io/kubernetes-label-selector': 'app in (web' }),
];

/**
 * A real Backstage backend with the Kubernetes plugin, and this package's module when `native`.
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
async function startBackend(clusters, { native, nativeInformers } = {}) {
  const config = {
    kubernetes: {
      serviceLocatorMethod: { type: 'multiTenant' },
      clusterLocatorMethods: [{ type: 'config', clusters: clusterConfig(clusters) }],
      objectTypes: OBJECT_TYPES,
      customResources: [WIDGET_RESOURCE],
      ...(nativeInformers && { nativeInformers }),
    },
  };
  const features = [
    import('@backstage/plugin-kubernetes-backend'),
    catalogServiceMock.factory({ entities: ENTITIES }),
    mockServices.rootConfig.factory({ data: config }),
  ];
  if (native) features.push(import('kube-watch-native-backstage'));
  const backend = await startTestBackend({ features });
  return { url: `http://127.0.0.1:${backend.server.address().port}`, stop: () => backend.stop() };
}

const AUTH = { oidc: { okta: 'tok-viewer-3a9b' } };

async function post(backend, path, body) {
  const res = await fetch(`${backend.url}/api/kubernetes${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: 'Bearer mock-user-token' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST ${path}: HTTP ${res.status}: ${text}`);
  return JSON.parse(text);
}

const entityRef = (e) => `component:default/${e.metadata.name}`;

/** The three routes the frontend calls, for one entity. */
const ROUTES = {
  services: (backend, e) => post(backend, `/services/${e.metadata.name}`, { entity: e, auth: AUTH }),
  workloads: (backend, e) =>
    post(backend, '/resources/workloads/query', { entityRef: entityRef(e), auth: AUTH }),
  custom: (backend, e) =>
    post(backend, '/resources/custom/query', {
      entityRef: entityRef(e),
      auth: AUTH,
      customResources: [WIDGET_RESOURCE, { group: 'example.com', apiVersion: 'v1', plural: 'gadgets' }],
    }),
};

const byJson = (a, b) => {
  const x = JSON.stringify(a);
  const y = JSON.stringify(b);
  return x < y ? -1 : x > y ? 1 : 0;
};
const objectKey = (o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;

/**
 * An answer in a comparable form: clusters, responses, errors and objects sorted; `managedFields`
 * dropped when `stripManagedFields`; a FETCH_ERROR's message without the URL of whichever LIST
 * failed first, and without its reason (a pooled connection's `socket hang up` or a new one's
 * `ECONNREFUSED`, depending on which the default fetcher's agent tried).
 */
function normalize(body, { stripManagedFields = false } = {}) {
  const items = body.items.map((item) => ({
    ...item,
    resources: item.resources
      .map((r) => ({
        type: r.type,
        resources: r.resources
          .map((o) => {
            if (!stripManagedFields || !o.metadata?.managedFields) return o;
            const { managedFields: _managedFields, ...metadata } = o.metadata;
            return { ...o, metadata };
          })
          .sort((a, b) => (objectKey(a) < objectKey(b) ? -1 : objectKey(a) > objectKey(b) ? 1 : 0)),
      }))
      .sort(byJson),
    errors: item.errors
      .map((e) =>
        e.errorType === 'FETCH_ERROR'
          ? {
              ...e,
              message: e.message.replace(/https:\/\/\S+/, '<url>').replace(/reason: .*/, 'reason: <network>'),
            }
          : e,
      )
      .sort(byJson),
  }));
  return { items: items.sort((a, b) => (a.cluster.name < b.cluster.name ? -1 : 1)) };
}

/** Requests a simulator has received so far. */
const requestCount = (sim) => sim.requests.length;

/** A stand-in for Backstage's default fetcher: records its calls, answers one marker per type. */
function recordingDefault() {
  const calls = [];
  return {
    calls,
    async fetchObjectsForService(params) {
      calls.push(params);
      const resources = [...params.objectTypesToFetch, ...params.customResources];
      return {
        errors: [],
        responses: resources.map((r) => ({ type: r.objectType, resources: [{ fromDefault: true }] })),
      };
    },
    async fetchPodMetricsByNamespaces(...args) {
      calls.push(args);
      return { errors: [], responses: [{ type: 'podstatus', resources: [] }] };
    },
  };
}

/**
 * A fetcher request for pods by `backstage.io/kubernetes-id=svc` on the cluster at `url`, as a
 * serviceAccount cluster whose token is `token`.
 */
function serviceAccountRequest(url, token, overrides = {}) {
  return {
    serviceId: 'svc',
    clusterDetails: {
      name: 'one',
      url,
      authMetadata: { 'kubernetes.io/auth-provider': 'serviceAccount', serviceAccountToken: token },
    },
    credential: { type: 'bearer token', token },
    objectTypesToFetch: new Set([{ group: '', apiVersion: 'v1', plural: 'pods', objectType: 'pods' }]),
    labelSelector: `${ID}=svc`,
    customResources: [],
    ...overrides,
  };
}

/** Backstage's own default fetcher (KubernetesClientBasedFetcher), logging to a recording logger. */
function realDefaultFetcher() {
  const {
    KubernetesClientBasedFetcher,
  } = require('@backstage/plugin-kubernetes-backend/dist/service/KubernetesFetcher.cjs.js');
  const {
    KubernetesConnection,
  } = require('@backstage/plugin-kubernetes-backend/dist/service/KubernetesConnection.cjs.js');
  const { recordingLogger } = require('./helpers');
  return new KubernetesClientBasedFetcher({
    connection: new KubernetesConnection({ logger: recordingLogger() }),
  });
}

/** The live tab's follower of a fetcher's answers, signalling through `publisher` (or none). */
function followerOf(publisher) {
  const { InformerFollowing } = require('../packages/backstage/following/informers');
  return publisher ? new InformerFollowing({ publisher }) : null;
}

/**
 * A fetcher with its own watcher, logger and recording default fetcher, closed after `t`;
 * `options.live`, a publisher, is followed through followerOf().
 */
function fetcherFor(t, { live, ...options } = {}) {
  const { NativeKubernetesWatcher } = require('kube-watch-native');
  const { NativeInformerFetcher } = require('../packages/backstage/serving/fetcher');
  const { recordingLogger } = require('./helpers');
  const logger = recordingLogger();
  const defaultFetcher = recordingDefault();
  const fetcher = new NativeInformerFetcher({
    watcher: new NativeKubernetesWatcher({ logger }),
    defaultFetcher,
    logger,
    follower: followerOf(live),
    ...options,
  });
  t.after(() => fetcher.close());
  return { logger, defaultFetcher, fetcher };
}

module.exports = {
  ID,
  CA_DATA,
  TYPES,
  OBJECT_TYPES,
  WIDGETS,
  ENTITIES,
  ROUTES,
  startClusters,
  KEEP_ALIVE_MS,
  populate,
  startBackend,
  normalize,
  requestCount,
  post,
  recordingDefault,
  realDefaultFetcher,
  serviceAccountRequest,
  fetcherFor,
  followerOf,
};
