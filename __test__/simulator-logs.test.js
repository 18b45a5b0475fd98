'use strict';
// Issue 50's groundwork: the simulator answers `pods/log` as a real API server proxying a kubelet
// does (sim/logs.js): the options (container, follow, previous, timestamps, tailLines,
// sinceSeconds, sinceTime, limitBytes) and the errors of each side, and a follow that ends when
// the container restarts or its pod is deleted.

const test = require('node:test');
const assert = require('node:assert/strict');
const { sim, podOfContainers: pod } = require('./sim-helpers');
const { until } = require('../testbed/wait');

const T0 = Date.parse('2026-12-06T08:00:00.000Z');

async function cluster(t) {
  const s = await sim(t, { token: 'tok' });
  s.create('pods', pod('web'));
  for (let i = 0; i < 5; i++)
    s.writeLog('default', 'web', 'main', `line ${i}`, { time: new Date(T0 + i * 1000) });
  return s;
}

/** GET the log with `query`: status and text (or the Status's message). */
async function logOf(s, query, name = 'web') {
  const res = await fetch(`${s.url}/api/v1/namespaces/default/pods/${name}/log?${query}`, {
    headers: { authorization: 'Bearer tok' },
  });
  const text = await res.text();
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    text: res.status === 200 ? text : JSON.parse(text).message,
  };
}

test('pods/log: the lines and each option as the kubelet applies it', async (t) => {
  const s = await cluster(t);
  const all = await logOf(s, 'container=main');
  assert.deepEqual(all, {
    status: 200,
    type: 'text/plain',
    text: 'line 0\nline 1\nline 2\nline 3\nline 4\n',
  });
  assert.equal((await logOf(s, 'container=main&tailLines=2')).text, 'line 3\nline 4\n');
  assert.equal((await logOf(s, 'container=main&tailLines=0')).text, '');
  assert.equal(
    (await logOf(s, `container=main&sinceTime=${new Date(T0 + 3000).toISOString()}`)).text,
    'line 3\nline 4\n',
  );
  assert.equal((await logOf(s, 'container=main&limitBytes=10')).text, 'line 0\nlin');
  assert.equal(
    (await logOf(s, 'container=main&timestamps=true&tailLines=1')).text,
    '2026-12-06T08:00:04Z line 4\n',
    "Go's RFC3339Nano: the fraction's trailing zeros dropped",
  );
  s.writeLog('default', 'web', 'main', 'now');
  assert.equal((await logOf(s, 'container=main&sinceSeconds=60')).text, 'now\n', 'only the last minute');
  assert.equal((await logOf(s, 'container=sidecar')).text, '', 'a container that wrote nothing');
});

test("pods/log: the API server's and the kubelet's errors", async (t) => {
  const s = await cluster(t);
  assert.deepEqual(await logOf(s, ''), {
    status: 400,
    type: 'application/json',
    text: 'a container name must be specified for pod web, choose one of: [main sidecar late]',
  });
  assert.equal((await logOf(s, 'container=nope')).text, 'container nope is not valid for pod web');
  assert.equal((await logOf(s, 'container=main', 'gone')).status, 404);
  assert.equal((await logOf(s, 'container=main', 'gone')).text, 'pods "gone" not found');
  assert.deepEqual(await logOf(s, 'container=late'), {
    status: 400,
    type: 'application/json',
    text: 'container "late" in pod "web" is waiting to start: ContainerCreating',
  });
  assert.equal(
    (await logOf(s, 'container=main&previous=true')).text,
    'previous terminated container "main" in pod "web" not found',
  );
  const invalid = await logOf(s, 'container=main&tailLines=-1');
  assert.equal(invalid.status, 422);
  assert.equal(
    invalid.text,
    'PodLogOptions "web" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0',
  );
  const both = await logOf(s, `container=main&sinceSeconds=5&sinceTime=${new Date(T0).toISOString()}`);
  assert.equal(both.status, 422);
  assert.match(both.text, /at most one of `sinceTime` or `sinceSeconds` may be specified/);
  assert.equal((await logOf(s, 'container=main&follow=maybe')).status, 400);
});

