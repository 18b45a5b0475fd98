'use strict';
// Proxies for the test bed, on 127.0.0.1: an HTTP proxy (CONNECT tunnels, and plain
// absolute-form requests forwarded for http:// clusters) and a SOCKS5 proxy (RFC 1928, with
// RFC 1929 user name and password). Both can require credentials, and both record every
// tunnel: the target as the client asked for it, whether credentials came and matched (never
// the credentials themselves), and the bytes relayed each way.
//
// Every target is dialled on 127.0.0.1 whatever name it carries, so tests can use names no
// resolver knows (`kube.test`) and nothing leaves the machine.

const { EventEmitter } = require('node:events');
const http = require('node:http');
const net = require('node:net');

/** The most of each direction's bytes a tunnel keeps for `saw()`; the counts go on past it. */
const CAPTURE_LIMIT = 4 * 1024 * 1024;

const noop = () => {};

/**
 * One tunnel (or forwarded request) as the proxy saw it. Enumerable fields are safe to print:
 * `protocol` ('connect', 'forward' or 'socks5'), `target` ('host:port' as asked, IPv6 in
 * brackets), `credentials` ('none', 'matched' or 'mismatched'), `accepted`, `bytesUp`
 * (client → server), `bytesDown`, `open`; `upstreamPort`, the local port of the proxy's own
 * connection to the target (which the server sees as the client's port); `path` for a
 * forwarded request.
 */
class Tunnel {
  constructor(protocol, target, credentials) {
    this.protocol = protocol;
    this.target = target;
    this.credentials = credentials;
    this.accepted = false;
    this.bytesUp = 0;
    this.bytesDown = 0;
    this.open = false;
    this.upstreamPort = null;
    // Not enumerable: the relayed bytes are for saw(), not for a failing assertion's diff.
    Object.defineProperty(this, 'captured', { value: { up: [], down: [], upSize: 0, downSize: 0 } });
  }

  record(direction, chunk) {
    const c = this.captured;
    if (direction === 'up') this.bytesUp += chunk.length;
    else this.bytesDown += chunk.length;
    const size = direction === 'up' ? c.upSize : c.downSize;
    if (size >= CAPTURE_LIMIT) return;
    const kept = chunk.subarray(0, CAPTURE_LIMIT - size);
    c[direction].push(Buffer.from(kept));
    if (direction === 'up') c.upSize += kept.length;
    else c.downSize += kept.length;
  }

  /** Whether `needle` (a string or Buffer) appears in the bytes relayed (kept) either way. */
  saw(needle) {
    const n = Buffer.isBuffer(needle) ? needle : Buffer.from(String(needle));
    return ['up', 'down'].some((d) => Buffer.concat(this.captured[d]).includes(n));
  }
}

/** Base: listening, tracking sockets, closing, the tunnel log. */
class RecordingProxy extends EventEmitter {
  /**
   * @param {{ auth?: { username: string, password: string } }} [options] credentials the
   *   proxy requires; without them it takes anyone (and records credentials sent as 'mismatched').
   */
  constructor(options = {}) {
    super();
    for (const key of Object.keys(options))
      if (key !== 'auth') throw new TypeError(`unknown proxy option "${key}"`);
    if (options.auth !== undefined) {
      const { username, password } = options.auth;
      if (typeof username !== 'string' || typeof password !== 'string' || !username)
        throw new TypeError('auth needs a non-empty username and a password (strings)');
    }
    this.auth = options.auth;
    /** @type {Tunnel[]} every tunnel asked for, refused ones included, in order. */
    this.tunnels = [];
    this.sockets = new Set();
  }

  /** 'none', 'matched' or 'mismatched' for the credentials a client sent. */
  judge(username, password) {
    if (username === undefined) return 'none';
    return this.auth && username === this.auth.username && password === this.auth.password
      ? 'matched'
      : 'mismatched';
  }

  /** Whether a client with this verdict may pass. */
  admits(credentials) {
    return !this.auth || credentials === 'matched';
  }

  track(socket) {
    this.sockets.add(socket);
    socket.on('error', noop);
    socket.once('close', () => this.sockets.delete(socket));
  }

  newTunnel(protocol, target, credentials) {
    const tunnel = new Tunnel(protocol, target, credentials);
    this.tunnels.push(tunnel);
    this.emit('tunnel', tunnel);
    return tunnel;
  }

  async listenOn(server, scheme) {
    this.server = server;
    server.on('connection', (socket) => this.track(socket));
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.port = server.address().port;
    this.scheme = scheme;
    /** The proxy's URL without credentials. */
    this.url = `${scheme}://127.0.0.1:${this.port}`;
    return this;
  }

  /** The proxy's URL carrying `username:password` (percent-encoded). */
  urlWith(username, password) {
    return `${this.scheme}://${encodeURIComponent(username)}:${encodeURIComponent(password)}@127.0.0.1:${this.port}`;
  }

  /** Tunnels whose target is `target` ('host:port'). */
  tunnelsTo(target) {
    return this.tunnels.filter((t) => t.target === target);
  }

