'use strict';
// The watch clients under test, behind one interface so every scenario drives them alike:
//   client.load()                  require the client's modules (before the start RSS is taken)
//   client.events(target, signal)  (native clients) the watch's AsyncGenerator itself
//   client.open(target, onObject)  one watch; onObject(object) runs for every event and may return
//                                  STOP (end the watch) or a promise to wait for (a slow consumer)
//                                  → { done: Promise<{ events, error? }>, cancel() }
// `target` = { origin, jobId, proto: 'http'|'https', fields? }.
// - baseline:   ours, in the style of Backstage's KubernetesClientBasedWatcher: node-fetch v2,
//               body.pipe(split2()), String(line).trim(), JSON.parse, an async generator.
// - clientnode: @kubernetes/client-node's Watch (node-fetch, readline, JSON.parse, a callback per
//               event; no backpressure: a slow consumer needs an unbounded queue in front of it).
// - native:     NativeKubernetesWatcher (this package); `native-fields` adds options.fields.

const https = require('node:https');
const certs = require('../packages/kube-watch-native/sim/certs');
const { CA_DATA, kubeConfig, resourceParams } = require('./kube');

const STOP = Symbol('stop');
const TOKEN = 'x';
const RESOURCE = '/api/v1/namespaces/bench/pods';

const clusterUrl = ({ origin, jobId }) => `${origin}/job/${jobId}`;
/** The load server's job `target` as a cluster: its URL, token and (over https) CA. */
const cluster = (target) => ({
  name: 'bench',
  server: clusterUrl(target),
  url: clusterUrl(target),
  token: TOKEN,
  caData: target.proto === 'https' ? CA_DATA : undefined,
});

/** The native clients' logger (the watcher calls warn and error): what they say, kept for the report. */
const quietLogger = { warnings: [] };
quietLogger.warn = quietLogger.error = (m) => quietLogger.warnings.push(String(m));

/** Drives an async iterable of watch events through `onObject`. */
async function drive(iterable, onObject) {
  let events = 0;
  for await (const ev of iterable) {
    if (ev.type === 'ERROR') return { events, error: ev.error };
    events++;
    const r = onObject(ev.object);
    if (r !== undefined) {
      if (r === STOP) break;
      await r;
    }
  }
  return { events };
}

// ---- The Backstage-style baseline (ours, after Backstage's reference watcher) -------------------

let fetch;
let split2;
let agent;

function statusCodeToErrorType(code) {
  return (
    { 400: 'BAD_REQUEST', 401: 'UNAUTHORIZED_ERROR', 404: 'NOT_FOUND', 500: 'SYSTEM_ERROR' }[code] ??
    'UNKNOWN_ERROR'
  );
}

/** An ERROR event of the watch: an HTTP status, or (statusCode 0) a failure to connect or read. */
const failure = (statusCode, err) => ({
  type: 'ERROR',
  error: statusCode
    ? { errorType: statusCodeToErrorType(statusCode), statusCode, resourcePath: RESOURCE }
    : { errorType: 'SYSTEM_ERROR', statusCode, resourcePath: RESOURCE, detail: String(err) },
});

function transformWatchEvent(data) {
  if (data.type === 'ERROR') return failure(data.object?.code || 500);
  return { type: data.type, object: data.object, resourceVersion: data.object?.metadata?.resourceVersion };
}

async function* backstageStyleWatch(url, { signal, proto }) {
  if (signal?.aborted) return;
  let response;
  try {
    response = await fetch(url, {
      headers: { Authorization: `Bearer ${TOKEN}` },
      agent: proto === 'https' ? agent : undefined,
      signal,
    });
  } catch (err) {
    if (!signal?.aborted) yield failure(0, err);
    return;
  }
  if (!response.ok) {
    yield failure(response.status);
    return;
  }
  const stream = response.body.pipe(split2());
  try {
    for await (const line of stream) {
      if (signal?.aborted) return;
      const trimmed = String(line).trim();
      if (!trimmed) continue;
      let data;
      try {
        data = JSON.parse(trimmed);
      } catch {
        continue;
      }
      yield transformWatchEvent(data);
    }
  } catch (err) {
    if (!signal?.aborted) yield failure(0, err);
  } finally {
    stream.destroy();
    response.body.destroy();
  }
}

