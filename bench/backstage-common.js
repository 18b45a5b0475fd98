'use strict';
// What bench/backstage.js and bench/backstage-live.js share: the benchmark's entities, the CPU
// and memory of a process as /proc accounts them, and the report's arithmetic. (Their forked
// children with request/answer IPC are bench/children.js's.)

const fs = require('node:fs');

/** The benchmark's entity `name`: its pods and the rest carry `backstage.io/kubernetes-id: name`. */
const entityOf = (name) => ({
  apiVersion: 'backstage.io/v1alpha1',
  kind: 'Component',
  metadata: { name, namespace: 'default', annotations: { 'backstage.io/kubernetes-id': name } },
  spec: { type: 'service', owner: 'team', lifecycle: 'production' },
});

/** The catalog's `count` entities, svc-0 … */
const entities = (count) => Array.from({ length: count }, (_, i) => entityOf(`svc-${i}`));

/**
 * The Kubernetes plugin's config entries of the clusters `info` (bench/backstage-clusters.js)
 * describes. `viewers`: each viewer's own credential (`authProvider: oidc`, the token in the
 * request's `auth.oidc.okta`), with the clusters' token as `serviceAccountToken` too, which
 * Backstage ignores for oidc and kube-watch-native/backstage caches with (issue 35).
 */
const clusterConfigs = (info, { viewers = false } = {}) =>
  info.clusters.map(({ name, url }) => ({
    name,
    url,
    ...(viewers ? { authProvider: 'oidc', oidcTokenProvider: 'okta' } : { authProvider: 'serviceAccount' }),
    serviceAccountToken: info.token,
    caData: info.caData,
    skipMetricsLookup: true,
  }));

/** A figure for the report's tables. */
const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

const TICK = 100; // USER_HZ
/** CPU seconds of one thread (or, with tid = pid, of the main thread). */
function threadCpu(pid, tid = pid) {
  const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
/** CPU nanoseconds of one thread, from the scheduler's own account (no 10 ms ticks). */
function threadCpuNs(pid, tid = pid) {
  return Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
}
function processCpu(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICK;
}
function rssBytes(pid) {
  const kb = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1];
  return Number(kb) * 1024;
}

const quantile = (sorted, q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** The CPU seconds of every process descended from `pid` whose command is `comm` (a browser's). */
function treeCpu(pid, comm) {
  const parents = new Map();
  const cpu = new Map();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    parents.set(Number(entry), Number(fields[1]));
    if (name.startsWith(comm)) cpu.set(Number(entry), (Number(fields[11]) + Number(fields[12])) / TICK);
  }
  const descends = (p) => {
    for (let q = parents.get(p); q !== undefined && q > 1; q = parents.get(q)) if (q === pid) return true;
    return false;
  };
  let total = 0;
  for (const [p, seconds] of cpu) if (descends(p)) total += seconds;
  return total;
}

module.exports = {
  entityOf,
  entities,
  clusterConfigs,
  fmt,
  threadCpu,
  threadCpuNs,
  processCpu,
  rssBytes,
  treeCpu,
  quantile,
  median,
};
