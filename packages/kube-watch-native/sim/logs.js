'use strict';

// Pod logs as the API server serves them, proxying the kubelet (issue 50): what each container
// wrote (`sim.writeLog`), and its previous instance's after a restart (`sim.restartContainer`),
// read with `GET /api/v1/namespaces/{ns}/pods/{pod}/log` and its options: container, follow,
// previous, timestamps, tailLines, sinceSeconds, sinceTime, limitBytes. The answers and their
// errors are the API server's (pod/rest/log.go's validation, LogLocation's container choice)
// and the kubelet's (a container waiting to start, no previous instance). A follow streams what
// the container writes until it stops: its restart or its pod's deletion ends the body.

const { sendStatus, commonHeaders } = require('./status');

const NEWLINE = Buffer.from('\n');

/** One container's log: its lines (`{ time, text }`, the text a Buffer) and the followers writing them out. */
class ContainerLog {
  constructor() {
    this.lines = [];
    this.followers = new Set();
  }
}

/** The logs of a simulator's containers, current and previous, by `ns/pod/container`. */
class Logs {
  constructor() {
    this.current = new Map();
    this.previous = new Map();
    /** The responses of the follows open now. */
    this.follows = new Set();
  }

  /**
   * Ends every follow open now: cleanly, as a server ends a body (a proxy's timeout, a log
   * rotation the kubelet does not follow), or `abrupt`ly, as a dropped connection.
   */
  endFollows({ abrupt = false } = {}) {
    for (const res of [...this.follows]) {
      this.follows.delete(res);
      if (abrupt) res.destroy();
      else res.end();
    }
  }

  log(key) {
    let log = this.current.get(key);
    if (!log) this.current.set(key, (log = new ContainerLog()));
    return log;
  }

  /**
   * Appends `text` (one or more lines; a Buffer is written as its bytes, UTF-8 or not, as a
   * container writes them) as written at `time`; followers get it at once.
   */
  write(key, text, time = new Date()) {
    const log = this.log(key);
    const bytes = Buffer.isBuffer(text) ? text : Buffer.from(String(text));
    const parts = [];
    for (let start = 0; start < bytes.length;) {
      const end = bytes.indexOf(0x0a, start);
      parts.push(bytes.subarray(start, end < 0 ? bytes.length : end));
      start = end < 0 ? bytes.length : end + 1;
    }
    const at = time instanceof Date ? time : new Date(time);
    const lines = parts.map((part) => ({ time: at, text: part }));
    for (const line of lines) log.lines.push(line);
    // One write per follower for all the lines (a flood of lines is one chunk, as a kubelet's read is).
    for (const follower of log.followers) follower(lines);
  }

  /** The container restarted: what it wrote is its previous instance's; its followers end. */
  restart(key) {
    const log = this.log(key);
    this.previous.set(key, log);
    this.current.set(key, new ContainerLog());
    for (const follower of log.followers) follower(null);
    log.followers.clear();
  }

  /** The pod is gone: its containers' followers end, and their logs with them. */
  forgetPod(prefix) {
    for (const map of [this.current, this.previous]) {
      for (const [key, log] of map) {
        if (!key.startsWith(prefix)) continue;
        for (const follower of log.followers) follower(null);
        map.delete(key);
      }
    }
  }
}