/** A follow of `query`: its text so far, and whether its body ended. */
async function follow(s, query) {
  const res = await fetch(`${s.url}/api/v1/namespaces/default/pods/web/log?${query}`, {
    headers: { authorization: 'Bearer tok' },
  });
  assert.equal(res.status, 200);
  const state = { text: '', ended: false };
  const decoder = new TextDecoder();
  state.done = (async () => {
    for await (const chunk of res.body) state.text += decoder.decode(chunk, { stream: true });
    state.ended = true;
  })();
  return state;
}

test('pods/log follow: what the container writes as it writes it, until it restarts; previous= then has it', async (t) => {
  const s = await cluster(t);
  const f = await follow(s, 'container=main&follow=true&tailLines=1');
  await until(() => f.text === 'line 4\n', { ms: 5000, what: 'the tail' });
  s.writeLog('default', 'web', 'main', 'five\nsix');
  await until(() => f.text === 'line 4\nfive\nsix\n', { ms: 5000, what: 'the lines written' });
  assert.equal(f.ended, false);
  s.restartContainer('default', 'web', 'main');
  await until(() => f.ended, { ms: 5000, what: 'the follow to end with the restart' });
  assert.equal((await logOf(s, 'container=main&previous=true&tailLines=2')).text, 'five\nsix\n');
  assert.equal((await logOf(s, 'container=main')).text, '', 'the new instance wrote nothing yet');
});

test('pods/log follow: the pod deleted ends the body; limitBytes ends it too', async (t) => {
  const s = await cluster(t);
  const limited = await follow(s, 'container=main&follow=true&tailLines=0&limitBytes=8');
  const f = await follow(s, 'container=main&follow=true&tailLines=0');
  s.writeLog('default', 'web', 'main', 'abcdefghij');
  await until(() => limited.ended, { ms: 5000, what: 'the limited follow to end at 8 bytes' });
  assert.equal(limited.text, 'abcdefgh');
  await until(() => f.text === 'abcdefghij\n', { ms: 5000, what: 'the line' });
  s.remove('pods', 'default', 'web');
  await until(() => f.ended, { ms: 5000, what: 'the follow to end with its pod' });
});

test("events by the involved object's fields, as the API server selects them (the stock drawer's query)", async (t) => {
  const s = await cluster(t);
  const event = (name, involved, extra = {}) => ({
    metadata: { name, namespace: 'default' },
    involvedObject: {
      kind: 'Pod',
      namespace: 'default',
      apiVersion: 'v1',
      fieldPath: 'spec.containers{main}',
      ...involved,
    },
    reason: 'BackOff',
    type: 'Warning',
    source: { component: 'kubelet' },
    ...extra,
  });
  s.create('events', event('web.1', { name: 'web', uid: 'u-web' }));
  s.create(
    'events',
    event('web.2', { name: 'web', uid: 'u-web' }, { source: { component: 'scheduler' }, type: 'Normal' }),
  );
  s.create('events', event('db.1', { name: 'db', uid: 'u-db' }));
  s.create('events', event('rs.1', { name: 'web', kind: 'ReplicaSet', apiVersion: 'apps/v1' }));
  const names = async (selector) => {
    const res = await fetch(
      `${s.url}/api/v1/namespaces/default/events?fieldSelector=${encodeURIComponent(selector)}`,
      { headers: { authorization: 'Bearer tok' } },
    );
    const body = await res.json();
    return res.status === 200
      ? body.items.map((e) => e.metadata.name).sort()
      : `${res.status} ${body.message}`;
  };
  assert.deepEqual(await names('involvedObject.name=web'), ['rs.1', 'web.1', 'web.2']);
  assert.deepEqual(await names('involvedObject.name=web,involvedObject.kind=Pod'), ['web.1', 'web.2']);
  assert.deepEqual(await names('involvedObject.uid=u-db'), ['db.1']);
  assert.deepEqual(await names('involvedObject.apiVersion=apps/v1'), ['rs.1']);
  assert.deepEqual(await names('involvedObject.fieldPath=spec.containers{main}'), [
    'db.1',
    'rs.1',
    'web.1',
    'web.2',
  ]);
  assert.deepEqual(await names('source=scheduler'), ['web.2']);
  assert.deepEqual(await names('type=Warning,involvedObject.name=web'), ['rs.1', 'web.1']);
  assert.equal(
    await names('involvedObject.color=red'),
    '400 field label not supported: involvedObject.color',
  );
});

