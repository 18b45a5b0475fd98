'use strict';
// `npm run bench:backstage`'s clusters (bench/clusters/index.js backstage): six simulated API
// servers (sim/), each answering every request 20 ms late (a remote API server), over HTTPS with
// HTTP/2 offered, and holding its share of `objects` objects of the tab's 13 default types and
// one custom resource, `labelled` of them carrying `backstage.io/kubernetes-id=svc-<n>` for
// `entities` entities. With `viewers` (bench/backstage.js --viewers), each cluster also knows
// that many viewers' own tokens (sim's `tokens`), each allowed to read (list, watch, get) every
// type cluster-wide: half by a wildcard rule, half by naming the 14 types.
//
// Ready: { clusters: [{ name, url }], token, viewerTokens, caData, cachedJsonBytes, withPods }:
// the JSON bytes of the labelled objects (what the module's informers hold), and the entities
// that have a pod. Commands:
//   { cmd: 'toggle', entity, crashing } → {}: that entity's pod crash-loops (its container
//                        waits in CrashLoopBackOff) or is ready again: a change a tab shows
//   { cmd: 'requests' } → { requests, byKind }: requests received by all clusters since the last
//                        ask, and by kind: { list, watch, accessReview (SelfSubjectAccessReview),
//                        selfReview (SelfSubjectReview), other }
//   { cmd: 'change' }  → { entity, cluster, name, value }: a pod of the next entity that has one
//                        gets the annotation `bench/changed: <value>`
//   { cmd: 'churn', perSecond, seconds } → { changes }: that many pod changes a second, spread
//                        over the entities' pods, for that long, then the answer

const { createSimulator, certs } = require('../../packages/kube-watch-native/sim');

const CLUSTERS = 6;
const LATENCY_MS = 20;
const TOKEN = 'bench-token-4b7e';
const ID = 'backstage.io/kubernetes-id';

const TYPES = (
  'pods services configmaps limitranges resourcequotas apps/v1/deployments apps/v1/replicasets ' +
  'autoscaling/v2/horizontalpodautoscalers batch/v1/jobs batch/v1/cronjobs networking.k8s.io/v1/ingresses ' +
  'apps/v1/statefulsets apps/v1/daemonsets example.com/v1/widgets'
).split(' ');

