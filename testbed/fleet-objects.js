'use strict';
// The fleet benchmark's objects (and the ConfigMaps of the strip and metadataOnly tests), shaped
// as `kubectl apply` and a real API server leave them: `metadata.managedFields` (one FieldsV1 entry per field manager: the client-side apply's fields,
// and a controller's status subresource where the kind has a status) and the
// `kubectl.kubernetes.io/last-applied-configuration` annotation repeating the applied object, the
// two parts that `strip` removes.
//
// Fields the API server fills in itself (defaults such as a port's `protocol` or a Deployment's
// `strategy`, allocations such as a Service's `clusterIP`) are in the object but, as on a real
// cluster, neither in the last-applied annotation nor among the fields kubectl's manager owns.
//
// `configMap` is the ConfigMap of the per-namespace runs. `TYPES` are the 20 resource types of a
// full fleet (core, apps, batch, networking, policy, autoscaling and three CRDs); `fleetObject`
// builds one of any of them from a generic per-kind generator: a plausible spec (and status),
// deterministic, padded up to about `bytes` of JSON in a place where that kind carries bulk
// (data, an environment variable of the pod template, a description annotation). Kinds that
// are larger unpadded (pods and their templates, about 2.6–3.3 KB) stay as they are: with
// bench/fleet-full.js's default of 1500 the 20 kinds average about 2.3 KB (0.8 KB stripped).

const crypto = require('node:crypto');

/** `bytes` of deterministic filler text: a repeated pattern, which LZ4 packs well. */
const filler = (seed, bytes) => {
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += `${seed}-${i}-`;
  return s.slice(0, bytes);
};

/**
 * `bytes` of deterministic text that does not compress: base64 of a SHA-256 chain seeded by
 * `seed`, as random as a certificate or a token in a Secret's data.
 */
const noise = (seed, bytes) => {
  const parts = [];
  let digest = crypto.createHash('sha256').update(String(seed)).digest();
  for (let n = 0; n < bytes; n += 43) {
    parts.push(digest.toString('base64url'));
    digest = crypto.createHash('sha256').update(digest).digest();
  }
  return parts.join('').slice(0, bytes);
};

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
const APPLIED_AT = '2026-11-30T12:00:00Z';
const STATUS_AT = '2026-11-30T12:00:07Z';

/** An Update's managedFields entry by `manager` at `time`. */
const managedBy = (manager, apiVersion, time, fieldsV1, subresource) => ({
  ...{ manager, operation: 'Update', apiVersion, time, fieldsType: 'FieldsV1', fieldsV1 },
  ...(subresource && { subresource }),
});

/** A ConfigMap `name` in `namespace` whose data is about `dataBytes` long. */
function configMap(namespace, name, dataBytes = 600) {
  const data = { 'config.yaml': filler(name, dataBytes), round: '0' };
  const labels = { app: 'fleet', tier: name.endsWith('0') ? 'a' : 'b' };
  const applied = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace,
      labels,
      annotations: { [LAST_APPLIED]: `${JSON.stringify(applied)}\n` },
      managedFields: [
        managedBy('kubectl-client-side-apply', 'v1', APPLIED_AT, {
          'f:data': { '.': {}, 'f:config.yaml': {}, 'f:round': {} },
          'f:metadata': {
            'f:annotations': { '.': {}, [`f:${LAST_APPLIED}`]: {} },
            'f:labels': { '.': {}, 'f:app': {}, 'f:tier': {} },
          },
        }),
      ],
    },
    data,
  };
}

// ---- the 20 types of a full fleet -------------------------------------------------------------

const isScalar = (v) => v === null || typeof v !== 'object';

/** A list item's key in FieldsV1, as the API server keys the associative lists it knows. */
function itemKey(item, index) {
  if (isScalar(item)) return `v:${JSON.stringify(item)}`;
  for (const k of ['name', 'containerPort', 'port', 'type', 'mountPath', 'ip']) {
    if (item[k] !== undefined) return `k:${JSON.stringify({ [k]: item[k] })}`;
  }
  return `i:${index}`;
}

/**
 * The FieldsV1 set of `value`: `f:<field>` per field, `k:{…}` per keyed list item, and `.` for
 * the maps and items that are themselves owned (string maps such as labels, list items).
 */