const baseline = {
  name: 'baseline',
  load() {
    fetch = require('node-fetch');
    split2 = require('split2');
    agent = new https.Agent({ ca: certs.ca });
  },
  open(target, onObject) {
    const controller = new AbortController();
    const url = `${clusterUrl(target)}${RESOURCE}?watch=true`;
    const gen = backstageStyleWatch(url, { signal: controller.signal, proto: target.proto });
    return { done: drive(gen, onObject), cancel: () => controller.abort() };
  },
};

// ---- @kubernetes/client-node's Watch ------------------------------------------------------------

let k8s;

const clientnode = {
  name: 'clientnode',
  load() {
    k8s = require('@kubernetes/client-node');
  },
  open(target, onObject, { queue = false } = {}) {
    const kc = kubeConfig(k8s, {
      ...cluster(target),
      // client-node refuses plain http unless verification is "skipped" (there is none).
      skipTLSVerify: target.proto === 'http',
    });
    const watch = new k8s.Watch(kc);
    let controller;
    let cancelled = false;
    let events = 0;
    let finish;
    const done = new Promise((resolve) => (finish = resolve));
    const cancel = () => {
      cancelled = true;
      controller?.abort();
    };

    // A slow consumer needs a queue in front of it: the callback cannot wait.
    const pending = [];
    let wake = null;
    let ended = false;
    let endResult;
    const pump = async () => {
      for (;;) {
        while (pending.length) {
          const r = onObject(pending.shift());
          if (r === STOP) {
            cancel();
            return finish({ events });
          }
          if (r !== undefined) await r;
        }
        if (ended) return finish(endResult);
        await new Promise((resolve) => (wake = resolve));
        wake = null;
      }
    };
    if (queue) pump();

    watch
      .watch(
        RESOURCE,
        {},
        (type, object) => {
          if (cancelled) return;
          events++;
          if (queue) {
            pending.push(object);
            wake?.();
            return;
          }
          if (onObject(object) === STOP) {
            cancel();
            finish({ events });
          }
        },
        (err) => {
          const result = err && !cancelled ? { events, error: { detail: String(err) } } : { events };
          if (queue) {
            ended = true;
            endResult = result;
            wake?.();
          } else finish(result);
        },
      )
      .then(
        (c) => {
          controller = c;
          if (cancelled) c.abort();
        },
        (err) => finish({ events, error: { detail: String(err) } }),
      );
    return { done, cancel, queued: () => pending.length };
  },
};

// ---- NativeKubernetesWatcher --------------------------------------------------------------------

let NativeKubernetesWatcher;

function nativeClient(name, withFields, pkg = 'kube-watch-native') {
  return {
    name,
    load() {
      ({ NativeKubernetesWatcher } = require(pkg));
    },
    open(target, onObject) {
      const controller = new AbortController();
      const gen = this.events(target, controller.signal);
      return { done: drive(gen, onObject), cancel: () => controller.abort() };
    },
    /** The watch's AsyncGenerator itself, for a scenario that loops over it directly. */
    events(target, signal) {
      const watcher = new NativeKubernetesWatcher({ logger: quietLogger });
      const options = { namespace: 'bench', signal };
      if (withFields) options.fields = target.fields;
      return watcher.watchResource(resourceParams(cluster(target), { plural: 'pods' }), options);
    },
  };
}

const clients = {
  baseline,
  clientnode,
  native: nativeClient('native', false),
  'native-fields': nativeClient('native-fields', true),
  // Another build of the package (bench/run.js --against).
  'native-against': nativeClient('native-against', false, process.env.KWN_BENCH_AGAINST),
};

/** The fields the `native-fields` row asks for. */
const FIELDS = ['metadata.name', 'metadata.namespace', 'status.phase'];

module.exports = { clients, STOP, FIELDS, quietLogger };
