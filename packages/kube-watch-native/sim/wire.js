'use strict';

// How watch bytes reach the socket. Real API servers (and the proxies in front of them)
// deliver one event per chunk, many events per chunk, events split across chunks, and gzip
// bodies; the writer reproduces each on request while keeping events in order.

const zlib = require('node:zlib');

const EOL = Buffer.from('\n');

// Yield to the event loop so every write leaves in its own TCP segment instead of being
// merged with the next one by the kernel.
const tick = () => new Promise((resolve) => setImmediate(resolve));

function toBuffer(data) {
  return Buffer.isBuffer(data) ? data : Buffer.from(String(data));
}

function splitPoint(buf, splitAt) {
  let at;
  if (typeof splitAt === 'function') at = splitAt(buf);
  else if (typeof splitAt === 'number') at = splitAt < 0 ? buf.length + splitAt : splitAt;
  else at = 1 + Math.floor(Math.random() * Math.max(1, buf.length - 1));
  return Math.min(Math.max(1, at), Math.max(1, buf.length - 1));
}

/**
 * An ordered queue of byte writes and callbacks over one `write` function. `mode` decides
 * how each buffer is cut into writes; a callback runs once everything queued before it was
 * handed to `write`.
 */
class Writer {
  /**
   * @param {(buf: Buffer) => void} write
   * @param {{mode?: 'normal'|'byte'|'split'|'coalesce', splitAt?: number|((buf: Buffer) => number)}} [options]
   */
  constructor(write, options = {}) {
    this.write = write;
    this.mode = options.mode || 'normal';
    this.splitAt = options.splitAt;
    this.queue = [];
    this.busy = false;
    this.stopped = false;
  }

  data(buf) {
    this.enqueue({ buf });
  }

  action(fn) {
    this.enqueue({ fn });
  }

  /**
   * Holds back whatever is queued after this until `start(resume)` calls `resume` (or the
   * writer stops).
   * @param {(resume: () => void) => void} start
   */
  wait(start) {
    this.enqueue({ wait: start });
  }

  /** Drops everything queued and ignores whatever comes later. */
  stop() {
    this.stopped = true;
    this.queue = [];
    this.resume?.();
  }

  enqueue(item) {
    if (this.stopped) return;
    // Fast path: nothing pending, so ordering allows writing (or calling back) right now.
    if (!this.busy && this.queue.length === 0 && !item.wait && (item.fn || this.mode === 'normal')) {
      if (item.fn) item.fn();
      else this.write(item.buf);
      return;
    }
    this.queue.push(item);
    if (!this.busy) this.pump().catch(() => this.stop());
  }

  async pump() {
    this.busy = true;
    try {
      while (this.queue.length && !this.stopped) {
        if (this.mode === 'coalesce') {
          // Whatever is queued by the end of this turn of the event loop becomes one chunk.
          await tick();
          const items = this.queue.splice(0);
          const bufs = items.filter((i) => i.buf).map((i) => i.buf);
          if (bufs.length && !this.stopped) this.write(Buffer.concat(bufs));
          for (const i of items) if (i.fn && !this.stopped) i.fn();
          continue;
        }
        const item = this.queue.shift();
        if (item.wait) {
          await new Promise((resolve) => {
            this.resume = resolve;
            item.wait(resolve);
          });
          this.resume = null;
        } else if (item.fn) {
          item.fn();
        } else if (this.mode === 'byte') {
          for (let i = 0; i < item.buf.length && !this.stopped; i++) {
            this.write(item.buf.subarray(i, i + 1));
            await tick();
          }
        } else if (this.mode === 'split' && item.buf.length > 1) {
          const at = splitPoint(item.buf, this.splitAt);
          this.write(item.buf.subarray(0, at));
          await tick();
          if (!this.stopped) this.write(item.buf.subarray(at));
          await tick();
        } else {
          this.write(item.buf);
        }
      }
    } finally {
      this.busy = false;
    }
  }
}

/**
 * The body of one watch response: lines in, (optionally gzipped) bytes out through a Writer.
 */
class Sink {
  /**
   * @param {{write: (buf: Buffer) => void, end: () => void}} out
   * @param {{writeMode?: string, splitAt?: number|Function, lineEnding?: string, gzip?: boolean}} [options]
   */
  constructor(out, options = {}) {
    this.out = out;
    this.writer = new Writer((buf) => out.write(buf), { mode: options.writeMode, splitAt: options.splitAt });
    this.ending =
      options.lineEnding === undefined || options.lineEnding === '\n' ? null : toBuffer(options.lineEnding);
    if (options.gzip) {
      this.gz = zlib.createGzip();
      this.gz.on('data', (buf) => this.writer.data(buf));
      this.gz.on('error', () => this.stop());
    }
  }

  /**
   * Writes one line verbatim.
   * @param {string|Buffer} line
   * @param {boolean} newline append the line ending
   */
  raw(line, newline) {
    const buf = toBuffer(line);
    this.bytes(newline ? Buffer.concat([buf, this.ending || EOL]) : buf);
  }

  /**
   * Writes one event line; `line` already ends with `\n`.
   * @param {Buffer} line
   * @param {() => void} [written] called once the bytes were handed to the socket
   */
  event(line, written) {
    this.bytes(this.ending ? Buffer.concat([line.subarray(0, line.length - 1), this.ending]) : line, written);
  }

  bytes(buf, written) {
    if (this.writer.stopped) return;
    if (this.gz) {
      this.gz.write(buf);
      // A sync flush per event keeps gzip from holding events back until its window fills.
      this.gz.flush(zlib.constants.Z_SYNC_FLUSH, () => written && this.writer.action(written));
    } else {
      this.writer.data(buf);
      if (written) this.writer.action(written);
    }
  }

  /** Runs `fn` after everything written so far reached the socket. */
  action(fn) {
    if (this.writer.stopped) return;
    if (this.gz) this.gz.flush(zlib.constants.Z_SYNC_FLUSH, () => this.writer.action(fn));
    else this.writer.action(fn);
  }

  /**
   * Holds back what is written after this until `start(resume)` calls `resume` (not gzipped:
   * a gzipped body is paced by its compressor's flushes).
   * @param {(resume: () => void) => void} start
   */
  wait(start) {
    if (this.writer.stopped) return;
    if (this.gz) throw new TypeError('Sink#wait is for bodies that are not gzipped');
    this.writer.wait(start);
  }

  /** Ends the body cleanly (gzip trailer, then the terminating chunk). */
  finish() {
    if (this.writer.stopped) return;
    if (this.gz) {
      this.gz.once('end', () => this.writer.action(() => this.out.end()));
      this.gz.end();
    } else {
      this.writer.action(() => this.out.end());
    }
  }

  /** Stops writing for good. */
  stop() {
    this.writer.stop();
    if (this.gz) this.gz.destroy();
  }
}

module.exports = { Writer, Sink, splitPoint, tick };
