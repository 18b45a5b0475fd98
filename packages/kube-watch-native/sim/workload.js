'use strict';

const { seeded } = require('./random');

// A little cluster that lives: Deployment-owned pods are scheduled, start, flap readiness,
// get relabelled, terminate gracefully and are replaced; Job pods run to completion. It feeds
// the demo and benchmarks with the shape and rhythm of real Pod traffic.

const crypto = require('node:crypto');

const APPS = [
  { app: 'web', image: 'nginx:1.27.2', port: 80, owner: 'ReplicaSet', sidecar: true },
  { app: 'api', image: 'registry.example.com/shop/api:4.12.0', port: 8080, owner: 'ReplicaSet' },
  { app: 'worker', image: 'registry.example.com/shop/worker:4.12.0', owner: 'ReplicaSet' },
  { app: 'cache', image: 'redis:7.4.1', port: 6379, owner: 'StatefulSet' },
  { app: 'report', image: 'registry.example.com/shop/report:1.3.0', owner: 'Job' },
];
const MAX_PODS_PER_NAMESPACE = 8;

const now = () => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');

function condition(type, status) {
  return { type, status, lastProbeTime: null, lastTransitionTime: now() };
}

class Workload {
  constructor(sim, options) {
    this.sim = sim;
    this.namespaces = options.namespaces || ['default', 'web'];
    /** Labels every pod carries besides its own (the demo's `backstage.io/kubernetes-id`). */
    this.labels = options.labels ?? {};
    this.random = options.seed === undefined ? Math.random : seeded(options.seed);
    this.owners = new Map();
    this.counter = 0;
  }

  pick(list) {
    return list[Math.floor(this.random() * list.length)];
  }

  hex(n) {
    let s = '';
    while (s.length < n) s += Math.floor(this.random() * 16).toString(16);
    return s;
  }

  // One owner (ReplicaSet/StatefulSet/Job) per app and namespace, created on first use.
  owner(spec, namespace) {
    const key = `${namespace}/${spec.app}`;
    if (!this.owners.has(key)) {
      const hash = spec.owner === 'ReplicaSet' ? this.hex(10).replace(/^\d/, 'b') : '';
      const name = hash
        ? `${spec.app}-${hash}`
        : spec.owner === 'Job'
          ? `${spec.app}-${Date.now() % 100000000}`
          : spec.app;
      this.owners.set(key, { name, hash, uid: crypto.randomUUID(), ordinal: 0 });
    }
    return this.owners.get(key);
  }

  podsIn(namespace) {
    return this.sim
      .list('pods', { namespace })
      .filter((p) => p.metadata.labels && p.metadata.labels['sim.kube-watch/workload'] === 'true');
  }

