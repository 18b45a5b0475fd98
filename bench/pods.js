'use strict';
// Deterministic, realistic Pod objects for the benchmark, in three sizes.
//
// Every pod looks like what the API server sends for a Deployment's pod: metadata with labels,
// annotations, an ownerReference to its ReplicaSet and managedFields (kube-controller-manager's
// create, kubelet's status update) whose fieldsV1 mirror the spec; a spec with containers,
// env vars, probes, volumes and tolerations; a status with conditions and container statuses.
// Size comes from more containers, more env vars, more annotations and the managedFields that
// describe them — never from one big padding string — so JSON.parse sees the shape of real
// traffic. The same seed gives byte-identical output in every process.

const { seeded } = require('../packages/kube-watch-native/sim/random');

/** Target sizes of one watch line (`JSON.stringify({type, object}) + '\n'`), in bytes. */
const SIZES = {
  // A pod just scheduled: one container, status still Pending (how most ADDED events look).
  small: { target: 1400, containers: 1, volumes: 0, annotations: 1, labels: 2, pending: true },
  medium: { target: 9216, containers: 2, volumes: 1, annotations: 2, labels: 4, managed: true },
  large: { target: 100 * 1024, containers: 8, volumes: 10, annotations: 16, labels: 10, managed: true },
};

/** `n` characters of `alphabet`, each drawn with `rand`. */
const draw = (alphabet) => (rand, n) =>
  Array.from({ length: n }, () => alphabet[Math.floor(rand() * alphabet.length)]).join('');
const hex = draw('0123456789abcdef');
const alnum = draw('bcdfghjklmnpqrstvwxz2456789');

const uid = (rand) => `${hex(rand, 8)}-${hex(rand, 4)}-4${hex(rand, 3)}-a${hex(rand, 3)}-${hex(rand, 12)}`;

const WORDS = (
  'payments checkout catalog search inventory billing auth gateway orders shipping ledger profile ' +
  'notifications recommendations cart'
).split(' ');
const ENV_NAMES = (
  'LOG_LEVEL DATABASE_URL REDIS_HOST KAFKA_BROKERS OTEL_EXPORTER_OTLP_ENDPOINT FEATURE_FLAGS HTTP_PORT ' +
  'GRPC_PORT JAVA_OPTS NODE_OPTIONS TZ REGION CACHE_TTL_SECONDS MAX_CONNECTIONS UPSTREAM_TIMEOUT_MS SENTRY_DSN'
).split(' ');

const ts = (rand, base) =>
  new Date(base + Math.floor(rand() * 86_400_000)).toISOString().replace(/\.\d+Z$/, 'Z');
const T0 = Date.UTC(2025, 0, 15);

function envVar(rand, i) {
  const name = `${ENV_NAMES[i % ENV_NAMES.length]}${i >= ENV_NAMES.length ? `_${i}` : ''}`;
  switch (i % 4) {
    case 0:
      return {
        name,
        value: `${WORDS[Math.floor(rand() * WORDS.length)]}-${alnum(rand, 6)}.svc.cluster.local:${8000 + i}`,
      };
    case 1:
      return {
        name,
        valueFrom: { secretKeyRef: { name: `${WORDS[i % WORDS.length]}-secrets`, key: name.toLowerCase() } },
      };
    case 2:
      return { name, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } } };
    default:
      return { name, value: String(Math.floor(rand() * 100000)) };
  }
}

const probe = (path, port, initialDelaySeconds) => ({
  httpGet: { path, port, scheme: 'HTTP' },
  ...{ initialDelaySeconds, timeoutSeconds: 1, periodSeconds: 10, successThreshold: 1, failureThreshold: 3 },
});

function container(rand, app, c, envCount, volumes, rich) {
  const name = c === 0 ? app : `${app}-sidecar-${c}`;
  const out = {
    name,
    image: `registry.example.com/${app}/${name}:v1.${Math.floor(rand() * 40)}.${Math.floor(rand() * 10)}`,
    ports: [{ name: 'http', containerPort: 8080 + c, protocol: 'TCP' }],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  };
  if (envCount > 0) out.env = Array.from({ length: envCount }, (_, i) => envVar(rand, i));
  if (rich) {
    out.resources = { limits: { cpu: '500m', memory: '512Mi' }, requests: { cpu: '100m', memory: '128Mi' } };
    out.volumeMounts = volumes.map((v) => ({ name: v, mountPath: `/etc/${v}`, readOnly: true }));
    out.livenessProbe = probe('/healthz', 8080 + c, 10);
    out.readinessProbe = probe('/ready', 8080 + c, 5);
    out.securityContext = {
      runAsNonRoot: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    };
  }
  return out;
}

/** fieldsV1 the way the API server writes it: one `f:` key per set field, `{}` for leaves. */
function fieldsOf(value) {
  if (Array.isArray(value)) {
    const out = {};
    value.forEach((item, i) => {
      const key = item && typeof item === 'object' && 'name' in item ? `k:{"name":"${item.name}"}` : `i:${i}`;
      out[key] = item && typeof item === 'object' ? { '.': {}, ...fieldsOf(item) } : {};
    });
    return out;
  }
  if (value && typeof value === 'object') {
    const out = {};
    for (const [k, v] of Object.entries(value)) out[`f:${k}`] = v && typeof v === 'object' ? fieldsOf(v) : {};
    return out;
  }
  return {};
}

/** An Update's managedFields entry by `manager` at `time`. */
const managedBy = (manager, time, fieldsV1, subresource) => ({
  ...{ manager, operation: 'Update', apiVersion: 'v1', time, fieldsType: 'FieldsV1', fieldsV1 },
  ...(subresource && { subresource }),
});

