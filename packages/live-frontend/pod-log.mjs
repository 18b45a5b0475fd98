// A container's log followed through the Kubernetes plugin's proxy route
// (`GET …/pods/{pod}/log?follow=true&timestamps=true`), resumed after its body ends, a failure or
// a wake (a sleep, the network back) without a line repeated or lost.
//
// Resuming rests on the stamps `timestamps=true` puts before each line (RFC3339Nano): the lines
// kept remember the last line's stamp and how many lines with that very stamp were shown. A
// resumed read asks `sinceTime=<that second>` (the API server reads sinceTime in whole seconds,
// so up to a second already shown comes again) and drops what it has shown: lines stamped
// earlier, and the first `k` at the last stamp. Incomplete lines (a body cut mid-line) are never
// shown; the resumed read brings them whole.
//
// Plain ESM without imports, so it runs (and is tested) in Node as it runs in the browser.

/** The lines a follow starts with (`tailLines`). */
export const LOG_TAIL_LINES = 1000;

/** Lines kept in the browser: the oldest go first. */
export const MAX_LOG_LINES = 10_000;

/** A line longer than this is cut (the rest of it, up to its newline, is dropped). */
export const MAX_LINE_CHARS = 64 * 1024;

/** After a body ends cleanly (a proxy's timeout, the container's restart): read again this soon. */
const REOPEN_MS = 250;

const STAMP = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d) /;

/** `{ stamp, text }` of a line of `timestamps=true`; `stamp` null when it has none. */
export function splitStamp(line) {
  const match = STAMP.exec(line);
  if (!match) return { stamp: null, text: line };
  const [whole, seconds, fraction = '', zone] = match;
  const epochSeconds = Date.parse(`${seconds}${zone}`) / 1000;
  if (Number.isNaN(epochSeconds)) return { stamp: null, text: line };
  // Comparable as a pair, whatever the zone or the digits of the fraction.
  const stamp = { seconds: epochSeconds, nanos: Number(fraction.padEnd(9, '0')) };
  return { stamp, text: line.slice(whole.length) };
}

/** Orders two stamps of splitStamp: negative, 0 or positive. */
export function compareStamps(a, b) {
  return a.seconds - b.seconds || a.nanos - b.nanos;
}