  createPod(namespace, running) {
    const spec = this.pick(APPS);
    const owner = this.owner(spec, namespace);
    const name =
      spec.owner === 'StatefulSet'
        ? `${owner.name}-${owner.ordinal++}`
        : `${owner.name}-${this.hex(5).replace(/[0-9]/g, (d) => 'bcdfghjklm'[d])}`;
    const labels = {
      app: spec.app,
      'app.kubernetes.io/part-of': 'shop',
      'sim.kube-watch/workload': 'true',
      ...this.labels,
    };
    if (owner.hash) labels['pod-template-hash'] = owner.hash;
    if (spec.owner === 'Job') labels['job-name'] = owner.name;
    const containers = [
      {
        name: spec.app,
        image: spec.image,
        ...(spec.port && { ports: [{ containerPort: spec.port, protocol: 'TCP' }] }),
        resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
        imagePullPolicy: 'IfNotPresent',
        terminationMessagePath: '/dev/termination-log',
        terminationMessagePolicy: 'File',
      },
    ];
    if (spec.sidecar) {
      containers.push({
        name: 'log-shipper',
        image: 'fluent/fluent-bit:3.1.9',
        resources: { requests: { cpu: '10m', memory: '32Mi' } },
      });
    }
    const node = `node-${1 + Math.floor(this.random() * 3)}`;
    const pod = {
      metadata: {
        name,
        ...(spec.owner === 'ReplicaSet' && { generateName: `${owner.name}-` }),
        namespace,
        labels,
        annotations: {
          'kubectl.kubernetes.io/default-container': spec.app,
          'prometheus.io/scrape': spec.port ? 'true' : 'false',
        },
        ownerReferences: [
          {
            apiVersion: spec.owner === 'Job' ? 'batch/v1' : 'apps/v1',
            kind: spec.owner,
            name: owner.name,
            uid: owner.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        containers,
        restartPolicy: spec.owner === 'Job' ? 'Never' : 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        serviceAccountName: 'default',
        nodeName: node,
        schedulerName: 'default-scheduler',
      },
      status: {
        phase: 'Pending',
        conditions: [condition('PodScheduled', 'True')],
        hostIP: `10.0.0.${node.slice(5)}`,
        qosClass: 'Burstable',
        containerStatuses: containers.map((c) => ({
          name: c.name,
          image: c.image,
          imageID: '',
          ready: false,
          started: false,
          restartCount: 0,
          state: { waiting: { reason: 'ContainerCreating' } },
        })),
      },
    };
    if (running) this.start(pod);
    return this.sim.create('pods', pod);
  }

  start(pod) {
    const t = now();
    pod.status.phase = 'Running';
    pod.status.podIP = `10.244.${1 + Math.floor(this.random() * 3)}.${2 + Math.floor(this.random() * 250)}`;
    pod.status.podIPs = [{ ip: pod.status.podIP }];
    pod.status.startTime = t;
    pod.status.conditions = [
      'PodReadyToStartContainers',
      'Initialized',
      'Ready',
      'ContainersReady',
      'PodScheduled',
    ].map((c) => condition(c, 'True'));
    for (const cs of pod.status.containerStatuses) {
      cs.ready = true;
      cs.started = true;
      cs.imageID = `docker.io/library/${cs.image}@sha256:${this.hex(64)}`;
      cs.containerID = `containerd://${this.hex(64)}`;
      cs.state = { running: { startedAt: t } };
    }
  }

  setReady(pod, ready) {
    const cs = this.pick(pod.status.containerStatuses);
    cs.ready = ready;
    const all = pod.status.containerStatuses.every((c) => c.ready) ? 'True' : 'False';
    for (const c of pod.status.conditions) {
      if ((c.type === 'Ready' || c.type === 'ContainersReady') && c.status !== all) {
        c.status = all;
        c.lastTransitionTime = now();
        if (all === 'False') c.reason = 'ContainersNotReady';
        else delete c.reason;
      }
    }
  }

  // Moves one pod a step along its life.
  evolve(pod) {
    const { namespace, name } = pod.metadata;
    if (pod.metadata.deletionTimestamp) return this.sim.remove('pods', namespace, name);
    if (pod.status.phase === 'Succeeded') return this.terminate(pod);
    return this.sim.patch('pods', namespace, name, (p) => {
      if (p.status.phase === 'Pending') return this.start(p);
      if (p.metadata.labels['job-name']) {
        p.status.phase = 'Succeeded';
        for (const cs of p.status.containerStatuses) {
          cs.ready = false;
          cs.state = {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              startedAt: p.status.startTime,
              finishedAt: now(),
            },
          };
        }
        for (const c of p.status.conditions)
          if (c.type === 'Ready' || c.type === 'ContainersReady') c.status = 'False';
        return undefined;
      }
      const r = this.random();
      if (r < 0.45) return this.setReady(p, !p.status.containerStatuses.every((c) => c.ready));
      if (r < 0.75) {
        const track = p.metadata.labels.track === 'canary' ? 'stable' : 'canary';
        p.metadata.labels.track = track;
        return undefined;
      }
      const cs = this.pick(p.status.containerStatuses);
      cs.restartCount += 1;
      cs.lastState = { terminated: { exitCode: 137, reason: 'OOMKilled', finishedAt: now() } };
      return undefined;
    });
  }

  // Graceful deletion as the API server does it: first a MODIFIED with deletionTimestamp.
  terminate(pod) {
    return this.sim.patch('pods', pod.metadata.namespace, pod.metadata.name, (p) => {
      p.metadata.deletionTimestamp = new Date(Date.now() + 30000).toISOString().replace(/\.\d{3}Z$/, 'Z');
      p.metadata.deletionGracePeriodSeconds = 30;
    });
  }

  ensureNamespaces() {
    for (const ns of this.namespaces) {
      if (!this.sim.get('namespaces', undefined, ns)) {
        this.sim.create('namespaces', {
          metadata: { name: ns, labels: { 'kubernetes.io/metadata.name': ns } },
          spec: { finalizers: ['kubernetes'] },
          status: { phase: 'Active' },
        });
      }
    }
  }

  /** One step: create, advance or delete a pod in a random namespace. */
  tick() {
    const namespace = this.pick(this.namespaces);
    const pods = this.podsIn(namespace);
    const r = this.random();
    if (pods.length < 3 || (r < 0.3 && pods.length < MAX_PODS_PER_NAMESPACE))
      return this.createPod(namespace, false);
    const pod = this.pick(pods);
    if (r < 0.8 || pod.metadata.deletionTimestamp) return this.evolve(pod);
    return this.terminate(pod);
  }
}

/**
 * Makes the simulator's cluster live: every `intervalMs` one pod is created, updated
 * (phase, labels, readiness, restarts) or deleted. Stops by itself when the simulator closes.
 * @param {object} sim a Simulator (anything with create/patch/remove/get/list and `on`)
 * @param {{intervalMs?: number, namespaces?: string[], initialPods?: number, seed?: number, labels?: object}} [options]
 *   initialPods: Running pods created per namespace right away (default 2); seed: replayable randomness;
 *   labels: on every pod besides its own
 * @returns {{stop: () => void, tick: () => object}}
 */
function startWorkload(sim, options = {}) {
  const { intervalMs = 300, initialPods = 2 } = options;
  const w = new Workload(sim, options);
  w.ensureNamespaces();
  for (const ns of w.namespaces) for (let i = 0; i < initialPods; i++) w.createPod(ns, true);
  const step = () => {
    try {
      w.tick();
    } catch {
      // A test may have removed or replaced a pod the workload was about to touch.
    }
  };
  // Unref'd: the server keeps a demo alive, and nothing here should keep a test alive.
  const timer = setInterval(step, intervalMs);
  timer.unref();
  const stop = () => {
    clearInterval(timer);
    if (typeof sim.off === 'function') sim.off('close', stop);
  };
  if (typeof sim.on === 'function') sim.on('close', stop);
  return { stop, tick: () => w.tick() };
}

module.exports = { startWorkload };