function buildPod(profile, index, envCount, seed) {
  const rand = seeded(seed * 7919 + index);
  const app = `${WORDS[index % WORDS.length]}`;
  const hash = alnum(rand, 10);
  const rsName = `${app}-${hash}`;
  const name = `${rsName}-${alnum(rand, 5)}`;
  const volumes = Array.from({ length: profile.volumes }, (_, i) => `${app}-config-${i}`);
  const rich = profile.containers > 1 || profile.volumes > 0;
  const containers = Array.from({ length: profile.containers }, (_, c) =>
    container(rand, app, c, envCount, volumes, rich),
  );
  const labels = { app, 'pod-template-hash': hash };
  for (let i = 2; i < profile.labels; i++)
    labels[`example.com/label-${i}`] = `${WORDS[(index + i) % WORDS.length]}`;
  const annotations = {};
  for (let i = 0; i < profile.annotations; i++) {
    annotations[`example.com/annotation-${i}`] = `${WORDS[(index + i) % WORDS.length]}-${hex(rand, 16)}`;
  }
  const created = ts(rand, T0);
  const spec = {
    containers,
    restartPolicy: 'Always',
    terminationGracePeriodSeconds: 30,
    dnsPolicy: 'ClusterFirst',
    serviceAccountName: app,
    nodeName: `node-${alnum(rand, 5)}`,
    schedulerName: 'default-scheduler',
    priority: 0,
  };
  if (rich) {
    spec.volumes = volumes.map((v) => ({ name: v, configMap: { name: v, defaultMode: 420 } }));
    spec.securityContext = { fsGroup: 2000, runAsUser: 1000 };
    spec.tolerations = ['not-ready', 'unreachable'].map((taint) => ({
      key: `node.kubernetes.io/${taint}`,
      ...{ operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    }));
    spec.enableServiceLinks = true;
    spec.preemptionPolicy = 'PreemptLowerPriority';
  }
  const conditionTypes = profile.pending
    ? ['PodScheduled']
    : ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'];
  const conditions = conditionTypes.map((type) => ({
    type,
    status: 'True',
    lastProbeTime: null,
    lastTransitionTime: created,
  }));
  const status = profile.pending
    ? { phase: 'Pending', conditions, qosClass: 'BestEffort' }
    : {
        phase: 'Running',
        conditions,
        hostIP: `10.0.${Math.floor(rand() * 255)}.${Math.floor(rand() * 255)}`,
        podIP: `10.244.${Math.floor(rand() * 255)}.${Math.floor(rand() * 255)}`,
        startTime: created,
        containerStatuses: containers.map((c) => ({
          name: c.name,
          state: { running: { startedAt: created } },
          ready: true,
          restartCount: 0,
          image: c.image,
          imageID: `${c.image.split(':')[0]}@sha256:${hex(rand, 64)}`,
          containerID: `containerd://${hex(rand, 64)}`,
          started: true,
        })),
        qosClass: 'Burstable',
      };
  if (profile.pending) delete spec.nodeName;
  const metadata = {
    name,
    generateName: `${rsName}-`,
    namespace: 'bench',
    uid: uid(rand),
    resourceVersion: String(100000 + index),
    creationTimestamp: created,
    labels,
    annotations,
    ownerReferences: [
      {
        apiVersion: 'apps/v1',
        kind: 'ReplicaSet',
        name: rsName,
        uid: uid(rand),
        controller: true,
        blockOwnerDeletion: true,
      },
    ],
  };
  const kubelet = (fields) => managedBy('kubelet', created, { 'f:status': fields }, 'status');
  metadata.managedFields = profile.managed
    ? [
        managedBy('kube-controller-manager', created, {
          'f:metadata': fieldsOf({ generateName: 1, labels, annotations, ownerReferences: 1 }),
          'f:spec': fieldsOf(spec),
        }),
        kubelet(fieldsOf(status)),
      ]
    : // Even a small pod carries kubelet's status entry; keep it short.
      [kubelet({ 'f:phase': {}, 'f:podIP': {} })];
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec, status };
}

/** The annotation carrying a trickle event's send time (ms since the epoch, fractional). */
const SENT_AT = 'bench.example.com/sent-at';

const lineOf = (object, type = 'MODIFIED') => `${JSON.stringify({ type, object })}\n`;

/** The env var count per container that brings the line closest to the profile's target. */
function envCountFor(profile, seed) {
  let best = 0;
  let bestDiff = Infinity;
  for (let n = 0; n <= 400; n++) {
    const diff = Math.abs(Buffer.byteLength(lineOf(buildPod(profile, 0, n, seed))) - profile.target);
    if (diff < bestDiff) {
      best = n;
      bestDiff = diff;
    } else if (diff > bestDiff) break;
  }
  return best;
}

/** `count` distinct pods of `size` ('small' | 'medium' | 'large'), deterministic for a seed. */
function pods(size, count = 32, seed = 1) {
  const profile = SIZES[size];
  if (!profile) throw new Error(`unknown pod size ${size}`);
  const envCount = envCountFor(profile, seed);
  return Array.from({ length: count }, (_, i) => buildPod(profile, i, envCount, seed));
}

/** The same pods as watch lines (`{"type":"MODIFIED","object":…}\n`). */
function lines(size, count = 32, seed = 1) {
  return pods(size, count, seed).map((p) => lineOf(p));
}

module.exports = { SIZES, SENT_AT, pods, lines, lineOf };