  async close() {
    for (const socket of this.sockets) socket.destroy();
    if (this.server) await new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Pipes `client` and `upstream` both ways through `tunnel`'s counters. */
function splice(tunnel, client, upstream) {
  tunnel.open = true;
  tunnel.upstreamPort = upstream.localPort;
  client.on('data', (chunk) => tunnel.record('up', chunk));
  upstream.on('data', (chunk) => tunnel.record('down', chunk));
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => {
    tunnel.open = false;
    client.destroy();
    upstream.destroy();
  };
  client.once('close', end);
  upstream.once('close', end);
}

/** host:port → { host, port } (IPv6 in brackets), or null. */
function splitAuthority(authority) {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority || '');
  if (!m) return null;
  const port = Number(m[2]);
  return port > 0 && port < 65536 ? { host: m[1], port } : null;
}

/** The HTTP proxy: CONNECT tunnels and forwarded absolute-form requests, basic auth. */
class HttpProxy extends RecordingProxy {
  listen() {
    const server = http.createServer();
    server.on('connect', (req, socket, head) => this.onConnect(req, socket, head));
    server.on('request', (req, res) => this.onForward(req, res));
    server.on('clientError', (_err, socket) => socket.destroy());
    return this.listenOn(server, 'http');
  }

  credentialsOf(req) {
    const m = /^Basic\s+(\S+)$/i.exec(req.headers['proxy-authorization'] || '');
    if (!m) return this.judge(undefined);
    const text = Buffer.from(m[1], 'base64').toString('utf8');
    const colon = text.indexOf(':');
    return colon < 0 ? this.judge(text, '') : this.judge(text.slice(0, colon), text.slice(colon + 1));
  }