test('pods/log: a 10 MiB line and output that is not UTF-8 come back byte for byte', async (t) => {
  const s = await cluster(t);
  const long = 'x'.repeat(10 << 20);
  s.writeLog('default', 'web', 'sidecar', long);
  const bytes = Buffer.from([0x61, 0xff, 0xfe, 0x62, 0x0a, 0xc3, 0x28]);
  s.writeLog('default', 'web', 'sidecar', bytes);
  const res = await fetch(`${s.url}/api/v1/namespaces/default/pods/web/log?container=sidecar`, {
    headers: { authorization: 'Bearer tok' },
  });
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200);
  assert.equal(body.length, (10 << 20) + 1 + 5 + 3, 'every byte, each line ended by a newline');
  assert.ok(body.subarray(0, 10 << 20).equals(Buffer.from(long)));
  assert.ok(
    body.subarray((10 << 20) + 1).equals(Buffer.from([0x61, 0xff, 0xfe, 0x62, 0x0a, 0xc3, 0x28, 0x0a])),
  );
});

test('pods/log is its own resource to RBAC: a grant of pods does not reach it; reviews of get pods/log answer the same', async (t) => {
  const s = await sim(t, {
    tokens: {
      'tok-pods': { user: 'pods-only', rules: [{ resources: ['pods'] }] },
      'tok-logs': {
        user: 'log-reader',
        rules: [{ resources: ['pods', 'pods/log'], namespaces: ['default'] }],
      },
    },
  });
  s.create('pods', pod('web'));
  s.writeLog('default', 'web', 'main', 'hello');
  const get = (token) =>
    fetch(`${s.url}/api/v1/namespaces/default/pods/web/log?container=main`, {
      headers: { authorization: `Bearer ${token}` },
    });
  const refused = await get('tok-pods');
  assert.equal(refused.status, 403);
  assert.equal(
    (await refused.json()).message,
    'pods "web" is forbidden: User "pods-only" cannot get resource "pods/log" in API group "" in the namespace "default"',
  );
  const allowed = await get('tok-logs');
  assert.equal(allowed.status, 200);
  assert.equal(await allowed.text(), 'hello\n');
  const review = async (token, namespace) => {
    const res = await fetch(`${s.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        kind: 'SelfSubjectAccessReview',
        apiVersion: 'authorization.k8s.io/v1',
        spec: {
          resourceAttributes: { verb: 'get', resource: 'pods', subresource: 'log', name: 'web', namespace },
        },
      }),
    });
    return (await res.json()).status.allowed;
  };
  assert.equal(await review('tok-pods', 'default'), false);
  assert.equal(await review('tok-logs', 'default'), true);
  assert.equal(await review('tok-logs', 'other'), false);
});

test("a crash-looping container: the kubelet's BackOff event counted at each crash, and its log is the ended instance's (a follow ends after it)", async (t) => {
  const s = await cluster(t);
  s.crashLoop('default', 'web', 'main');
  const status = s.get('pods', 'default', 'web').status.containerStatuses.find((c) => c.name === 'main');
  assert.equal(status.state.waiting.reason, 'CrashLoopBackOff');
  assert.equal(status.lastState.terminated.exitCode, 1);
  assert.equal(status.restartCount, 1);
  const lines = ['line 0', 'line 1', 'line 2', 'line 3', 'line 4'].map((l) => `${l}\n`).join('');
  assert.deepEqual(await logOf(s, 'container=main'), { status: 200, type: 'text/plain', text: lines });
  const followed = await logOf(s, 'container=main&follow=true');
  assert.equal(followed.text, lines, 'the follow ended after the ended instance');
  assert.equal((await logOf(s, 'container=main&previous=true')).text, lines);
  const events = async () => {
    const res = await fetch(
      `${s.url}/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Dweb`,
      {
        headers: { authorization: 'Bearer tok' },
      },
    );
    return (await res.json()).items;
  };
  const [first] = await events();
  assert.equal(first.reason, 'BackOff');
  assert.equal(first.type, 'Warning');
  assert.equal(first.count, 1);
  assert.equal(first.involvedObject.fieldPath, 'spec.containers{main}');
  assert.equal(first.involvedObject.uid, s.get('pods', 'default', 'web').metadata.uid);
  s.crashLoop('default', 'web', 'main');
  const again = await events();
  assert.equal(again.length, 1, 'the same event counted again');
  assert.equal(again[0].count, 2);
  assert.equal(s.get('pods', 'default', 'web').status.containerStatuses[0].restartCount, 2);
});