function fieldsOf(value) {
  const out = {};
  if (Array.isArray(value)) {
    value.forEach((item, i) => {
      out[itemKey(item, i)] = isScalar(item) ? {} : { '.': {}, ...fieldsOf(item) };
    });
    return out;
  }
  for (const [k, v] of Object.entries(value)) {
    if (isScalar(v)) out[`f:${k}`] = {};
    else if (Array.isArray(v)) out[`f:${k}`] = fieldsOf(v);
    else if (Object.values(v).every((x) => typeof x === 'string'))
      out[`f:${k}`] = { '.': {}, ...fieldsOf(v) };
    else out[`f:${k}`] = fieldsOf(v);
  }
  return out;
}

const image = (i) =>
  ['nginx:1.27.2', 'ghcr.io/acme/api:2.14.0', 'redis:7.4', 'envoyproxy/envoy:v1.31'][i % 4];

/** A pod template's spec; `pad` goes into an environment variable's value. */
function podSpec(name, i, pad) {
  return {
    containers: [
      {
        name: 'app',
        image: image(i),
        imagePullPolicy: 'IfNotPresent',
        ports: [{ containerPort: 8080, name: 'http', protocol: 'TCP' }],
        // The environment variable carries the padding; none without padding.
        ...(pad && { env: [{ name: 'EXTRA_ARGS', value: pad }] }),
        resources: { limits: { cpu: '500m', memory: '256Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
      },
    ],
    restartPolicy: 'Always',
  };
}

const template = (name, labels, i, pad) => ({ metadata: { labels }, spec: podSpec(name, i, pad) });
const condition = (type, status = 'True') => ({
  type,
  status,
  lastTransitionTime: STATUS_AT,
  reason: type === 'Available' ? 'MinimumReplicasAvailable' : 'AsExpected',
  message: `${type} is ${status}`,
});

function typed(group, version, plural, kind, make) {
  return { key: `${group}/${version}/${plural}`, group, version, plural, kind, crd: false, make };
}
const core = (plural, kind, make) => ({
  key: plural,
  group: '',
  version: 'v1',
  plural,
  kind,
  crd: false,
  make,
});
const apps = (plural, kind, make) => typed('apps', 'v1', plural, kind, make);
const batch = (plural, kind, make) => typed('batch', 'v1', plural, kind, make);
const crd = (...args) => ({ ...typed(...args), crd: true });

/**
 * The 20 types: `key` as the simulator names it, the informer's `group`/`version`/`plural`, the
 * `kind`, whether a CRD (`crd`, defined on the simulator with defineResource), and `make(name,
 * i, labels, pad)` → `{ spec?, data?, status?, …, pad: where the padding went }`.
 */
const TYPES = [
  core('configmaps', 'ConfigMap', (name, i, labels, pad) => ({
    body: { data: { 'config.yaml': pad, 'log-level': 'info', replicas: String(1 + (i % 3)) } },
  })),
  core('secrets', 'Secret', (name, i, labels, pad) => ({
    body: {
      type: 'kubernetes.io/tls',
      data: {
        'tls.crt': Buffer.from(pad).toString('base64'),
        'tls.key': Buffer.from(filler(name, 64)).toString('base64'),
      },
    },
  })),
  core('services', 'Service', (name, i, labels, pad) => ({
    body: {
      spec: {
        type: 'ClusterIP',
        selector: labels,
        ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8080 }],
        clusterIP: `10.96.${i % 250}.${(i * 7) % 250}`,
        clusterIPs: [`10.96.${i % 250}.${(i * 7) % 250}`],
        sessionAffinity: 'None',
        ipFamilies: ['IPv4'],
        ipFamilyPolicy: 'SingleStack',
        internalTrafficPolicy: 'Cluster',
      },
      status: { loadBalancer: {} },
    },
    description: pad,
  })),
  core('serviceaccounts', 'ServiceAccount', (name, i, labels, pad) => ({
    body: { automountServiceAccountToken: false, imagePullSecrets: [{ name: 'registry-credentials' }] },
    description: pad,
  })),
  core('endpoints', 'Endpoints', (name, i, labels, pad) => ({
    body: {
      subsets: [
        {
          addresses: [0, 1].map((k) => ({
            ip: `10.244.${k}.${i % 250}`,
            targetRef: { kind: 'Pod', name: `${name}-${k}`, uid: uuid(`${name}-${k}`) },
          })),
          ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
        },
      ],
    },
    description: pad,
  })),
  core('persistentvolumeclaims', 'PersistentVolumeClaim', (name, i, labels, pad) => ({
    body: {
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: `${1 + (i % 20)}Gi` } },
        storageClassName: 'standard',
        volumeMode: 'Filesystem',
        volumeName: `pvc-${uuid(name)}`,
      },
      status: { phase: 'Bound', accessModes: ['ReadWriteOnce'], capacity: { storage: `${1 + (i % 20)}Gi` } },
    },
    description: pad,
  })),
  core('pods', 'Pod', (name, i, labels, pad) => ({
    body: {
      spec: { ...podSpec(name, i, pad), nodeName: `node-${i % 3}` },
      status: {
        phase: 'Running',
        conditions: ['Ready', 'PodScheduled'].map((t) => condition(t)),
        hostIP: `192.168.0.${i % 3}`,
        podIP: `10.244.${i % 3}.${i % 250}`,
        podIPs: [{ ip: `10.244.${i % 3}.${i % 250}` }],
        startTime: STATUS_AT,
        qosClass: 'Burstable',
        containerStatuses: [
          {
            name: 'app',
            ready: true,
            restartCount: 0,
            started: true,
            image: image(i),
            state: { running: { startedAt: STATUS_AT } },
          },
        ],
      },
    },
  })),
  apps('deployments', 'Deployment', (name, i, labels, pad) => ({
    body: {
      spec: {
        replicas: 2,
        revisionHistoryLimit: 10,
        selector: { matchLabels: labels },
        strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
        template: template(name, labels, i, pad),
      },
      status: {
        observedGeneration: 1,
        replicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
        updatedReplicas: 2,
        conditions: [condition('Available'), condition('Progressing')],
      },
    },
  })),
  apps('replicasets', 'ReplicaSet', (name, i, labels, pad) => ({
    body: {
      spec: {
        replicas: 2,
        selector: { matchLabels: { ...labels, 'pod-template-hash': sha(name).slice(0, 10) } },
        template: template(name, labels, i, pad),
      },
      status: {
        replicas: 2,
        readyReplicas: 2,
        availableReplicas: 2,
        fullyLabeledReplicas: 2,
        observedGeneration: 1,
      },
    },
  })),
  apps('statefulsets', 'StatefulSet', (name, i, labels, pad) => ({
    body: {
      spec: {
        replicas: 3,
        serviceName: name,
        podManagementPolicy: 'OrderedReady',
        selector: { matchLabels: labels },
        template: template(name, labels, i, pad),
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { partition: 0 } },
      },
      status: {
        replicas: 3,
        readyReplicas: 3,
        currentReplicas: 3,
        updatedReplicas: 3,
        observedGeneration: 1,
      },
    },
  })),
  apps('daemonsets', 'DaemonSet', (name, i, labels, pad) => ({
    body: {
      spec: {
        selector: { matchLabels: labels },
        template: template(name, labels, i, pad),
        updateStrategy: { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } },
      },
      status: { currentNumberScheduled: 3, desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3 },
    },
  })),
  batch('jobs', 'Job', (name, i, labels, pad) => ({
    body: {
      spec: {
        backoffLimit: 6,
        completions: 1,
        parallelism: 1,
        completionMode: 'NonIndexed',
        template: {
          ...template(name, labels, i, pad),
          spec: { ...podSpec(name, i, pad), restartPolicy: 'Never' },
        },
      },
      status: {
        succeeded: 1,
        startTime: APPLIED_AT,
        completionTime: STATUS_AT,
        conditions: [condition('Complete')],
      },
    },
  })),
  batch('cronjobs', 'CronJob', (name, i, labels, pad) => ({
    body: {
      spec: {
        schedule: `${i % 60} * * * *`,
        concurrencyPolicy: 'Forbid',
        successfulJobsHistoryLimit: 3,
        failedJobsHistoryLimit: 1,
        jobTemplate: {
          spec: {
            template: {
              ...template(name, labels, i, pad),
              spec: { ...podSpec(name, i, pad), restartPolicy: 'OnFailure' },
            },
          },
        },
      },
      status: { lastScheduleTime: STATUS_AT, lastSuccessfulTime: STATUS_AT },
    },
  })),
  typed('networking.k8s.io', 'v1', 'ingresses', 'Ingress', (name, i, labels, pad) => ({
    body: {
      spec: {
        ingressClassName: 'nginx',
        tls: [{ hosts: [`${name}.example.com`], secretName: `${name}-tls` }],
        rules: [
          {
            host: `${name}.example.com`,
            http: {
              paths: [
                { path: '/', pathType: 'Prefix', backend: { service: { name, port: { number: 80 } } } },
                {
                  path: '/api',
                  pathType: 'Prefix',
                  backend: { service: { name: `${name}-api`, port: { number: 8080 } } },
                },
              ],
            },
          },
        ],
      },
      status: { loadBalancer: { ingress: [{ ip: `172.18.0.${i % 250}` }] } },
    },
    description: pad,
  })),
  typed('networking.k8s.io', 'v1', 'networkpolicies', 'NetworkPolicy', (name, i, labels, pad) => ({
    body: {
      spec: {
        podSelector: { matchLabels: labels },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { role: 'frontend' } } }],
            ports: [{ port: 8080, protocol: 'TCP' }],
          },
        ],
        egress: [
          { to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } } }] },
        ],
      },
    },
    description: pad,
  })),
  typed('policy', 'v1', 'poddisruptionbudgets', 'PodDisruptionBudget', (name, i, labels, pad) => ({
    body: {
      spec: { minAvailable: 1, selector: { matchLabels: labels } },
      status: {
        currentHealthy: 2,
        desiredHealthy: 1,
        disruptionsAllowed: 1,
        expectedPods: 2,
        observedGeneration: 1,
        conditions: [condition('DisruptionAllowed')],
      },
    },
    description: pad,
  })),
  typed(
    'autoscaling',
    'v2',
    'horizontalpodautoscalers',
    'HorizontalPodAutoscaler',
    (name, i, labels, pad) => ({
      body: {
        spec: {
          scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name },
          minReplicas: 2,
          maxReplicas: 10,
          metrics: [
            {
              type: 'Resource',
              resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } },
            },
          ],
        },
        status: {
          currentReplicas: 2,
          desiredReplicas: 2,
          currentMetrics: [
            {
              type: 'Resource',
              resource: { name: 'cpu', current: { averageUtilization: 31, averageValue: '31m' } },
            },
          ],
          conditions: [condition('AbleToScale'), condition('ScalingActive')],
        },
      },
      description: pad,
    }),
  ),
  crd('cert-manager.io', 'v1', 'certificates', 'Certificate', (name, i, labels, pad) => ({
    body: {
      spec: {
        secretName: `${name}-tls`,
        dnsNames: [`${name}.example.com`, `www.${name}.example.com`],
        duration: '2160h0m0s',
        renewBefore: '360h0m0s',
        issuerRef: { group: 'cert-manager.io', kind: 'ClusterIssuer', name: 'letsencrypt' },
        privateKey: { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' },
      },
      status: {
        notAfter: '2027-02-28T12:00:00Z',
        notBefore: APPLIED_AT,
        revision: 1,
        conditions: [condition('Ready')],
      },
    },
    description: pad,
  })),
  crd('monitoring.coreos.com', 'v1', 'servicemonitors', 'ServiceMonitor', (name, i, labels, pad) => ({
    body: {
      spec: {
        selector: { matchLabels: labels },
        namespaceSelector: { any: false },
        endpoints: [
          { port: 'http', path: '/metrics', interval: '30s', scrapeTimeout: '10s', scheme: 'http' },
          { port: 'admin', path: '/stats/prometheus', interval: '60s', scheme: 'http' },
        ],
        jobLabel: 'app',
      },
    },
    description: pad,
  })),
  crd('argoproj.io', 'v1alpha1', 'applications', 'Application', (name, i, labels, pad) => ({
    body: {
      spec: {
        project: 'default',
        source: {
          repoURL: 'https://git.example.com/acme/deploy.git',
          path: `apps/${name}`,
          targetRevision: 'main',
        },
        destination: { server: 'https://kubernetes.default.svc', namespace: name },
        syncPolicy: { automated: { prune: true, selfHeal: true }, syncOptions: ['CreateNamespace=true'] },
      },
      status: {
        sync: { status: 'Synced', revision: sha(name).slice(0, 40) },
        health: { status: 'Healthy' },
        reconciledAt: STATUS_AT,
        sourceType: 'Directory',
      },
    },
    description: pad,
  })),
];

