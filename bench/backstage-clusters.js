'use strict';
// The Backstage benchmark's clusters: six simulated API servers (sim/) in their own process
// (forked by bench/backstage.js), so none of their work is billed to the backend measured. Each
// answers every request 20 ms late (a remote API server), over HTTPS with HTTP/2 offered, and
// holds its share of `objects` objects of the tab's 13 default types and one custom resource,
// `labelled` of them carrying `backstage.io/kubernetes-id=svc-<n>` for `entities` entities.
//
// argv: <objects> <labelled> <entities> [viewers]: with `viewers` (bench/backstage.js --viewers),
// each cluster also knows that many viewers' own tokens (sim's `tokens`), each allowed to read
// (list, watch, get) every type cluster-wide: half by a wildcard rule, half by naming the 14 types.
//
// IPC (parent → clusters, each answered with the same `id`):
//   { cmd: 'info' }    → { clusters: [{ name, url }], token, viewerTokens, caData, cachedJsonBytes,
//                        withPods }: the JSON bytes of the labelled objects (what the module's
//                        informers hold), and the entities that have a pod
//   { cmd: 'toggle', entity, crashing } → {}: that entity's pod crash-loops (its container
//                        waits in CrashLoopBackOff) or is ready again: a change a tab shows
//   { cmd: 'requests' } → { requests, byKind }: requests received by all clusters since the last
//                        ask, and by kind: { list, watch, accessReview (SelfSubjectAccessReview),
//                        selfReview (SelfSubjectReview), other }
//   { cmd: 'change' }  → { entity, cluster, name, value }: a pod of the next entity that has one
//                        gets the annotation `bench/changed: <value>`
//   { cmd: 'churn', perSecond, seconds } → { changes }: that many pod changes a second, spread
//                        over the entities' pods, for that long, then the answer
//   { cmd: 'stop' }

const { createSimulator, certs } = require('../packages/kube-watch-native/sim');

const [objects, labelled, entities, viewers = 0] = process.argv.slice(2, 6).map(Number);
const CLUSTERS = 6;
const LATENCY_MS = 20;
const TOKEN = 'bench-token-4b7e';
const ID = 'backstage.io/kubernetes-id';

const TYPES = [
  'pods',
  'services',
  'configmaps',
  'limitranges',
  'resourcequotas',
  'apps/v1/deployments',
  'apps/v1/replicasets',
  'autoscaling/v2/horizontalpodautoscalers',
  'batch/v1/jobs',
  'batch/v1/cronjobs',
  'networking.k8s.io/v1/ingresses',
  'apps/v1/statefulsets',
  'apps/v1/daemonsets',
  'example.com/v1/widgets',
];

/**
 * An object of about 1.3 KiB of JSON: labels, annotations, managedFields, a spec and a status. A
 * pod is shaped as a pod (its containers in `spec.containers`, their statuses in the status), as
 * the Kubernetes tab's error detection reads it; the other types carry a workload's template.
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
  const conditions = [
    { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-30T12:00:05Z' },
    { type: 'Available', status: 'True', lastTransitionTime: '2026-11-30T12:00:05Z' },
  ];
  const pod = type === 'pods';
  return {
    metadata: {
      name,
      namespace: `ns-${index % 20}`,
      labels: { app: `app-${index % 97}`, tier: index % 3 === 0 ? 'db' : 'web', ...labels },
      annotations: { 'deployment.kubernetes.io/revision': String(index % 7), owner: `team-${index % 13}` },
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-11-30T12:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
            'f:spec': { 'f:replicas': {} },
          },
        },
      ],
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

/** The viewers' own tokens: `viewer-<v>-<hex>`, each the token of user `viewer-<v>`. */
const VIEWER_TOKENS = Array.from(
  { length: viewers },
  (_, v) => `viewer-${v}-${(0x5eed + v * 7919).toString(16)}`,
);
const READ_ALL = [{ resources: ['*'], namespaces: ['*'] }];
const READ_NAMED = [{ resources: TYPES.map((t) => t.split('/').at(-1)), namespaces: ['*'] }];
const TOKENS = viewers
  ? Object.fromEntries(
      VIEWER_TOKENS.map((token, v) => [token, { user: `viewer-${v}`, rules: v % 2 ? READ_NAMED : READ_ALL }]),
    )
  : undefined;

/** A request's kind, for the report's split of requests. */
function kindOf(record) {
  if (record.path.endsWith('/selfsubjectaccessreviews')) return 'accessReview';
  if (record.path.endsWith('/selfsubjectreviews')) return 'selfReview';
  if (record.method !== 'GET') return 'other';
  return record.query.watch === 'true' || record.query.watch === '1' ? 'watch' : 'list';
}

async function main() {
  const sims = [];
  for (let c = 0; c < CLUSTERS; c++) {
    const sim = await createSimulator({
      tls: true,
      http2: true,
      token: TOKEN,
      ...(TOKENS && { tokens: TOKENS }),
    });
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
  let changes = 0;
  const reply = (msg) => process.connected && process.send(msg);
  process.on('message', async (msg) => {
    if (msg.cmd === 'info') {
      reply({
        id: msg.id,
        clusters: sims.map((s, c) => ({ name: `cluster-${c}`, url: s.url })),
        token: TOKEN,
        viewerTokens: VIEWER_TOKENS,
        caData: Buffer.from(certs.ca).toString('base64'),
        cachedJsonBytes,
        withPods: [...byEntity.keys()],
      });
    } else if (msg.cmd === 'toggle') {
      const target = byEntity.get(msg.entity);
      const { name, namespace } = target.stored.metadata;
      sims[target.c].patch('pods', namespace, name, (pod) => {
        pod.status.containerStatuses = [
          msg.crashing
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
      reply({ id: msg.id });
    } else if (msg.cmd === 'requests') {
      const byKind = { list: 0, watch: 0, accessReview: 0, selfReview: 0, other: 0 };
      for (const s of sims) for (const record of s.requests) byKind[kindOf(record)]++;
      reply({ id: msg.id, requests: sims.reduce((n, s) => n + s.requests.length, 0), byKind });
      // The records themselves are not needed: keep the process's memory flat.
      for (const s of sims) s.requests.length = 0;
    } else if (msg.cmd === 'change') {
      const withPods = [...byEntity.keys()];
      const entity = withPods[changes % withPods.length];
      const target = byEntity.get(entity);
      const value = String(++changes);
      const { name, namespace } = target.stored.metadata;
      sims[target.c].patch('pods', namespace, name, (pod) => {
        pod.metadata.annotations = { ...pod.metadata.annotations, 'bench/changed': value };
      });
      reply({ id: msg.id, entity, cluster: `cluster-${target.c}`, name, value });
    } else if (msg.cmd === 'churn') {
      const targets = [...byEntity.values()];
      const total = msg.perSecond * msg.seconds;
      const started = Date.now();
      for (let n = 0; n < total; n++) {
        const target = targets[n % targets.length];
        const { name, namespace } = target.stored.metadata;
        sims[target.c].patch('pods', namespace, name, (pod) => {
          pod.metadata.annotations = { ...pod.metadata.annotations, 'bench/churn': String(n) };
        });
        const due = started + ((n + 1) * 1000) / msg.perSecond;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      }
      reply({ id: msg.id, changes: total });
    } else if (msg.cmd === 'stop') {
      await Promise.all(sims.map((s) => s.close()));
      process.exit(0);
    }
  });
  reply({ type: 'ready' });
}

// Dies with its parent.
process.on('disconnect', () => process.exit(0));
main().catch((err) => {
  console.error(err);
  process.exit(1);
});
