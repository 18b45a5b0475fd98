'use strict';
// `npm run bench`'s server (bench/clusters/index.js load): Kubernetes-style watch streams of
// pre-generated Pods on 127.0.0.1, over HTTP/1.1 and over TLS (HTTP/2 for clients that offer it
// by ALPN, like the native client and a real API server; HTTP/1.1 for node-fetch).
//
// The parent registers a *job*, then points clients at
// `<origin>/job/<id>/api/v1/namespaces/bench/pods?watch=true` (the job id travels in the
// cluster URL's path prefix, which every client keeps). Each watch request of a job is served
// according to its mode:
//   stream   `count` events flat out (one `res.write()` per event, waiting for 'drain'), end
//   bytes    events flat out until `bytes` were written or the client went away, end
//   trickle  `count` events, one every `intervalMs`, each stamped with its send time, end
//   idle     one small event (so the client knows it is connected), then nothing until the
//            job is ended, the client goes away or `maxMs` passes
// Every response also ends after `maxMs`, so no load outlives its run.
//
// Ready: { httpPort, httpsPort }. Commands: { cmd: 'job', job } → { ok }; { cmd: 'stats', jobId }
// → { stats }; { cmd: 'end-job', jobId } → { ok }.

const http = require('node:http');
const http2 = require('node:http2');
const { performance } = require('node:perf_hooks');
const certs = require('../../packages/kube-watch-native/sim/certs');
const { lines, pods, lineOf, SENT_AT } = require('../pods');

/** Distinct pods per size the server cycles through. */
const POOL = 64;
const SAFETY_MS = 300_000;

const pools = new Map();
const poolOf = (size) => {
  if (!pools.has(size))
    pools.set(
      size,
      lines(size, POOL).map((l) => Buffer.from(l)),
    );
  return pools.get(size);
};

/** Per-job configuration and counters. */
const jobs = new Map();
/** Open responses per job, so 'end-job' can finish idle watches. */
const openResponses = new Map();

const counters = { connectionsOpen: 0, connectionsOpened: 0, h2SessionsOpen: 0 };

/** A job's counters, from zero. */
const newStats = () => ({
  ...{ requests: 0, h1Requests: 0, h2Requests: 0, eventsWritten: 0, bytesWritten: 0, responsesEnded: 0 },
  ...{ clientsGone: 0, connectionsOpenedSinceJob: 0, cpu0: process.cpuUsage() },
});

function trackConnections(server) {
  server.on('connection', (socket) => {
    counters.connectionsOpen++;
    counters.connectionsOpened++;
    for (const job of jobs.values()) job.stats.connectionsOpenedSinceJob++;
    socket.on('close', () => counters.connectionsOpen--);
  });
}

function handler(req, res) {
  const url = new URL(req.url, 'http://x');
  const match = /^\/job\/([^/]+)\/api\/v1\/namespaces\/bench\/pods$/.exec(url.pathname);
  const job = match && jobs.get(match[1]);
  if (!job || url.searchParams.get('watch') !== 'true') {
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 404, reason: 'NotFound' }));
    return;
  }
  job.stats.requests++;
  job.stats[req.httpVersionMajor === 2 ? 'h2Requests' : 'h1Requests']++;

  let gone = false;
  const open = openResponses.get(job.id);
  open.add(res);
  const finish = () => {
    open.delete(res);
    clearTimeout(safety);
  };
  res.on('close', () => {
    if (!res.writableEnded) {
      gone = true;
      job.stats.clientsGone++;
    }
    finish();
  });
  const safety = setTimeout(() => end(), job.maxMs ?? SAFETY_MS);
  const end = () => {
    if (gone || res.writableEnded) return;
    job.stats.responsesEnded++;
    res.end();
    finish();
  };

  res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-cache, private' });
  // The API server flushes the headers before the first event.
  if (typeof res.flushHeaders === 'function') res.flushHeaders();

  const write = (buf) => {
    job.stats.eventsWritten++;
    job.stats.bytesWritten += buf.length;
    return res.write(buf);
  };
  const drained = () =>
    new Promise((resolve) => {
      const done = () => (res.off('drain', done), res.off('close', done), resolve());
      res.on('drain', done).on('close', done);
    });

  if (job.mode === 'stream' || job.mode === 'bytes') {
    const pool = poolOf(job.size);
    const limitEvents = job.mode === 'stream' ? job.count : Infinity;
    const limitBytes = job.mode === 'bytes' ? job.bytes : Infinity;
    (async () => {
      let i = 0;
      let bytes = 0;
      while (!gone && !res.writableEnded && i < limitEvents && bytes < limitBytes) {
        const buf = pool[i % pool.length];
        i++;
        bytes += buf.length;
        if (!write(buf)) await drained();
      }
      end();
    })().catch(end);
  } else if (job.mode === 'trickle') {
    const template = pods(job.size ?? 'small', POOL);
    let i = 0;
    const tick = () => {
      if (gone || res.writableEnded) return;
      if (i >= job.count) return end();
      const object = template[i % template.length];
      i++;
      object.metadata.annotations[SENT_AT] = String(performance.timeOrigin + performance.now());
      write(Buffer.from(lineOf(object)));
      timer = setTimeout(tick, job.intervalMs);
    };
    let timer = setTimeout(tick, job.intervalMs);
    res.on('close', () => clearTimeout(timer));
  } else if (job.mode === 'idle') {
    write(poolOf('small')[0]);
  } else {
    end();
  }
}

/** Starts both servers; their ports go with the ready message. */
async function start() {
  const httpServer = http.createServer(handler);
  httpServer.keepAliveTimeout = 60_000;
  const httpsServer = http2.createSecureServer(
    {
      cert: certs.server,
      key: certs.serverKey,
      allowHTTP1: true,
      // What kube-apiserver announces; the native client must open another connection past it.
      // kube-apiserver's default since the 2023 rapid-reset fix (DESIGN §4).
      settings: { maxConcurrentStreams: 100 },
    },
    handler,
  );
  trackConnections(httpServer);
  trackConnections(httpsServer);
  httpsServer.on('session', (session) => {
    counters.h2SessionsOpen++;
    session.on('close', () => counters.h2SessionsOpen--);
  });
  const listen = (server) => new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  await listen(httpServer);
  await listen(httpsServer);
  return {
    ready: { httpPort: httpServer.address().port, httpsPort: httpsServer.address().port },
    commands: { job, stats, 'end-job': endJob },
    stop() {
      for (const set of openResponses.values()) for (const res of set) res.destroy?.();
      httpServer.closeAllConnections?.();
      httpServer.close();
      httpsServer.close();
    },
  };
}

function job(msg) {
  const job = { ...msg.job, stats: newStats() };
  jobs.set(job.id, job);
  openResponses.set(job.id, new Set());
  if (job.size) poolOf(job.size);
  return { ok: true };
}

function stats(msg) {
  const job = jobs.get(msg.jobId);
  const stats = job ? { ...job.stats } : {};
  if (job) {
    const cpu = process.cpuUsage(job.stats.cpu0);
    stats.serverCpuMs = (cpu.user + cpu.system) / 1000;
    delete stats.cpu0;
  }
  return { stats: { ...stats, ...counters } };
}

function endJob(msg) {
  for (const res of openResponses.get(msg.jobId) ?? []) res.end();
  openResponses.delete(msg.jobId);
  jobs.delete(msg.jobId);
  return { ok: true };
}

module.exports = { start };
