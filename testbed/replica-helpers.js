'use strict';
// Several Backstage backend replicas on one PostgreSQL, each its own process running
// replica-backend.js, behind a round-robin balancer, as a deployment scaled out runs them. A
// replica can be stopped (and with which signal) and started again on the same port.

const http = require('node:http');
const path = require('node:path');
const readline = require('node:readline');
const { spawn } = require('node:child_process');
const WebSocket = require('ws');
const { TOKEN, tunnel } = require('./live-helpers');
const { startPostgres, orSkipWithoutPostgres, freePort } = require('./pg-helpers');
const { certs } = require('../packages/kube-watch-native/sim');

const SCRIPT = path.join(__dirname, 'replica-backend.js');
const NAMES = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ';

// Every replica still running when this process exits is killed (their stdin closing stops them
// too, but only once this process is gone).
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * One replica process, not yet started. `start()` resolves once it is listening and subscribed
 * to the event bus (or rejects, with its stderr, after `readyMs`); `stop(signal)` resolves to
 * `{ ms, code, signal, stopped }` once it has exited, SIGKILLed after `stopMs`; `publish(signal)`
 * publishes through its signals service.
 */
function replica(index, params, { readyMs, stopMs }) {
  const name = NAMES[index];
  let child;
  let exited;
  let stderr = '';
  let nextId = 0;
  const pending = new Map();
  const self = {
    name,
    index,
    port: params.port,
    url: `http://127.0.0.1:${params.port}`,
    running: false,
    /** The process's pid while it runs (the benchmark reads its CPU and memory). */
    get pid() {
      return child?.pid;
    },
    /** Messages the child printed besides the replies: { ready }, { stopped }. */
    messages: [],
    /** Before its first start: listen on `port` instead (the one chosen was taken meanwhile). */
    movePort(port) {
      if (child || self.messages.length) throw new Error(`replica ${name} has started: its port stays`);
      params.port = port;
      self.port = port;
      self.url = `http://127.0.0.1:${port}`;
    },
    async start() {
      if (child) throw new Error(`replica ${name} is already running`);
      stderr = '';
      const spawnedAt = Date.now();
      child = spawn(process.execPath, [SCRIPT, JSON.stringify({ ...params, name })], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      running.add(child);
      child.stderr.on('data', (chunk) => {
        stderr = (stderr + chunk).slice(-8000);
        if (params.logLevel && params.logLevel !== 'none') process.stderr.write(`[${name}] ${chunk}`);
      });
      const lines = readline.createInterface({ input: child.stdout });
      const ready = new Promise((resolve, reject) => {
        lines.on('line', (line) => {
          let message;
          try {
            message = JSON.parse(line);
          } catch {
            return; // not ours: something printed to stdout past the logger
          }
          if (message.id !== undefined && pending.has(message.id)) {
            pending.get(message.id)(message);
            pending.delete(message.id);
            return;
          }
          self.messages.push(message);
          if (message.ready) resolve(message);
        });
        const proc = child;
        exited = new Promise((done) =>
          proc.once('close', (code, signal) => {
            running.delete(proc);
            self.running = false;
            if (child === proc) child = undefined;
            for (const reply of pending.values()) reply({ published: false, error: 'replica exited' });
            pending.clear();
            reject(new Error(`replica ${name} exited (${code ?? signal}) before it was ready:\n${stderr}`));
            done({ code, signal });
          }),
        );
        setTimeout(
          () => reject(new Error(`replica ${name} not ready after ${readyMs} ms:\n${stderr}`)),
          readyMs,
        ).unref();
      });
      try {
        const message = await ready;
        self.running = true;
        self.instanceId = message.instanceId;
        self.startMs = Date.now() - spawnedAt; // from spawn: Node, the modules, the backend, the bus
        return message;
      } catch (error) {
        await self.stop('SIGKILL');
        throw error;
      }
    },
    async stop(signal = 'SIGTERM') {
      if (!child) return { ms: 0 };
      const proc = child;
      self.running = false; // the balancer stops sending it anything now
      const at = Date.now();
      proc.kill(signal);
      const timer = setTimeout(() => proc.kill('SIGKILL'), stopMs);
      const { code, signal: by } = await exited;
      clearTimeout(timer);
      const stopped = self.messages.findLast((m) => m.stopped);
      return { ms: Date.now() - at, code, signal: by, stopped: stopped?.ms };
    },
    /** Publishes `signal` (`{ recipients, channel, message }`) through this replica's signals service. */
    publish(signal, ms = 10_000) {
      if (!child) return Promise.reject(new Error(`replica ${name} is not running`));
      const id = nextId++;
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          reject(new Error(`replica ${name}: no answer to publish after ${ms} ms`));
        }, ms);
        pending.set(id, (answer) => {
          clearTimeout(timer);
          if (answer.published) resolve(answer);
          else reject(new Error(`replica ${name}: publish failed: ${answer.error}`));
        });
        child.stdin.write(`${JSON.stringify({ id, publish: signal })}\n`);
      });
    },
  };
  return self;
}

