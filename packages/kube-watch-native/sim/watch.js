'use strict';

// One watch response, with the semantics of the API server's watch cache: initial state or
// replay from a resourceVersion, live events filtered per watcher, bookmarks, timeouts, and
// the scripted misbehaviour a fault asks for.

const http2 = require('node:http2');
const { compileSelector, SelectorError } = require('./selector');
const { status, commonHeaders } = require('./status');
const { Sink } = require('./wire');
const { partialLine } = require('./metadata');
const { addedLine, eventLineOf } = require('./text');

// A gzipped initial state is compressed in pieces of up to this many bytes, many events each:
// one gzip write and flush per event would cost the server more than the bytes do.
const INITIAL_CHUNK_BYTES = 1 << 20;

// An initial state that is not gzipped leaves in corked writes of up to this many bytes, each
// once the one before reached the socket. Handed over all at once, every watch's state would
// be encrypted at once: TLS holds what the socket has not taken yet in buffers it reports to
// V8 as external memory (node::crypto::NodeBIO), and 64 MiB of that over the last full
// collection starts another full collection ("external memory pressure"), which marks every
// stored object. A connection's streams together keep this many bytes each in flight.
const INITIAL_WRITE_BYTES = 64 << 10;

/** The end of the run of `lines` from `i` that fits in `max` bytes (at least one line). */
function chunkEnd(lines, i, max) {
  let bytes = lines[i].length;
  let j = i + 1;
  while (j < lines.length && bytes + lines[j].length <= max) bytes += lines[j++].length;
  return j;
}

// Lines of objects the store does not hold as they are (bookmarks, errors, a DELETED's last
// state with the deletion's resourceVersion). Stored objects' lines come from sim/text.js.
function line(type, object) {
  return Buffer.from(`{"type":"${type}","object":${JSON.stringify(object)}}\n`);
}

function bookmarkLine(def, resourceVersion, initialEventsEnd) {
  const metadata = { resourceVersion };
  if (initialEventsEnd) metadata.annotations = { 'k8s.io/initial-events-end': 'true' };
  return line('BOOKMARK', { kind: def.kind, apiVersion: def.apiVersion, metadata });
}

/**
 * The line a watcher whose filter is `passes` receives for a history entry, or null. This is
 * the watch cache's rule: an update that makes an object start (stop) matching is an ADDED
 * (DELETED), and a DELETED carries the last matching state with the event's resourceVersion.
 * @param {object} entry a store history entry
 * @param {(obj: object) => boolean} passes
 * @returns {Buffer|null}
 */
function eventLine(entry, passes) {
  const cur = entry.type !== 'DELETED' && passes(entry.object);
  const old = entry.prevObject != null && passes(entry.prevObject);
  let type;
  if (cur) type = old ? 'MODIFIED' : 'ADDED';
  else if (old) type = 'DELETED';
  else return null;
  let buf = entry.lines[type];
  if (!buf) {
    let object = entry.object;
    if (type === 'DELETED' && entry.type !== 'DELETED') {
      object = {
        ...entry.prevObject,
        metadata: { ...entry.prevObject.metadata, resourceVersion: String(entry.rv) },
      };
    }
    buf = entry.lines[type] = object === entry.object ? eventLineOf(type, object) : line(type, object);
  }
  return buf;
}