const sha = (s) => crypto.createHash('sha256').update(s).digest('hex');
const uuid = (s) => {
  const h = sha(s);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`;
};

// Fields the API server fills in (defaults, allocations) where the applied manifest is silent:
// they are in the stored object, but neither in the last-applied annotation nor among the
// fields kubectl's manager owns. `restartPolicy` only as its default, `Always`.
const SERVER_SET = new Set(
  (
    'imagePullPolicy protocol revisionHistoryLimit strategy updateStrategy podManagementPolicy completionMode ' +
    'backoffLimit sessionAffinity clusterIP clusterIPs ipFamilies ipFamilyPolicy internalTrafficPolicy volumeMode volumeName'
  ).split(' '),
);

/** `value` as its manifest wrote it: without the fields the server set (SERVER_SET). */
function asApplied(value) {
  if (Array.isArray(value)) return value.map(asApplied);
  if (isScalar(value)) return value;
  const out = {};
  for (const [k, v] of Object.entries(value)) {
    if (SERVER_SET.has(k) || (k === 'restartPolicy' && v === 'Always')) continue;
    out[k] = asApplied(v);
  }
  return out;
}

// Equal FieldsV1 trees, one frozen copy each. Every object of a kind owns the same fields, so
// its objects share one tree instead of holding a hundred small maps each: the same JSON, but
// a server holding 125 000 objects gives its garbage collector a fraction of the objects to
// mark (a full collection during a sync is work billed to the machine the client runs on).
const fieldTrees = new Map();

function shared(fields) {
  const key = JSON.stringify(fields);
  let tree = fieldTrees.get(key);
  if (!tree) {
    tree = deepFreeze(fields);
    fieldTrees.set(key, tree);
  }
  return tree;
}

function deepFreeze(value) {
  if (!isScalar(value)) for (const v of Object.values(value)) deepFreeze(v);
  return Object.freeze(value);
}

/** One object of `type` with `pad` characters of bulk. */
function build(type, namespace, name, i, pad) {
  const labels = { app: name, tier: i % 2 ? 'backend' : 'frontend' };
  const { body, description } = type.make(name, i, labels, pad);
  const { status, ...spec } = body;
  const applied = asApplied(spec);
  // The description annotation carries a kind's padding; none without padding.
  const annotations = { ...(description && { 'fleet.kube-watch.dev/description': description }) };
  const apiVersion = type.group ? `${type.group}/${type.version}` : 'v1';
  const lastApplied = {
    apiVersion,
    kind: type.kind,
    metadata: { annotations, labels, name, namespace },
    ...applied,
  };
  const metadata = {
    name,
    namespace,
    labels,
    annotations: { ...annotations, [LAST_APPLIED]: `${JSON.stringify(lastApplied)}\n` },
    generation: 1,
  };
  const owned = { metadata: { annotations: metadata.annotations, labels }, ...applied };
  metadata.managedFields = [
    managedBy('kubectl-client-side-apply', apiVersion, APPLIED_AT, shared(fieldsOf(owned))),
  ];
  if (status) {
    const manager = type.kind === 'Pod' ? 'kubelet' : 'kube-controller-manager';
    metadata.managedFields.push(
      managedBy(manager, apiVersion, STATUS_AT, shared(fieldsOf({ status })), 'status'),
    );
  }
  return { apiVersion, kind: type.kind, metadata, ...spec, ...(status && { status }) };
}

// How many characters of padding each type needs for `bytes`, found once per type and size.
const padFor = new Map();

/**
 * Object `i` of `type` named `name` in `namespace`, about `bytes` of JSON as stored (before the
 * server adds uid, resourceVersion and creationTimestamp, about 120 more); its padding is
 * `noise` rather than a repeated pattern when `incompressible`.
 */
function fleetObject(type, namespace, name, i, bytes = 2000, incompressible = false) {
  const pad = incompressible ? (n) => noise(`${namespace}/${name}`, n) : (n) => filler(name, n);
  const cacheKey = `${type.plural}/${bytes}`;
  if (!padFor.has(cacheKey)) {
    const size = (n) => Buffer.byteLength(JSON.stringify(build(type, namespace, name, i, pad(n))));
    const s0 = size(0);
    const slope = (size(400) - s0) / 400;
    padFor.set(cacheKey, Math.max(0, Math.round((bytes - 120 - s0) / slope)));
  }
  return build(type, namespace, name, i, pad(padFor.get(cacheKey)));
}

/** JSON bytes of `obj` without managedFields and the last-applied annotation (what `strip` keeps). */
function strippedBytes(obj) {
  const { managedFields: _m, annotations = {}, ...metadata } = obj.metadata;
  const { [LAST_APPLIED]: _l, ...rest } = annotations;
  return Buffer.byteLength(JSON.stringify({ ...obj, metadata: { ...metadata, annotations: rest } }));
}

/** sha1 of the sorted `namespace/name=resourceVersion` lines of `objects`: a cache against its server. */
function digest(objects) {
  const lines = objects.map(
    (o) => `${o.metadata.namespace}/${o.metadata.name}=${o.metadata.resourceVersion}`,
  );
  return crypto.createHash('sha1').update(lines.sort().join('\n')).digest('hex');
}

module.exports = { configMap, fleetObject, strippedBytes, digest, TYPES, LAST_APPLIED };
