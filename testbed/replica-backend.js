'use strict';
// One replica of a Backstage backend, as a child process of replica-helpers.js: the backend of
// startLiveBackend (Kubernetes + Signals backend plugins, kube-watch-native-backstage, the mock
// catalog, the WebSocket-capable root router), but on the real database service over a shared
// PostgreSQL and with the events backend, which carries events (signals among them) from one
// replica to the others through that database.
//
// Protocol, one JSON object a line:
//   argv[2]  { name, port, sim: { url, caData, token }, pg, live, entities, objectTypes,
//              logLevel, eventsBackend, endLongPolls, native, config }
//   stdout → { ready: true, port, instanceId, ms } once listening and subscribed to the bus
//   stdin  ← { id, publish: signal }  (through the Kubernetes plugin's signals service)
//   stdout → { id, published: true } or { id, published: false, error }
//   SIGTERM/SIGINT, or stdin closing (the parent is gone) → backend.stop(), exit,
//            { stopped: true, ms, code } (ms from the signal to the exit)

// stdout is the protocol; the mock logger writes info and debug with console.info/debug.
console.log = console.info = console.debug = console.error;

const readline = require('node:readline');
const { coreServices } = require('@backstage/backend-plugin-api');
const { createSpecializedBackend } = require('@backstage/backend-app-api');
const { mockServices } = require('@backstage/backend-test-utils');
const { catalogServiceMock } = require('@backstage/plugin-catalog-node/testUtils');
const { databaseServiceFactory } = require('@backstage/backend-defaults/database');
const { schedulerServiceFactory } = require('@backstage/backend-defaults/scheduler');
const {
  MOCK_SERVICES,
  LIVE_SVC,
  OTHER_SVC,
  kubernetesConfig,
  webSocketRouting,
  captureSignals,
} = require('./live-helpers');
const { initModule } = require('./backend-modules');

const params = JSON.parse(process.argv[2]);
const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const startedAt = Date.now();

// What the test modules hand out: the Kubernetes plugin's signals service (what the module
// publishes with), this instance's id, and the events plugin's own database client.
const captured = {};
const captureEventsDatabase = initModule(
  'events',
  'test-database',
  { database: coreServices.database },
  async ({ database }) => {
    captured.eventsDb = await database.getClient();
  },
);

// These are real here: the database (PostgreSQL, one database per plugin), and the scheduler
// on it, as in a deployment: its tasks (the events backend's event-bus-cleanup) are locked in
// the database and so run on one replica at a time, which the mock scheduler would not show.
const REAL = new Set([coreServices.database.id, coreServices.scheduler.id, coreServices.rootLogger.id]);

async function start() {
  const { port } = params;
  const config = {
    ...params.config,
    backend: {
      baseUrl: `http://127.0.0.1:${port}`,
      listen: { host: '127.0.0.1', port },
      database: { client: 'pg', connection: params.pg },
      ...params.config?.backend,
    },
    kubernetes: kubernetesConfig(params.sim, {
      objectTypes: params.objectTypes,
      live: params.live,
      clusters: params.clusters,
    }),
  };
  const routing = webSocketRouting({ port });
  const backend = createSpecializedBackend({
    defaultServiceFactories: [
      ...MOCK_SERVICES.filter((factory) => !REAL.has(factory.service.id)),
      mockServices.rootLogger.factory({ level: params.logLevel ?? 'none' }),
      databaseServiceFactory,
      schedulerServiceFactory,
      ...routing.features,
      mockServices.rootConfig.factory({ data: config }),
    ],
  });
  backend.add(import('@backstage/plugin-kubernetes-backend'));
  backend.add(import('@backstage/plugin-signals-backend'));
  // Left out (eventsBackend: false), signals stay on the replica that published them.
  if (params.eventsBackend !== false) {
    backend.add(import('@backstage/plugin-events-backend'));
    backend.add(captureEventsDatabase);
    // kube-watch-native-backstage's module that ends the bus's long polls at shutdown: without
    // it a replica takes ~56 s to exit on SIGTERM (backstage/events-polls.js says why).
    if (params.endLongPolls !== false)
      backend.add(require('kube-watch-native-backstage').eventsModuleEndPollsOnShutdown);
  }
  if (params.native !== false) backend.add(import('kube-watch-native-backstage'));
  backend.add(captureSignals(captured));
  backend.add(catalogServiceMock.factory({ entities: params.entities ?? [LIVE_SVC, OTHER_SVC] }));
  await backend.start();
  if (captured.eventsDb) await subscribed(`signals.${captured.instanceId}`);
  return { backend, routing };
}

/**
 * Waits until this replica's Signals backend is subscribed to the event bus. It subscribes as
 * it starts, but on its own, by HTTP to this replica's events backend, retried after a second
 * if that is not up yet; and events published before the row exists never reach it.
 */
async function subscribed(id, ms = 20_000) {
  const deadline = Date.now() + ms;
  while (!(await captured.eventsDb('event_bus_subscriptions').where({ id }).first())) {
    if (Date.now() > deadline) throw new Error(`no event bus subscription ${id} after ${ms} ms`);
    await sleep(50);
  }
}

/**
 * SIGTERM and SIGINT are Backstage's own: backend.start() adds handlers that stop every backend
 * and then exit, as in a deployment. They must stay the only ones to stop it: backend.stop()
 * first takes the backend off their list, so a handler of ours calling it would have theirs find
 * nothing to stop and exit at once, skipping every shutdown hook. Ours only note the time.
 */
let signalAt;
let started = false;
function onSignal() {
  signalAt ??= Date.now();
  if (!started) process.exit(0); // nothing started to stop, and theirs is not there yet
}

let stopping;
/** Stops the backend once (stdin closed: the parent is gone) and exits. */
function shutdown(backend) {
  signalAt ??= Date.now();
  stopping ??= Promise.resolve(backend?.stop()).then(
    () => process.exit(0),
    (error) => {
      console.error(`replica ${params.name}: stop failed`, error);
      process.exit(1);
    },
  );
}

async function main() {
  let backend;
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, onSignal);
  process.on('exit', (code) => {
    if (signalAt) send({ stopped: true, ms: Date.now() - signalAt, code });
  });
  // The parent's end of stdin closes when it exits, however it exits: no orphaned replica.
  const input = readline.createInterface({ input: process.stdin });
  input.on('close', () => shutdown(backend));
  input.on('line', async (line) => {
    const { id, publish } = JSON.parse(line);
    try {
      await captured.signals.publish(publish);
      send({ id, published: true });
    } catch (error) {
      send({ id, published: false, error: String(error) });
    }
  });
  ({ backend } = await start());
  started = true;
  send({ ready: true, port: params.port, instanceId: captured.instanceId, ms: Date.now() - startedAt });
}

main().catch((error) => {
  console.error(`replica ${params.name} failed to start:`, error);
  process.exit(1);
});