/**
 * The balancer: each HTTP request to the next running replica, round-robin; a WebSocket upgrade
 * to replica N for `?replica=N` (index or name), else round-robin too, tunnelled as bytes (as
 * startOrigin in live-helpers.js does).
 */
async function startBalancer(replicas) {
  let next = 0;
  const pick = (url) => {
    const wanted = new URL(url, 'http://x').searchParams.get('replica');
    if (wanted !== null) return replicas.find((r) => String(r.index) === wanted || r.name === wanted);
    const live = replicas.filter((r) => r.running);
    return live.length ? live[next++ % live.length] : undefined;
  };
  const server = http.createServer((req, res) => {
    const target = pick(req.url);
    if (!target) return res.writeHead(503).end('no replica running');
    const upstream = http.request(
      { host: '127.0.0.1', port: target.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode, { ...answer.headers, 'x-replica': target.name });
        answer.pipe(res);
      },
    );
    upstream.on('error', () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    req.pipe(upstream);
  });
  const tunnels = new Set();
  server.on('upgrade', (req, socket, head) => {
    const target = pick(req.url);
    if (!target) return socket.destroy();
    tunnel(req, socket, head, target.port, { closeTogether: true });
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () => {
      for (const socket of tunnels) socket.destroy();
      server.closeAllConnections();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A throwaway PostgreSQL for test `t`, stopped after it; undefined with `t` skipped without
 * PostgreSQL (orSkipWithoutPostgres).
 */
async function postgresFor(t) {
  const postgres = await orSkipWithoutPostgres(t, startPostgres);
  if (postgres) t.after(() => postgres.stop());
  return postgres;
}

/**
 * Starts replica `r` for the first time. A free port can be taken by another process between
 * the check and the replica's listen (the suite runs two files at once): then on another, up to
 * three tries, as startPostgres does.
 */
async function firstStart(r) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await r.start();
    } catch (error) {
      if (attempt >= 3 || !/EADDRINUSE/.test(error.message)) throw error;
      r.movePort(await freePort());
    }
  }
}

/**
 * `count` replicas reading the simulated cluster `sim`, on the PostgreSQL `options.pg` (a
 * connection; else one started here and stopped with them), behind a balancer. Options: `live`
 * (kubernetes.nativeInformers.live), `entities`, `objectTypes`, `clusters` (config entries, instead of `sim`), `logLevel` (their logs on this
 * process's stderr), `eventsBackend: false`, `config` (merged into theirs), `readyMs`, `stopMs`.
 * The first replica starts alone: it creates the plugins' databases and runs their migrations,
 * which replicas racing each other can fail at.
 */
async function startReplicas(count, sim, options = {}) {
  const { pg: connection, readyMs = 60_000, stopMs = 20_000, ...rest } = options;
  const postgres = connection ? undefined : await startPostgres();
  const replicas = [];
  let balancer;
  const stopAll = async () => {
    await balancer?.close();
    await Promise.all(replicas.map((r) => r.stop()));
    await postgres?.stop();
  };
  try {
    for (let i = 0; i < count; i++) {
      const params = {
        ...rest,
        port: await freePort(),
        sim: { url: sim.url, token: TOKEN, caData: Buffer.from(certs.ca).toString('base64') },
        pg: connection ?? postgres.connection,
      };
      replicas.push(replica(i, params, { readyMs, stopMs }));
    }
    await firstStart(replicas[0]);
    await Promise.all(replicas.slice(1).map(firstStart));
    balancer = await startBalancer(replicas);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return { replicas, balancer, postgres, stop: stopAll };
}

/** startReplicas(count, sim, options), stopped when test `t` ends; undefined with `t` skipped without PostgreSQL. */
async function replicasFor(t, count, sim, options) {
  const cluster = await orSkipWithoutPostgres(t, () => startReplicas(count, sim, options));
  if (cluster) t.after(() => cluster.stop());
  return cluster;
}

/**
 * A signals WebSocket through the balancer to replica `index`, as `token`'s user, subscribed to
 * `channel`: `{ ws, received }`, each message received as `{ at, ...message }`.
 */
async function connectSignals(balancer, index, token, channel) {
  const ws = new WebSocket(`ws://127.0.0.1:${balancer.port}/api/signals?replica=${index}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const received = [];
  ws.on('message', (data) => received.push({ at: Date.now(), ...JSON.parse(String(data)) }));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ action: 'subscribe', channel }));
  return { ws, received };
}

/**
 * Resolves once `client`'s subscribe is in on `replica`, the one its WebSocket is on: a signal
 * `message` published there to `user` reaches it. The subscribe and a publish travel apart
 * (WebSocket, stdin), and a signal before the subscribe is dropped: published until one lands,
 * for at most 10 s.
 */
async function subscribed(client, replica, user, channel, message = {}) {
  const deadline = Date.now() + 10_000;
  while (!client.received.length) {
    if (Date.now() > deadline) throw new Error(`${user}'s subscription to ${channel} not in within 10 s`);
    await replica.publish({ recipients: { type: 'user', entityRef: user }, channel, message });
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

module.exports = { startReplicas, replicasFor, startBalancer, postgresFor, connectSignals, subscribed };