// Go's strconv.ParseBool, which the API server uses for boolean query parameters.
function parseBool(value) {
  if (value === null) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

function invalidListOptions(causes) {
  const text = causes.map((c) => `${c.field}: Forbidden: ${c.message}`);
  const message = `ListOptions.meta.k8s.io "" is invalid: ${text.length === 1 ? text[0] : `[${text.join(', ')}]`}`;
  const details = {
    group: 'meta.k8s.io',
    kind: 'ListOptions',
    causes: causes.map((c) => ({
      reason: 'FieldValueForbidden',
      message: `Forbidden: ${c.message}`,
      field: c.field,
    })),
  };
  return { code: 422, message, reason: 'Invalid', details };
}

/**
 * Reads and validates the watch query parameters as the API server does.
 * @param {URLSearchParams} params
 * @returns {{error: {code: number, message: string, reason?: string, details?: object}} |
 *   {options: {rv: number|undefined, timeoutSeconds: number|undefined, bookmarks: boolean,
 *   sendInitialEvents: boolean|undefined, selector: Function}}}
 */
function parseWatchOptions(params) {
  const rvRaw = params.get('resourceVersion');
  let rv;
  if (rvRaw !== null && rvRaw !== '') {
    if (!/^\d+$/.test(rvRaw)) {
      return {
        error: {
          code: 400,
          message: `invalid resource version "${rvRaw}": strconv.ParseUint: parsing "${rvRaw}": invalid syntax`,
        },
      };
    }
    rv = Number(rvRaw);
  }
  const timeoutRaw = params.get('timeoutSeconds');
  let timeoutSeconds;
  if (timeoutRaw !== null && timeoutRaw !== '') {
    // Fractions are an extension so tests can run short watches.
    if (!/^\d+(\.\d+)?$/.test(timeoutRaw)) {
      return {
        error: {
          code: 400,
          message: `invalid value for timeoutSeconds: strconv.ParseInt: parsing "${timeoutRaw}": invalid syntax`,
        },
      };
    }
    timeoutSeconds = Number(timeoutRaw);
  }
  let selector;
  try {
    selector = compileSelector(params.get('labelSelector'));
  } catch (err) {
    if (err instanceof SelectorError) return { error: { code: 400, message: err.message } };
    throw err;
  }
  const bookmarks = parseBool(params.get('allowWatchBookmarks')) === true;
  const sendInitialEvents = parseBool(params.get('sendInitialEvents'));
  const match = params.get('resourceVersionMatch') || '';
  const causes = [];
  if (params.get('sendInitialEvents') !== null) {
    if (match !== 'NotOlderThan') {
      causes.push({
        field: 'resourceVersionMatch',
        message: 'sendInitialEvents requires setting resourceVersionMatch to NotOlderThan',
      });
    }
    if (!bookmarks) {
      causes.push({
        field: 'allowWatchBookmarks',
        message: 'sendInitialEvents requires setting allowWatchBookmarks to true',
      });
    }
  } else if (match) {
    causes.push({
      field: 'resourceVersionMatch',
      message: 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided',
    });
  }
  if (causes.length) return { error: invalidListOptions(causes) };
  return { options: { rv, timeoutSeconds, bookmarks, sendInitialEvents, selector } };
}

/** A watch response in progress. */
class Watch {
  /**
   * @param {object} env
   * @param {import('./store').Store} env.store
   * @param {object} env.def resource description
   * @param {string} [env.namespace]
   * @param {string} [env.name] a watch on one object (`/pods/NAME?watch=1`)
   * @param {object} env.options from parseWatchOptions
   * @param {object} env.fault the fault for this request, or {}
   * @param {object} env.res the response
   * @param {import('net').Socket} env.rawSocket the TCP socket under any TLS
   * @param {boolean} env.gzip whether to gzip the body
   * @param {number} env.bookmarkIntervalMs
   * @param {number} env.defaultTimeoutSeconds
   * @param {boolean} [env.metadataOnly] objects as PartialObjectMetadata (sim/metadata.js)
   */
  constructor(env) {
    Object.assign(this, env);
    this.state = 'new';
    this.written = 0;
    this.pending = 0;
    this.flushWaiters = [];
    this.timers = [];
    const { namespace, name, options } = this;
    this.passes = (obj) =>
      (!namespace || obj.metadata.namespace === namespace) &&
      (!name || obj.metadata.name === name) &&
      options.selector(obj.metadata.labels) &&
      (!options.fieldSelector || options.fieldSelector(obj));
    this.shape = this.metadataOnly ? partialLine : (buf) => buf;
  }

  /** Writes headers and the initial part of the stream, then follows the store. */
  start() {
    const { store, def, options: o, fault, res } = this;
    const initial = [];
    let expired = null;
    if (o.sendInitialEvents === true || (o.sendInitialEvents === undefined && !o.rv)) {
      for (const obj of store.snapshot(def.key, { namespace: this.namespace })) {
        if (this.passes(obj)) initial.push(this.shape(addedLine(obj)));
      }
      if (o.sendInitialEvents === true) initial.push(bookmarkLine(def, store.resourceVersion, true));
    } else if (o.rv) {
      const entries = store.eventsSince(o.rv);
      if (entries === null) {
        const msg = `too old resource version: ${o.rv} (${store.compactedRv})`;
        expired = line('ERROR', status(410, msg, 'Expired'));
      } else {
        for (const entry of entries) {
          if (entry.def.key !== def.key) continue;
          const buf = eventLine(entry, this.passes);
          if (buf) initial.push(this.shape(buf));
        }
      }
    }
    // Subscribing in the same turn as the snapshot, so no mutation falls in between.
    if (!expired) this.unsubscribe = store.subscribe((entry) => this.onEntry(entry));
    this.state = 'live';

    res.writeHead(200, {
      ...commonHeaders(),
      'content-type': 'application/json',
      ...(this.gzip && { 'content-encoding': 'gzip' }),
    });
    res.flushHeaders();
    this.sink = new Sink(
      {
        write: (buf) => {
          if (res.destroyed || res.writableEnded) return;
          this.pending++;
          res.write(buf, () => this.flushed());
        },
        end: () => !res.destroyed && !res.writableEnded && res.end(),
      },
      { writeMode: fault.writeMode, splitAt: fault.splitAt, lineEnding: fault.lineEnding, gzip: this.gzip },
    );

    const raw = fault.rawLines || [];
    raw.forEach((l, i) => this.sink.raw(l, !(fault.noNewlineAfterLast && i === raw.length - 1)));
    if (fault.cutAfterEvents === 0 || fault.stallAfterEvents === 0) {
      const how = fault.cutAfterEvents === 0 ? 'cut' : 'stall';
      this.sink.action(() => this.misbehave(how));
      return;
    }
    this.sendInitial(initial);
    if (expired) {
      this.send(expired);
      const then = fault.then && fault.then !== 'live' ? fault.then : 'end';
      this.sink.action(() => this.misbehave(then));
      return;
    }
    if (fault.then && fault.then !== 'live') {
      this.sink.action(() => this.misbehave(fault.then));
      return;
    }
    const seconds = o.timeoutSeconds || this.defaultTimeoutSeconds;
    this.timers.push(setTimeout(() => this.end(), seconds * 1000));
    if (o.bookmarks) {
      // A watch from a resourceVersion the store has not reached hears nothing, bookmarks
      // included, until the store passes it: as the API server's watch cache.
      const bookmark = () => {
        if (!(o.rv && Number(store.resourceVersion) <= o.rv))
          this.send(bookmarkLine(def, store.resourceVersion, false));
      };
      this.timers.push(setInterval(bookmark, this.bookmarkIntervalMs));
    }
    // A running watch must never be what keeps a test process alive.
    for (const t of this.timers) t.unref();
  }

  send(buf) {
    if (this.state !== 'live') return;
    this.sink.event(buf, () => this.afterEvent());
  }

  /**
   * Sends the initial events: one by one over HTTP/1.1 (one chunk per event, on every Node.js
   * version: Node 22 and later turn corked writes into one chunk) and where a fault shapes or
   * counts each event; else, over HTTP/2, the cached lines themselves in corked writes of up to
   * INITIAL_WRITE_BYTES, each once the one before was flushed (writevs, no copy: copies of a
   * whole fleet's state would be garbage the server's collector pays for during the sync), or,
   * gzipped, in pieces of up to INITIAL_CHUNK_BYTES.
   */
  sendInitial(lines) {
    const f = this.fault;
    const perEvent =
      !this.res.stream ||
      f.writeMode !== undefined ||
      f.lineEnding !== undefined ||
      f.cutAfterEvents !== undefined ||
      f.stallAfterEvents !== undefined;
    if (perEvent) {
      for (const buf of lines) this.send(buf);
      return;
    }
    if (!this.gzip) {
      for (let i = 0; i < lines.length;) {
        const j = chunkEnd(lines, i, INITIAL_WRITE_BYTES);
        const from = i;
        this.sink.action(() => {
          this.res.cork();
          for (let k = from; k < j; k++) this.sink.out.write(lines[k]);
          this.res.uncork();
          this.written += j - from;
        });
        if (j < lines.length) this.sink.wait((resume) => this.whenFlushed(resume));
        i = j;
      }
      return;
    }
    for (let i = 0; i < lines.length;) {
      const j = chunkEnd(lines, i, INITIAL_CHUNK_BYTES);
      const n = j - i;
      this.sink.event(n === 1 ? lines[i] : Buffer.concat(lines.slice(i, j)), () => (this.written += n));
      i = j;
    }
  }

  afterEvent() {
    this.written++;
    if (this.written === this.fault.cutAfterEvents) this.misbehave('cut');
    else if (this.written === this.fault.stallAfterEvents) this.misbehave('stall');
  }

  onEntry(entry) {
    if (this.state !== 'live' || entry.def.key !== this.def.key) return;
    // A watch from a future version (a client ahead of this server) skips what it has seen.
    if (this.options.rv && entry.rv <= this.options.rv) return;
    const buf = eventLine(entry, this.passes);
    if (buf) this.send(this.shape(buf));
  }

  /** Ends the response cleanly, as a server-side timeout does. */
  end() {
    if (this.state !== 'live') return;
    this.detach('ended');
    this.sink.finish();
  }

  /**
   * Breaks the stream the way `how` says.
   * @param {'end'|'cut'|'stall'|'truncate'|'reset'} how
   */
  misbehave(how) {
    if (this.state !== 'live') return;
    if (how === 'end') return this.end();
    this.detach(how);
    this.sink.stop();
    if (how === 'stall') return undefined;
    // What was written before the break still reaches the client, as on a real cut.
    return this.whenFlushed(() => this.breakConnection(how));
  }

  breakConnection(how) {
    const sock = this.rawSocket;
    if (how === 'cut') {
      sock.destroy();
    } else if (how === 'reset') {
      // resetAndDestroy needs the TCP handle; a socket without one can only be closed.
      if (typeof sock.resetAndDestroy === 'function' && sock._handle) sock.resetAndDestroy();
      else sock.destroy();
    } else if (how === 'truncate') {
      this.truncate();
    } else {
      throw new TypeError(`unknown fault.then "${how}"`);
    }
  }

  flushed() {
    this.pending--;
    if (this.pending > 0) return;
    const waiters = this.flushWaiters;
    this.flushWaiters = [];
    for (const fn of waiters) fn();
  }

  whenFlushed(fn) {
    if (this.pending === 0) fn();
    else this.flushWaiters.push(fn);
  }

  // A body that stops inside a chunk: the client must see a broken body, not a clean end.
  truncate() {
    const partial = Buffer.from('{"type":"MODIFIED","object":{"kind":"');
    const res = this.res;
    if (res.stream) {
      // HTTP/2 has no chunk sizes; a stream reset mid-body is its truncation.
      res.write(partial);
      res.stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    const sock = res.socket;
    if (!sock || sock.destroyed) return;
    const header = Buffer.from(`${(partial.length + 4096).toString(16)}\r\n`);
    sock.write(Buffer.concat([header, partial]), () => sock.destroy());
  }

  detach(state) {
    this.state = state;
    for (const t of this.timers) clearTimeout(t);
    this.timers = [];
    if (this.unsubscribe) this.unsubscribe();
    this.unsubscribe = null;
  }

  /** Releases everything without writing (the response closed, or the simulator did). */
  dispose() {
    if (this.state === 'closed') return;
    this.detach('closed');
    if (this.sink) this.sink.stop();
  }
}

module.exports = { Watch, parseWatchOptions, eventLine, parseBool };
