'use strict';
// The test bed's proxies (sim/proxies.js) driven by plain sockets: what they record, the
// answers they give when a target is unreachable or a request malformed, and SOCKS5 address
// types the watcher's own tests do not reach.

const test = require('node:test');
const assert = require('node:assert/strict');
const net = require('node:net');
const { once } = require('node:events');
const { createHttpProxy, createSocks5Proxy } = require('../packages/kube-watch-native/sim/proxies');

/** A TCP server on 127.0.0.1 that answers every chunk with `echo:` and the chunk. */
async function echoServer(t) {
  const sockets = new Set();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (d) => socket.write(`echo:${d}`));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  // close() waits for open connections: they go first.
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise((resolve) => server.close(resolve));
  });
  return server.address().port;
}

/** A port nothing listens on (a listener opened and closed at once). */
async function closedPort() {
  const server = net.createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Connects to `port`, writes `bytes`, and resolves with the data read until `done(data)`. */
async function exchange(t, port, steps) {
  const socket = net.connect(port, '127.0.0.1');
  t.after(() => socket.destroy());
  await once(socket, 'connect');
  let data = Buffer.alloc(0);
  socket.on('data', (d) => (data = Buffer.concat([data, d])));
  const replies = [];
  for (const [bytes, done] of steps) {
    const start = data.length;
    socket.write(bytes);
    const deadline = Date.now() + 3000;
    while (!done(data.subarray(start))) {
      if (Date.now() > deadline || socket.destroyed) break;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    replies.push(data.subarray(start));
  }
  return replies;
}

const headEnds = (d) => d.includes('\r\n\r\n');

test('a CONNECT tunnel records its target, credentials and bytes; saw() finds relayed text', async (t) => {
  const target = await echoServer(t);
  const proxy = await createHttpProxy({ auth: { username: 'u', password: 'p-1' } });
  t.after(() => proxy.close());
  const auth = Buffer.from('u:p-1').toString('base64');
  const [head, echoed] = await exchange(t, proxy.port, [
    [`CONNECT kube.test:${target} HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`, headEnds],
    ['hello', (d) => d.length >= 'echo:hello'.length],
  ]);
  assert.match(String(head), /^HTTP\/1\.1 200 /);
  assert.equal(String(echoed), 'echo:hello');
  const [tunnel] = proxy.tunnels;
  assert.deepEqual(
    { ...tunnel, upstreamPort: typeof tunnel.upstreamPort },
    {
      protocol: 'connect',
      target: `kube.test:${target}`,
      credentials: 'matched',
      accepted: true,
      bytesUp: 5,
      bytesDown: 10,
      open: true,
      upstreamPort: 'number',
    },
  );
  assert.equal(tunnel.saw('hello'), true);
  assert.equal(tunnel.saw('p-1'), false);
});

test('CONNECT: 407 without credentials, 400 for a malformed target, 502 for a dead one', async (t) => {
  const dead = await closedPort();
  const proxy = await createHttpProxy({ auth: { username: 'u', password: 'p-1' } });
  t.after(() => proxy.close());
  const auth = Buffer.from('u:p-1').toString('base64');
  const ask = async (request) => String((await exchange(t, proxy.port, [[request, headEnds]]))[0]);
  assert.match(
    await ask('CONNECT kube.test:443 HTTP/1.1\r\n\r\n'),
    /^HTTP\/1\.1 407 [^]*Proxy-Authenticate: Basic/,
  );
  assert.match(
    await ask(`CONNECT no-port HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`),
    /^HTTP\/1\.1 400 /,
  );
  assert.match(
    await ask(`CONNECT x:${dead} HTTP/1.1\r\nProxy-Authorization: Basic ${auth}\r\n\r\n`),
    /^HTTP\/1\.1 502 /,
  );
  assert.deepEqual(
    proxy.tunnels.map((x) => [x.target, x.credentials, x.accepted]),
    [
      ['kube.test:443', 'none', false],
      ['no-port', 'matched', false],
      [`x:${dead}`, 'matched', false],
    ],
  );
});

test('SOCKS5: IPv4, IPv6 and name targets all reach 127.0.0.1; a dead port is refused', async (t) => {
  const target = await echoServer(t);
  const dead = await closedPort();
  const proxy = await createSocks5Proxy();
  t.after(() => proxy.close());
  const port = (p) => Buffer.from([p >> 8, p & 0xff]);
  const requests = [
    [Buffer.concat([Buffer.from([5, 1, 0, 1, 10, 1, 2, 3]), port(target)]), `10.1.2.3:${target}`],
    [
      Buffer.concat([Buffer.from([5, 1, 0, 4]), Buffer.alloc(15), Buffer.from([1]), port(target)]),
      `[::1]:${target}`,
    ],
    [
      Buffer.concat([Buffer.from([5, 1, 0, 3, 9]), Buffer.from('kube.test'), port(dead)]),
      `kube.test:${dead}`,
    ],
  ];
  const codes = [];
  for (const [request] of requests) {
    const [choice, reply] = await exchange(t, proxy.port, [
      [Buffer.from([5, 1, 0]), (d) => d.length >= 2],
      [request, (d) => d.length >= 10],
    ]);
    assert.deepEqual([...choice], [5, 0]);
    codes.push(reply[1]);
  }
  assert.deepEqual(codes, [0, 0, 5]);
  assert.deepEqual(
    proxy.tunnels.map((x) => [x.target, x.credentials, x.accepted]),
    requests.map(([, name], i) => [name, 'none', i < 2]),
  );
});

test('SOCKS5 with credentials required: no method without user/password, 0x01 for a wrong login', async (t) => {
  const proxy = await createSocks5Proxy({ auth: { username: 'u', password: 'p-1' } });
  t.after(() => proxy.close());
  const [noAuth] = await exchange(t, proxy.port, [[Buffer.from([5, 1, 0]), (d) => d.length >= 2]]);
  assert.deepEqual([...noAuth], [5, 0xff]);
  const [choice, verdict] = await exchange(t, proxy.port, [
    [Buffer.from([5, 2, 0, 2]), (d) => d.length >= 2],
    [Buffer.from([1, 1, ...Buffer.from('u'), 3, ...Buffer.from('bad')]), (d) => d.length >= 2],
  ]);
  assert.deepEqual([...choice], [5, 2]);
  assert.deepEqual([...verdict], [1, 1]);
  assert.deepEqual(
    proxy.tunnels.map((x) => x.credentials),
    ['none', 'mismatched'],
  );
});

test('unknown options and incomplete credentials are refused', () => {
  assert.throws(() => createHttpProxy({ port: 1 }), /unknown proxy option "port"/);
  assert.throws(() => createSocks5Proxy({ auth: { username: 'u' } }), /auth needs a non-empty username/);
});
