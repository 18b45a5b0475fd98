'use strict';

// Small reference clients for driving the simulator without the native addon: one that
// reads a watch as lines over http/https/http2, and one that reads an HTTP/1.1 response
// off a bare TCP socket so tests can see the chunk framing itself.

const http = require('node:http');
const https = require('node:https');
const http2 = require('node:http2');
const net = require('node:net');
const zlib = require('node:zlib');
const { StringDecoder } = require('node:string_decoder');

/**
 * Opens a watch (or any GET) and collects its body as lines and parsed events.
 * @param {string} url full URL including query
 * @param {{headers?: object, ca?: string, cert?: string, key?: string, http2?: boolean}} [options]
 *   http2: use node:http2 (TLS, ALPN h2) instead of http/https
 * @returns {object} `{status, headers, lines, events, chunks, error, response, done, until(pred, ms),
 *   untilEvents(n, ms), close()}`; `response` resolves with the status, `done` with
 *   `{complete, error}` once the body is over (complete = ended cleanly)
 */
function watchRequest(url, options = {}) {
  const u = new URL(url);
  const w = { status: null, headers: null, lines: [], events: [], chunks: 0, bytes: 0, error: null };
  const waiters = createWaiters(w);
  const lines = createLineSplitter(w, waiters.check);
  const outcome = createOutcome(w, lines, waiters.check);
  if (options.http2) openHttp2(u, options, w, outcome);
  else openHttp1(u, options, w, outcome);
  w.until = waiters.until;
  w.untilEvents = (n, ms) => w.until(() => w.events.length >= n, ms, `${n} events`);
  return w;
}

/** Promises that resolve once a predicate over `w` holds; `check` is called on every change. */
function createWaiters(w) {
  let waiters = [];
  const check = () => {
    waiters = waiters.filter((x) => {
      if (!x.pred()) return true;
      clearTimeout(x.timer);
      x.resolve();
      return false;
    });
  };
  const until = (pred, ms = 2000, what = 'condition') =>
    new Promise((resolve, reject) => {
      if (pred()) return resolve();
      const x = { pred, resolve };
      x.timer = setTimeout(() => {
        waiters = waiters.filter((y) => y !== x);
        reject(
          new Error(
            `timed out after ${ms} ms waiting for ${what}; lines so far: ${JSON.stringify(w.lines).slice(0, 2000)}`,
          ),
        );
      }, ms);
      waiters.push(x);
    });
  return { check, until };
}

/** Splits the body's bytes into `w.lines`, and the lines that are watch events into `w.events`. */
function createLineSplitter(w, check) {
  const decoder = new StringDecoder('utf8');
  // Pieces of the unfinished line; only new text is searched for '\n', so a multi-megabyte
  // line costs linear time.
  let pieces = [];
  const onText = (text) => {
    let start = 0;
    let nl;
    while ((nl = text.indexOf('\n', start)) >= 0) {
      pieces.push(text.slice(start, nl));
      const line = pieces.join('');
      pieces = [];
      start = nl + 1;
      w.lines.push(line);
      try {
        const ev = JSON.parse(line);
        if (ev && typeof ev === 'object' && typeof ev.type === 'string') w.events.push(ev);
      } catch {
        // Broken lines stay visible in `lines`.
      }
    }
    if (start < text.length) pieces.push(text.slice(start));
    check();
  };
  return {
    write: (bytes) => onText(decoder.write(bytes)),
    // A last line without its '\n' still counts.
    flush: () => {
      if (pieces.length) onText('\n');
    },
  };
}

/**
 * Sets `w.response` and `w.done`; returns how the transports report the response, the body and
 * the end (`finish` runs once, whichever comes first).
 */
function createOutcome(w, lines, check) {
  let resolveResponse;
  let rejectResponse;
  w.response = new Promise((resolve, reject) => {
    resolveResponse = resolve;
    rejectResponse = reject;
  });
  w.response.catch(() => {});
  let resolveDone;
  w.done = new Promise((resolve) => {
    resolveDone = resolve;
  });
  let finished = false;
  const finish = (complete) => {
    if (finished) return;
    finished = true;
    lines.flush();
    w.complete = complete;
    resolveDone({ complete, error: w.error });
    rejectResponse(w.error || new Error('no response'));
    check();
  };
  const respond = (status, headers) => {
    w.status = status;
    w.headers = headers;
    resolveResponse(w.status);
  };
  const onBody = (stream, encoding) => {
    const body = encoding === 'gzip' ? stream.pipe(zlib.createGunzip()) : stream;
    stream.on('data', (d) => {
      w.chunks++;
      w.bytes += d.length;
    });
    body.on('data', (d) => lines.write(d));
    body.on('error', (err) => {
      w.error = w.error || err;
    });
    return body;
  };
  return { respond, onBody, finish };
}