/** The objects' one managedFields entry. */
const MANAGED = {
  ...{
    manager: 'kube-controller-manager',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-30T12:00:00Z',
  },
  fieldsType: 'FieldsV1',
  fieldsV1: { 'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } }, 'f:spec': { 'f:replicas': {} } },
};

/**
 * An object of about 1.3 KiB of JSON: labels, annotations, managedFields, a spec and a status. A
 * pod is shaped as a pod (its containers and their statuses), as the Kubernetes tab's error
 * detection reads it; the other types carry a workload's template.
 */
function object(index, labels, type) {
  const name = `obj-${index}`;
  const containers = [
    {
      name: 'main',
      image: `registry.example.com/app-${index % 97}:1.${index % 50}.0`,
      ports: [{ containerPort: 8080, protocol: 'TCP' }],
      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
      env: [
        { name: 'LOG_LEVEL', value: 'info' },
        { name: 'REGION', value: `region-${index % 5}` },
      ],
    },
  ];
  const conditions = ['Ready', 'Available'].map((type) => ({
    ...{ type, status: 'True', lastTransitionTime: '2026-11-30T12:00:05Z' },
  }));
  const pod = type === 'pods';
  return {
    metadata: {
      name,
      namespace: `ns-${index % 20}`,
      labels: { app: `app-${index % 97}`, tier: index % 3 === 0 ? 'db' : 'web', ...labels },
      annotations: { 'deployment.kubernetes.io/revision': String(index % 7), owner: `team-${index % 13}` },
      managedFields: [MANAGED],
    },
    spec: pod
      ? { containers, nodeName: `node-${index % 40}`, restartPolicy: 'Always' }
      : {
          replicas: 1 + (index % 4),
          selector: { matchLabels: { app: `app-${index % 97}` } },
          template: { spec: { containers } },
        },
    status: pod
      ? {
          phase: 'Running',
          conditions,
          containerStatuses: [
            {
              name: 'main',
              ready: true,
              restartCount: 0,
              state: { running: { startedAt: '2026-11-30T12:00:04Z' } },
            },
          ],
        }
      : { phase: 'Running', conditions },
  };
}

const READ_ALL = [{ resources: ['*'], namespaces: ['*'] }];
const READ_NAMED = [{ resources: TYPES.map((t) => t.split('/').at(-1)), namespaces: ['*'] }];

/** A request's kind, for the report's split of requests. */
function kindOf(record) {
  if (record.path.endsWith('/selfsubjectaccessreviews')) return 'accessReview';
  if (record.path.endsWith('/selfsubjectreviews')) return 'selfReview';
  if (record.method !== 'GET') return 'other';
  return record.query.watch === 'true' || record.query.watch === '1' ? 'watch' : 'list';
}

async function start({ objects, labelled, entities, viewers = 0 }) {
  /** The viewers' own tokens: `viewer-<v>-<hex>`, each the token of user `viewer-<v>`. */
  const viewerTokens = Array.from(
    { length: viewers },
    (_, v) => `viewer-${v}-${(0x5eed + v * 7919).toString(16)}`,
  );
  const tokens = Object.fromEntries(
    viewerTokens.map((token, v) => [token, { user: `viewer-${v}`, rules: v % 2 ? READ_NAMED : READ_ALL }]),
  );
  const sims = [];
  for (let c = 0; c < CLUSTERS; c++) {
    const sim = await createSimulator({ tls: true, http2: true, token: TOKEN, ...(viewers && { tokens }) });
    const handle = sim.onRequest.bind(sim);
    sim.onRequest = (req, res) => setTimeout(() => handle(req, res), LATENCY_MS);
    sim.defineResource('example.com/v1/widgets', { kind: 'Widget' });
    sims.push(sim);
  }
  // Object i goes to cluster i % 6 and type (i / 6) % 14; the first `labelled` carry an entity's id.
  const byEntity = new Map();
  let cachedJsonBytes = 0;
  for (let i = 0; i < objects; i++) {
    const c = i % CLUSTERS;
    const type = TYPES[Math.floor(i / CLUSTERS) % TYPES.length];
    const entity = i < labelled ? `svc-${i % entities}` : undefined;
    const stored = sims[c].create(type, object(i, entity ? { [ID]: entity } : {}, type));
    if (entity) {
      cachedJsonBytes += Buffer.byteLength(JSON.stringify(stored));
      if (type === 'pods' && !byEntity.has(entity)) byEntity.set(entity, { c, stored });
    }
  }
  /** Patches the pod of `target` ({ c, stored }) with `edit`. */
  const patchPod = ({ c, stored }, edit) =>
    sims[c].patch('pods', stored.metadata.namespace, stored.metadata.name, edit);
  let changes = 0;
  const commands = {
    toggle({ entity, crashing }) {
      patchPod(byEntity.get(entity), (pod) => {
        pod.status.containerStatuses = [
          crashing
            ? {
                name: 'main',
                ready: false,
                restartCount: 0,
                state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off restarting' } },
              }
            : // Restarts count as an error too (the tab says "restarted N times"), so none.
              { name: 'main', ready: true, restartCount: 0, state: { running: {} } },
        ];
      });
      return {};
    },
    requests() {
      const byKind = { list: 0, watch: 0, accessReview: 0, selfReview: 0, other: 0 };
      for (const s of sims) for (const record of s.requests) byKind[kindOf(record)]++;
      const requests = sims.reduce((n, s) => n + s.requests.length, 0);
      // The records themselves are not needed: keep the process's memory flat.
      for (const s of sims) s.requests.length = 0;
      return { requests, byKind };
    },
    change() {
      const withPods = [...byEntity.keys()];
      const entity = withPods[changes % withPods.length];
      const target = byEntity.get(entity);
      const value = String(++changes);
      patchPod(target, (pod) => {
        pod.metadata.annotations = { ...pod.metadata.annotations, 'bench/changed': value };
      });
      return { entity, cluster: `cluster-${target.c}`, name: target.stored.metadata.name, value };
    },
    async churn({ perSecond, seconds }) {
      const targets = [...byEntity.values()];
      const total = perSecond * seconds;
      const started = Date.now();
      for (let n = 0; n < total; n++) {
        patchPod(targets[n % targets.length], (pod) => {
          pod.metadata.annotations = { ...pod.metadata.annotations, 'bench/churn': String(n) };
        });
        const due = started + ((n + 1) * 1000) / perSecond;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      return { changes: total };
    },
  };
  return {
    ready: {
      clusters: sims.map((s, c) => ({ name: `cluster-${c}`, url: s.url })),
      token: TOKEN,
      viewerTokens,
      caData: Buffer.from(certs.ca).toString('base64'),
      cachedJsonBytes,
      withPods: [...byEntity.keys()],
    },
    commands,
    stop: () => Promise.all(sims.map((s) => s.close())),
  };
}

module.exports = { start };