/** The stamp's second as the API server reads `sinceTime` (RFC3339, UTC). */
export function sinceTimeOf(stamp) {
  return new Date(stamp.seconds * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The lines shown, the last `maxLines` to half as many more (`{ stamp, text, raw }`, oldest
 * first), and where they end, so that a resumed read shows only what comes after.
 */
export class LogLines {
  #maxLines;
  /** The last line's stamp, and how many lines were shown with exactly that stamp. */
  #last = null;
  #atLast = 0;
  /** While a resumed read catches up: the stamp it started from and how many at it to drop. */
  #after = null;
  #skip = 0;
  /** The texts of the lines kept, with and without stamps, kept as lines come; null to build again. */
  #texts = null;

  constructor(maxLines = MAX_LOG_LINES) {
    this.#maxLines = maxLines;
    /** Oldest first. */
    this.lines = [];
    /** Every line shown since the start (the bound drops some of `lines`, not this count). */
    this.total = 0;
  }

  /**
   * A read starts: its query (`tailLines` for the first, `sinceTime` once a line was shown), and
   * from now on the lines already shown are dropped.
   */
  resume(tailLines) {
    if (this.#last === null) return { tailLines };
    this.#after = this.#last;
    this.#skip = this.#atLast;
    return { sinceTime: sinceTimeOf(this.#last) };
  }

  /** Takes one complete line of the read (stamp and all); whether it is shown. */
  push(raw) {
    const { stamp, text } = splitStamp(raw);
    if (stamp !== null && this.#after !== null) {
      const order = compareStamps(stamp, this.#after);
      // Before the last line shown: the second sinceTime rounded down to, shown already.
      if (order < 0) return false;
      // At the last stamp: the first #atLast of them were shown.
      if (order === 0 && this.#skip > 0) {
        this.#skip -= 1;
        return false;
      }
      this.#after = null;
    }
    if (stamp !== null) {
      if (this.#last !== null && compareStamps(stamp, this.#last) === 0) this.#atLast += 1;
      else {
        this.#last = stamp;
        this.#atLast = 1;
      }
    }
    this.lines.push({ stamp, text, raw });
    this.total += 1;
    // Dropped in batches of half the bound: each drop rewrites the text, which Backstage's
    // LogViewer then reads whole (10 000 lines, ~10 ms), where an append costs it the new part.
    if (this.lines.length > this.#maxLines + Math.ceil(this.#maxLines / 2)) {
      this.lines.splice(0, this.lines.length - this.#maxLines);
      this.#texts = null;
    } else if (this.#texts !== null) {
      const joint = this.lines.length > 1 ? '\n' : '';
      this.#texts.plain += joint + text;
      this.#texts.stamped += joint + raw;
    }
    return true;
  }

  /**
   * The lines kept as text, without their stamps unless `timestamps`. Between the drops of old
   * lines (one per half of `maxLines` shown) a later text is an earlier one with lines appended,
   * which Backstage's LogViewer reads by its new part alone; and it costs nothing to ask again.
   */
  text({ timestamps = false } = {}) {
    this.#texts ??= {
      plain: this.lines.map((line) => line.text).join('\n'),
      stamped: this.lines.map((line) => line.raw).join('\n'),
    };
    return timestamps ? this.#texts.stamped : this.#texts.plain;
  }
}

/** A response that is not 200: its Status message (the API server's) or its status line. */
export class LogReadError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'LogReadError';
    this.status = status;
  }
}

async function readError(response) {
  let message = `HTTP ${response.status}`;
  try {
    const body = await response.json();
    message = body?.message ?? body?.error?.message ?? message;
  } catch {
    // Not JSON: the status line says it.
  }
  return new LogReadError(response.status, message);
}

function defaultSetTimer(fn, ms) {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
}

/** The least time between two renders of a log, and the most a render is put off. */
export const RENDER_MIN_MS = 50;
export const RENDER_MAX_MS = 500;
/** The share of a tab's time its log's renders may take: the pause after one is its cost over this. */
const RENDER_SHARE = 0.1;

/**
 * Paces the renders of a log by what they cost. `changed()` says the lines changed: `render()` is
 * called once for any number of changes, at least `RENDER_MIN_MS` after the last, and `rendered()`
 * says it was committed, which measures its cost from the call. The next waits ten times that cost
 * (at most `RENDER_MAX_MS`): Backstage's LogViewer takes ~10 ms a render on one core, so a lone tab
 * renders every 100 ms, while twenty tabs on two cores, each render slowed by the others, render
 * less often each rather than queue up seconds of work.
 */
export class RenderPacer {
  #render;
  #now;
  #setTimer;
  #cancel = null;
  #lastAt = -Infinity;
  #askedAt = null;
  #gapMs = RENDER_MIN_MS;

  constructor({ render, now = () => performance.now(), setTimer = defaultSetTimer }) {
    this.#render = render;
    this.#now = now;
    this.#setTimer = setTimer;
  }

  changed() {
    if (this.#cancel !== null) return;
    const wait = Math.max(0, this.#lastAt + this.#gapMs - this.#now());
    this.#cancel = this.#setTimer(() => {
      this.#cancel = null;
      this.#lastAt = this.#askedAt = this.#now();
      this.#render();
    }, wait);
  }

  rendered() {
    if (this.#askedAt === null) return;
    const cost = this.#now() - this.#askedAt;
    this.#askedAt = null;
    this.#gapMs = Math.min(RENDER_MAX_MS, Math.max(RENDER_MIN_MS, cost / RENDER_SHARE));
  }

  /** The pause after the last render, for tests. */
  get gapMs() {
    return this.#gapMs;
  }

  stop() {
    this.#cancel?.();
    this.#cancel = null;
  }
}

/**
 * Reads a container's log into `lines` (LogLines) until `stop()`, the function it returns.
 *
 * `open(query, signal)` sends the request (the query's `tailLines` or `sinceTime` added to the
 * caller's own) and resolves to its Response. A follow is read again whenever its body ends
 * (at once, then with a growing pause while reads fail), and at once on a wake (`wakes(onWake)`,
 * which returns its stop function: a read open across a sleep may be dead without a word). With
 * `follow: false` (a previous instance's log), one read.
 *
 * While `shown()` is false (a hidden tab) a follow holds no request: its read is aborted when
 * `visibility(onChange)` says the page was hidden, and a resumed one starts when it is shown
 * again. A browser opens at most 6 HTTP/1.1 connections to an origin, so a follow in each
 * background tab would soon leave none for the others' requests.
 *
 * `onChange()` after each chunk that added lines; `onStatus({ state, error })`, `state` one of
 * `connecting`, `following`, `retrying`, `paused`, `ended`.
 */
export function followLog({
  open,
  lines,
  follow = true,
  tailLines = LOG_TAIL_LINES,
  onChange = () => {},
  onStatus = () => {},
  wakes = () => () => {},
  shown = () => true,
  visibility = () => () => {},
  retryMs = 1000,
  maxRetryMs = 10_000,
  setTimer = defaultSetTimer,
}) {
  let stopped = false;
  /** The read out now: aborted by a wake or stop(). */
  let controller = null;
  /** Cancels the pause before the next read, and starts it at once. */
  let wakeNow = null;
  const interrupt = () => {
    controller?.abort();
    wakeNow?.();
  };
  const stopWakes = follow ? wakes(interrupt) : () => {};
  const stopVisibility = follow ? visibility(interrupt) : () => {};

  const pause = (ms) =>
    new Promise((resolve) => {
      const cancel = setTimer(() => {
        wakeNow = null;
        resolve();
      }, ms);
      wakeNow = () => {
        cancel();
        wakeNow = null;
        resolve();
      };
    });

  /**
   * One read: resolves when its body ends; throws its failure (an abort too). `progress.shown`:
   * the lines it showed, whichever way it ended.
   */
  async function read(signal, progress) {
    const response = await open(lines.resume(tailLines), signal);
    if (!response.ok) throw await readError(response);
    onStatus({ state: follow ? 'following' : 'ended', error: null });
    const reader = response.body.getReader();
    // Whether or not the fetch honours the signal, an abort ends the read.
    const cancel = () => reader.cancel().catch(() => {});
    signal.addEventListener('abort', cancel, { once: true });
    const decoder = new TextDecoder();
    let partial = '';
    let overlong = false;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const before = progress.shown;
        const parts = (partial + decoder.decode(value, { stream: true })).split('\n');
        partial = parts.pop();
        for (const part of parts) {
          // The end of a line cut at MAX_LINE_CHARS: its start was shown.
          if (overlong) overlong = false;
          else if (lines.push(part)) progress.shown += 1;
        }
        if (partial.length > MAX_LINE_CHARS && !overlong) {
          if (lines.push(partial.slice(0, MAX_LINE_CHARS))) progress.shown += 1;
          overlong = true;
        }
        if (overlong) partial = '';
        if (progress.shown > before) onChange();
      }
    } finally {
      signal.removeEventListener('abort', cancel);
      reader.releaseLock?.();
    }
    // Text after the last newline when the body ended is a line cut short: the next read has it whole.
  }

  (async () => {
    let failures = 0;
    while (!stopped) {
      if (follow && !shown()) {
        onStatus({ state: 'paused', error: null });
        // Until shown again (visibility interrupts the pause).
        await pause(2 ** 31 - 1);
        continue;
      }
      controller = new AbortController();
      onStatus({ state: 'connecting', error: null });
      let error = null;
      const progress = { shown: 0 };
      try {
        await read(controller.signal, progress);
      } catch (caught) {
        error = caught;
      }
      const woken = controller.signal.aborted;
      controller = null;
      if (stopped) return;
      if (!follow) {
        onStatus({ state: 'ended', error });
        return;
      }
      // Woken (a sleep, the network back) or hidden: read again at once (or once shown), from
      // where the lines end.
      if (woken) continue;
      // A body that brought new lines and then ended (a proxy's timeout, a restart) or broke (the
      // network, a moment) is read again soon; a failure to read, or a body with nothing new (a
      // container that exited), after a growing pause.
      failures = progress.shown > 0 ? 0 : failures + 1;
      const ms = failures === 0 ? REOPEN_MS : Math.min(maxRetryMs, retryMs * 2 ** (failures - 1));
      onStatus({ state: 'retrying', error });
      await pause(ms);
    }
  })();

  return () => {
    if (stopped) return;
    stopped = true;
    stopWakes();
    stopVisibility();
    controller?.abort();
    wakeNow?.();
  };
}
