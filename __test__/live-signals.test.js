'use strict';
// The live tab's backend half end to end: a real backend (Kubernetes + Signals backend plugins
// and kube-watch-native/backstage), two users on /api/signals over WebSocket. The module's
// objects provider must hand the fetcher `{ userEntityRef, entityRef }` of each load; a
// publisher fed from that (as the fetcher will feed it) reaches the user who loaded the entity
// and not the other one.

const test = require('node:test');
const assert = require('node:assert/strict');
const WebSocket = require('ws');
const { mockCredentials } = require('@backstage/backend-test-utils');
const { NativeInformerFetcher } = require('../backstage/fetcher');
const { liveRequestContext, createLivePublisher } = require('../backstage/live');
const { startCluster, startLiveBackend, LIVE_SVC, OTHER_SVC } = require('./live-helpers');

const ALICE = 'user:default/mock'; // mock-user-token
const BOB = 'user:default/other';
const BOB_TOKEN = mockCredentials.user.token(BOB);
const CHANNEL = 'kubernetes:component:default/live-svc';

/** A signals WebSocket as `token`'s user, subscribed to `channel`, collecting what arrives. */
async function connect(port, token, channel) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/api/signals`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const received = [];
  ws.on('message', (data) => received.push(JSON.parse(String(data))));
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  ws.send(JSON.stringify({ action: 'subscribe', channel }));
  return { ws, received };
}

async function load(backend, token, entity) {
  const res = await fetch(`${backend.url}/api/kubernetes/services/${entity.metadata.name}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ entity }),
  });
  assert.equal(res.status, 200, await res.text());
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('a change reaches the user who loaded the entity, not another user', { timeout: 30_000 }, async (t) => {
  // What the fetcher sees of each load: the context the objects provider set.
  const seen = [];
  const original = NativeInformerFetcher.prototype.fetchObjectsForService;
  NativeInformerFetcher.prototype.fetchObjectsForService = function (params) {
    seen.push(liveRequestContext.getStore());
    return original.call(this, params);
  };
  t.after(() => {
    NativeInformerFetcher.prototype.fetchObjectsForService = original;
  });

  const sim = await startCluster();
  t.after(() => sim.close?.());
  const backend = await startLiveBackend(sim);
  t.after(() => backend.stop());

  const alice = await connect(backend.port, 'mock-user-token', CHANNEL);
  const bob = await connect(backend.port, BOB_TOKEN, CHANNEL); // same channel, never loaded it
  t.after(() => {
    alice.ws.terminate();
    bob.ws.terminate();
  });

  await load(backend, 'mock-user-token', LIVE_SVC);
  await load(backend, BOB_TOKEN, OTHER_SVC);
  assert.deepEqual(seen, [
    { userEntityRef: ALICE, entityRef: 'component:default/live-svc' },
    { userEntityRef: BOB, entityRef: 'component:default/other-svc' },
  ]);

  // The fetcher's part, done here until it does it: viewed() per load, changed() per change.
  const publisher = createLivePublisher({ signals: backend.signals, minIntervalMs: 250 });
  t.after(() => publisher.close());
  for (const { userEntityRef, entityRef } of seen)
    publisher.viewed(userEntityRef, entityRef, [`sim|pods|${entityRef}`]);
  await sleep(200); // the subscribe messages are in
  publisher.changed('sim|pods|component:default/live-svc', { clusters: ['sim'] });
  for (let i = 0; i < 100 && alice.received.length === 0; i++) await sleep(20);
  await sleep(300);
  assert.equal(alice.received.length, 1);
  assert.equal(alice.received[0].channel, CHANNEL);
  assert.deepEqual(alice.received[0].message.clusters, ['sim']);
  assert.deepEqual(Object.keys(alice.received[0].message).sort(), ['at', 'clusters'], 'no object data');
  assert.deepEqual(bob.received, [], 'Bob subscribed to the channel but never loaded the entity');
});