function openHttp2(u, options, w, { respond, onBody, finish }) {
  const session = http2.connect(u.origin, { ca: options.ca, cert: options.cert, key: options.key });
  session.on('error', (err) => {
    w.error = w.error || err;
    finish(false);
  });
  const stream = session.request({ ':path': u.pathname + u.search, ...(options.headers || {}) });
  let body = null;
  stream.on('response', (headers) => {
    respond(headers[':status'], headers);
    body = onBody(stream, headers['content-encoding']);
  });
  stream.on('error', (err) => {
    w.error = w.error || err;
  });
  stream.on('close', () => {
    // Node ends a stream even when its connection dies; only code 0 is a clean end.
    if (stream.rstCode)
      w.error =
        w.error ||
        Object.assign(new Error(`stream closed with code ${stream.rstCode}`), {
          code: 'ERR_HTTP2_STREAM_CLOSED',
        });
    const ok = !w.error && stream.rstCode === 0 && w.status !== null;
    session.close();
    if (ok && body && body !== stream && !body.readableEnded) body.once('end', () => finish(true));
    else setImmediate(() => finish(ok));
  });
  w.session = session;
  w.close = () => {
    stream.close();
    session.destroy();
  };
}

function openHttp1(u, options, w, { respond, onBody, finish }) {
  const mod = u.protocol === 'https:' ? https : http;
  const req = mod.get(
    u,
    { agent: false, headers: options.headers, ca: options.ca, cert: options.cert, key: options.key },
    (res) => {
      respond(res.statusCode, res.headers);
      const body = onBody(res, res.headers['content-encoding']);
      body.on('end', () => finish(res.complete));
      res.on('error', (err) => {
        w.error = w.error || err;
      });
      res.on('close', () => setImmediate(() => finish(res.complete && !w.error)));
    },
  );
  req.on('error', (err) => {
    w.error = w.error || err;
    finish(false);
  });
  w.req = req;
  w.close = () => req.destroy();
}

/**
 * Sends a GET on a bare TCP socket and parses the HTTP/1.1 response, keeping each chunk of a
 * chunked body separately.
 * @param {number} port
 * @param {string} path
 * @param {{headers?: object, timeoutMs?: number, until?: (r: object) => boolean}} [options]
 *   until: stop (and close the socket) once this returns true
 * @returns {Promise<{statusLine: string, headers: object, chunks: Buffer[], body: Buffer,
 *   ended: boolean, broken: boolean}>} ended: the terminating chunk arrived; broken: the
 *   connection closed mid-body
 */
function rawGet(port, path, options = {}) {
  const { timeoutMs = 3000 } = options;
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1');
    const extra = Object.entries(options.headers || {})
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('');
    sock.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${extra}\r\n`);
    const r = {
      statusLine: null,
      headers: {},
      chunks: [],
      body: Buffer.alloc(0),
      ended: false,
      broken: false,
    };
    let buf = Buffer.alloc(0);
    let inBody = false;
    let settled = false;
    const timer = setTimeout(() => done(new Error(`rawGet timed out after ${timeoutMs} ms`)), timeoutMs);
    function done(err) {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      r.body = Buffer.concat(r.chunks);
      if (err) reject(Object.assign(err, { partial: r }));
      else resolve(r);
    }
    function parse() {
      if (!inBody) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
        r.statusLine = lines.shift();
        for (const l of lines) {
          const i = l.indexOf(':');
          r.headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
        }
        buf = buf.subarray(end + 4);
        inBody = true;
        if (r.headers['transfer-encoding'] !== 'chunked') {
          r.chunks.push(buf);
          buf = Buffer.alloc(0);
          return;
        }
      }
      if (r.headers['transfer-encoding'] !== 'chunked') {
        r.chunks.push(buf);
        buf = Buffer.alloc(0);
        return;
      }
      for (;;) {
        const eol = buf.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(buf.subarray(0, eol).toString('latin1'), 16);
        if (size === 0) {
          r.ended = true;
          return done();
        }
        if (buf.length < eol + 2 + size + 2) return;
        r.chunks.push(Buffer.from(buf.subarray(eol + 2, eol + 2 + size)));
        buf = buf.subarray(eol + 2 + size + 2);
        if (options.until && options.until(r)) return done();
      }
    }
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      parse();
      if (!settled && options.until && options.until(r)) done();
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      if (!r.ended && r.headers['transfer-encoding'] === 'chunked') r.broken = true;
      if (r.headers['transfer-encoding'] !== 'chunked' && inBody) r.ended = true;
      done();
    });
  });
}

module.exports = { watchRequest, rawGet };