  onConnect(req, socket, head) {
    const authority = splitAuthority(req.url);
    const tunnel = this.newTunnel('connect', req.url, this.credentialsOf(req));
    if (!authority) {
      socket.end('HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (!this.admits(tunnel.credentials)) {
      socket.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\n' +
          'Proxy-Authenticate: Basic realm="sim-proxy"\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    const upstream = net.connect(authority.port, '127.0.0.1');
    this.track(upstream);
    upstream.once('error', () => {
      if (!tunnel.accepted) socket.end('HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n');
    });
    upstream.once('connect', () => {
      tunnel.accepted = true;
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head && head.length) {
        tunnel.record('up', head);
        upstream.write(head);
      }
      splice(tunnel, socket, upstream);
    });
  }

  onForward(req, res) {
    let url;
    try {
      url = new URL(req.url);
    } catch {
      url = null;
    }
    if (!url || url.protocol !== 'http:') {
      res.writeHead(400).end('absolute-form http:// requests and CONNECT only\n');
      return;
    }
    const port = Number(url.port || 80);
    const tunnel = this.newTunnel('forward', `${url.hostname}:${port}`, this.credentialsOf(req));
    tunnel.path = url.pathname;
    if (!this.admits(tunnel.credentials)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic realm="sim-proxy"', 'content-length': 0 }).end();
      return;
    }
    const headers = { ...req.headers };
    delete headers['proxy-authorization'];
    delete headers['proxy-connection'];
    // What a forwarding proxy necessarily sees: the request line and headers in the clear.
    tunnel.record(
      'up',
      Buffer.from(
        `${req.method} ${url.pathname}${url.search} HTTP/1.1\r\n` +
          Object.entries(headers)
            .map(([k, v]) => `${k}: ${v}\r\n`)
            .join('') +
          '\r\n',
      ),
    );
    const upstream = http.request(
      { host: '127.0.0.1', port, method: req.method, path: url.pathname + url.search, headers },
      (answer) => {
        tunnel.accepted = true;
        tunnel.open = true;
        res.writeHead(answer.statusCode, answer.headers);
        answer.on('data', (chunk) => tunnel.record('down', chunk));
        answer.pipe(res);
        answer.once('close', () => {
          tunnel.open = false;
        });
      },
    );
    upstream.on('socket', (socket) => {
      this.track(socket);
      const note = () => {
        tunnel.upstreamPort = socket.localPort;
      };
      if (socket.localPort) note();
      else socket.once('connect', note);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    res.once('close', () => upstream.destroy());
    req.on('data', (chunk) => tunnel.record('up', chunk));
    req.pipe(upstream);
  }
}

/** Reads exact byte counts off a socket (a SOCKS handshake is fixed-layout binary). */
class Reader {
  constructor(socket) {
    this.socket = socket;
    this.buffer = Buffer.alloc(0);
    this.waiting = null;
    this.ended = false;
    this.onData = (chunk) => {
      this.buffer = Buffer.concat([this.buffer, chunk]);
      this.wake();
    };
    this.onEnd = () => {
      this.ended = true;
      this.wake();
    };
    socket.on('data', this.onData);
    socket.once('end', this.onEnd);
    socket.once('close', this.onEnd);
  }

  wake() {
    const w = this.waiting;
    this.waiting = null;
    if (w) w();
  }

  async take(n) {
    while (this.buffer.length < n) {
      if (this.ended) throw new Error('connection closed during the SOCKS5 handshake');
      await new Promise((resolve) => {
        this.waiting = resolve;
      });
    }
    const out = this.buffer.subarray(0, n);
    this.buffer = this.buffer.subarray(n);
    return out;
  }

  /** Stops reading; returns what arrived past the handshake. */
  release() {
    this.socket.off('data', this.onData);
    this.socket.off('end', this.onEnd);
    this.socket.off('close', this.onEnd);
    return this.buffer;
  }
}

const SOCKS = {
  NO_AUTH: 0x00,
  USER_PASS: 0x02,
  NO_METHOD: 0xff,
  SUCCEEDED: 0x00,
  REFUSED: 0x05,
  COMMAND_NOT_SUPPORTED: 0x07,
  ADDRESS_NOT_SUPPORTED: 0x08,
};

/** The SOCKS5 proxy: CONNECT only, optional user name and password (RFC 1929). */
class Socks5Proxy extends RecordingProxy {
  listen() {
    const server = net.createServer((socket) => {
      this.handshake(socket).catch(() => socket.destroy());
    });
    return this.listenOn(server, 'socks5');
  }

  async handshake(socket) {
    const reader = new Reader(socket);
    const [version, count] = await reader.take(2);
    if (version !== 5) throw new Error('not SOCKS5');
    const methods = [...(await reader.take(count))];
    let credentials = this.judge(undefined);
    if (this.auth) {
      if (!methods.includes(SOCKS.USER_PASS)) {
        this.newTunnel('socks5', null, 'none');
        socket.end(Buffer.from([5, SOCKS.NO_METHOD]));
        return;
      }
      socket.write(Buffer.from([5, SOCKS.USER_PASS]));
      const [subVersion, userLength] = await reader.take(2);
      if (subVersion !== 1) throw new Error('bad RFC 1929 version');
      const username = (await reader.take(userLength)).toString('utf8');
      const [passwordLength] = await reader.take(1);
      const password = (await reader.take(passwordLength)).toString('utf8');
      credentials = this.judge(username, password);
      if (!this.admits(credentials)) {
        this.newTunnel('socks5', null, credentials);
        socket.end(Buffer.from([1, 1]));
        return;
      }
      socket.write(Buffer.from([1, 0]));
    } else if (methods.includes(SOCKS.NO_AUTH)) {
      socket.write(Buffer.from([5, SOCKS.NO_AUTH]));
    } else {
      socket.end(Buffer.from([5, SOCKS.NO_METHOD]));
      return;
    }

    const [v, command, , addressType] = await reader.take(4);
    if (v !== 5) throw new Error('bad request version');
    let host;
    if (addressType === 0x01) host = [...(await reader.take(4))].join('.');
    else if (addressType === 0x03) {
      const [length] = await reader.take(1);
      host = (await reader.take(length)).toString('utf8');
    } else if (addressType === 0x04) {
      const raw = await reader.take(16);
      const groups = [];
      for (let i = 0; i < 16; i += 2) groups.push(raw.readUInt16BE(i).toString(16));
      // The URL parser writes it the canonical way (`[::1]`).
      host = new URL(`http://[${groups.join(':')}]/`).hostname;
    } else {
      socket.end(Buffer.from([5, SOCKS.ADDRESS_NOT_SUPPORTED, 0, 1, 0, 0, 0, 0, 0, 0]));
      return;
    }
    const port = (await reader.take(2)).readUInt16BE(0);
    const tunnel = this.newTunnel('socks5', `${host}:${port}`, credentials);
    if (command !== 0x01) {
      socket.end(Buffer.from([5, SOCKS.COMMAND_NOT_SUPPORTED, 0, 1, 0, 0, 0, 0, 0, 0]));
      return;
    }
    const upstream = net.connect(port, '127.0.0.1');
    this.track(upstream);
    upstream.once('error', () => {
      if (!tunnel.accepted) socket.end(Buffer.from([5, SOCKS.REFUSED, 0, 1, 0, 0, 0, 0, 0, 0]));
    });
    upstream.once('connect', () => {
      tunnel.accepted = true;
      const reply = Buffer.from([5, SOCKS.SUCCEEDED, 0, 1, 127, 0, 0, 1, 0, 0]);
      reply.writeUInt16BE(upstream.localPort, 8);
      socket.write(reply);
      const early = reader.release();
      if (early.length) {
        tunnel.record('up', early);
        upstream.write(early);
      }
      splice(tunnel, socket, upstream);
    });
  }
}

/** An HTTP proxy (CONNECT and forwarding) on 127.0.0.1, listening. */
function createHttpProxy(options) {
  return new HttpProxy(options).listen();
}

/** A SOCKS5 proxy on 127.0.0.1, listening. */
function createSocks5Proxy(options) {
  return new Socks5Proxy(options).listen();
}

module.exports = { createHttpProxy, createSocks5Proxy, HttpProxy, Socks5Proxy, Tunnel };