/** Go's strconv.ParseBool, as the API server reads the boolean options. */
function parseBool(value) {
  if (value === null) return false;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

/** The options of a log request, or `{ error }`: the 400s of decoding, the 422 of validation. */
function parseLogOptions(pod, params) {
  const bad = (message) => ({ error: { code: 400, message, reason: 'BadRequest' } });
  const options = {};
  for (const name of ['follow', 'previous', 'timestamps']) {
    const value = parseBool(params.get(name));
    if (value === undefined) return bad(`invalid value for ${name}: "${params.get(name)}"`);
    options[name] = value;
  }
  for (const name of ['tailLines', 'sinceSeconds', 'limitBytes']) {
    const raw = params.get(name);
    if (raw === null) continue;
    if (!/^-?\d+$/.test(raw))
      return bad(`invalid value for ${name}: strconv.ParseInt: parsing "${raw}": invalid syntax`);
    options[name] = Number(raw);
  }
  const sinceTime = params.get('sinceTime');
  if (sinceTime !== null) {
    const ms = Date.parse(sinceTime);
    if (!/^\d{4}-\d{2}-\d{2}T/.test(sinceTime) || Number.isNaN(ms))
      return bad(`parsing time "${sinceTime}" as "2006-01-02T15:04:05Z07:00": cannot parse`);
    // The API server passes it on to the kubelet as `time.RFC3339`, in whole seconds: the
    // lines from the start of that second come back.
    options.sinceTime = Math.floor(ms / 1000) * 1000;
  }
  const invalid = [];
  if (options.tailLines !== undefined && options.tailLines < 0)
    invalid.push(`tailLines: Invalid value: ${options.tailLines}: must be greater than or equal to 0`);
  if (options.limitBytes !== undefined && options.limitBytes < 1)
    invalid.push(`limitBytes: Invalid value: ${options.limitBytes}: must be greater than 0`);
  if (options.sinceSeconds !== undefined && options.sinceSeconds < 1)
    invalid.push(`sinceSeconds: Invalid value: ${options.sinceSeconds}: must be greater than 0`);
  if (options.sinceSeconds !== undefined && options.sinceTime !== undefined)
    invalid.push('sinceSeconds: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  if (invalid.length) {
    const message = `PodLogOptions "${pod}" is invalid: ${invalid.length === 1 ? invalid[0] : `[${invalid.join(', ')}]`}`;
    return { error: { code: 422, message, reason: 'Invalid' } };
  }
  return { options };
}

/** Go's RFC3339Nano of a time, as the kubelet prefixes a line with `timestamps=true`. */
function rfc3339Nano(date) {
  return date.toISOString().replace(/\.?0+Z$/, 'Z');
}

/**
 * Serves `GET …/pods/{name}/log`.
 * @param {object} sim the Simulator
 */
function serveLog(sim, res, route, params) {
  const pod = sim.store.get('pods', route.namespace, route.name);
  if (!pod)
    return sendStatus(res, 404, `pods "${route.name}" not found`, 'NotFound', {
      name: route.name,
      kind: 'pods',
    });
  const parsed = parseLogOptions(route.name, params);
  if (parsed.error) return sendStatus(res, parsed.error.code, parsed.error.message, parsed.error.reason);
  const options = parsed.options;
  const names = (pod.spec?.containers ?? []).map((c) => c.name);
  let container = params.get('container') ?? '';
  if (container === '') {
    if (names.length !== 1) {
      return sendStatus(
        res,
        400,
        `a container name must be specified for pod ${route.name}, choose one of: [${names.join(' ')}]`,
        'BadRequest',
      );
    }
    container = names[0];
  }
  if (!names.includes(container))
    return sendStatus(res, 400, `container ${container} is not valid for pod ${route.name}`, 'BadRequest');
  const key = `${route.namespace}/${route.name}/${container}`;
  const status = (pod.status?.containerStatuses ?? []).find((s) => s.name === container);
  const waiting = status?.state?.waiting;
  // A container waiting after an instance ended (CrashLoopBackOff): the kubelet serves that
  // instance's log, and a follow ends after it, the container not running.
  const ended = Boolean(waiting && status?.lastState?.terminated && sim.logs.previous.has(key));
  if (options.previous) {
    if (!sim.logs.previous.has(key))
      return sendStatus(
        res,
        400,
        `previous terminated container "${container}" in pod "${route.name}" not found`,
        'BadRequest',
      );
  } else if (waiting && !ended) {
    return sendStatus(
      res,
      400,
      `container "${container}" in pod "${route.name}" is waiting to start: ${waiting.reason ?? 'ContainerCreating'}`,
      'BadRequest',
    );
  }
  const log = options.previous || ended ? sim.logs.previous.get(key) : sim.logs.log(key);
  const since =
    options.sinceTime ??
    (options.sinceSeconds === undefined ? null : Date.now() - options.sinceSeconds * 1000);
  let lines = since === null ? log.lines : log.lines.filter((l) => l.time.getTime() >= since);
  if (options.tailLines !== undefined) lines = options.tailLines === 0 ? [] : lines.slice(-options.tailLines);
  res.writeHead(200, { ...commonHeaders(), 'content-type': 'text/plain' });
  // A follow's headers go at once, as the API server's do, whatever the container has written.
  res.flushHeaders();
  let left = options.limitBytes ?? Infinity;
  /** Writes `batch` (lines) as one chunk; false once `limitBytes` ran out. */
  const write = (batch) => {
    const chunks = [];
    for (const line of batch) {
      if (left <= 0) break;
      const prefix = options.timestamps ? `${rfc3339Nano(line.time)} ` : '';
      let bytes = Buffer.concat([Buffer.from(prefix), line.text, NEWLINE]);
      if (bytes.length > left) bytes = bytes.subarray(0, left);
      left -= bytes.length;
      chunks.push(bytes);
    }
    if (chunks.length > 0) res.write(Buffer.concat(chunks));
    return left > 0;
  };
  if (!write(lines)) return res.end();
  if (!options.follow || options.previous || ended) return res.end();
  const follower = (batch) => {
    if (batch === null || !write(batch)) {
      log.followers.delete(follower);
      res.end();
    }
  };
  log.followers.add(follower);
  sim.logs.follows.add(res);
  res.once('close', () => {
    log.followers.delete(follower);
    sim.logs.follows.delete(res);
  });
  return undefined;
}

/** Whether `route` is a pod's log (`…/namespaces/{ns}/pods/{name}/log`). */
const isLogRoute = (route) =>
  route?.type === 'resource' && route.subresource === 'log' && route.group === '' && route.plural === 'pods';

module.exports = { Logs, serveLog, isLogRoute, rfc3339Nano };
