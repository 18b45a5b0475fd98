'use strict';
// A container's log stream (`streamLogs`): the arguments checked into the native LogSpec, and
// each batch's items grouped as the stream yields them.
//
// The native side (src/logs/) requests the log, cuts it into lines on a Rust thread, resumes a
// follow the server ends from the last line delivered, and hands over batches as a plain watch
// does: one JSON array text per batch whose items are a run of whole lines (one string, the
// lines joined by newlines), a piece of a longer line that goes on in the next item (an array
// holding its string), a SKIPPED marker or an ERROR event. Here one
// JSON.parse per batch, then its lines are gathered into one LINES item: a Promise per batch,
// never per line.

const {
  fail,
  optionalBoolean,
  optionalNumber,
  optionalString,
  requireObject,
  requireString,
  toTarget,
} = require('./spec');

/**
 * Type-checks `streamLogs`' arguments into the native LogSpec. Throws TypeError.
 * @param {object} params `{ clusterDetails, credential, namespace, pod, container? }`
 * @param {object} options `{ follow, previous, timestamps, sinceSeconds, sinceTime, tailLines, limitBytes, signal }`
 */
function toLogSpec(params, options, serviceAccountDir) {
  const { cluster, credential } = toTarget(params, serviceAccountDir);
  requireObject(options, 'options');
  const sinceSeconds = optionalNumber(options.sinceSeconds, 'options.sinceSeconds', {
    integer: true,
    min: 1,
  });
  const sinceTime = optionalString(options.sinceTime, 'options.sinceTime');
  if (
    sinceTime !== undefined &&
    !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/.test(sinceTime)
  ) {
    throw fail('options.sinceTime', 'an RFC 3339 time such as 2026-12-06T10:00:00Z', sinceTime);
  }
  if (sinceSeconds !== undefined && sinceTime !== undefined) {
    throw new TypeError('kube-watch-native: options.sinceSeconds and options.sinceTime cannot both be set');
  }
  const namespace = requireString(params.namespace, 'params.namespace', { nonEmpty: true });
  const pod = requireString(params.pod, 'params.pod', { nonEmpty: true });
  const container = optionalString(params.container, 'params.container');
  // Only callers the API server answers the same share a follow: the same cluster (its URL and
  // everything about the connection), the same credential, the same container.
  const share = optionalBoolean(options.share, 'options.share');
  const shareKey = share
    ? JSON.stringify([cluster, credential, namespace, pod, container ?? null])
    : undefined;
  // Built property by property: a spec spread from another object cost each watch about 3 KiB
  // that stayed (RSS +27 MiB over 9 000 watches in longevity.test.js).
  return {
    cluster,
    credential,
    namespace,
    pod,
    container,
    shareKey,
    // A reader of text passes the log on: lines that are not UTF-8 cross as their bytes.
    raw: optionalBoolean(options.text, 'options.text') === true,
    // One definition of the options' fields, the native one (src/logs/query.rs).
    options: JSON.stringify({
      follow: optionalBoolean(options.follow, 'options.follow'),
      previous: optionalBoolean(options.previous, 'options.previous'),
      timestamps: optionalBoolean(options.timestamps, 'options.timestamps'),
      sinceSeconds,
      sinceTime,
      tailLines: optionalNumber(options.tailLines, 'options.tailLines', { integer: true }),
      limitBytes: optionalNumber(options.limitBytes, 'options.limitBytes', { integer: true, min: 1 }),
    }),
  };
}

/**
 * A batch's text as the stream yields it: a newline then lines joined by newlines (a batch of
 * lines that needed no escape crosses so, without JSON: src/batch.rs, `plain_run`) is one LINES
 * item; any other is a JSON array, see `logItems`.
 */
function logBatch(text) {
  if (text.charCodeAt(0) === 10) return [{ type: 'LINES', lines: text.slice(1).split('\n'), continued: [] }];
  return logItems(JSON.parse(text));
}

/**
 * A batch as the `text: true` stream yields it: its lines as one `{ type: 'TEXT', text }`, each
 * whole line with its newline and a piece of a longer line without (the log's text as the API
 * server sent it, timestamps as asked), never split into lines; a line that is not UTF-8 as
 * `{ type: 'BYTES', bytes }` (a Buffer: the bytes the server sent); SKIPPED and ERROR as they are.
 */
function textBatch(text) {
  if (text.charCodeAt(0) === 10) return [{ type: 'TEXT', text: `${text.slice(1)}\n` }];
  const out = [];
  let joined = null;
  for (const item of JSON.parse(text)) {
    if (typeof item === 'string') joined = `${joined ?? ''}${item}\n`;
    else if (Array.isArray(item)) joined = `${joined ?? ''}${item[0]}`;
    else {
      if (joined !== null) out.push({ type: 'TEXT', text: joined });
      joined = null;
      out.push(item.raw === undefined ? item : { type: 'BYTES', bytes: Buffer.from(item.raw, 'base64') });
    }
  }
  if (joined !== null) out.push({ type: 'TEXT', text: joined });
  return out;
}

/**
 * A batch's items as the stream yields them: its lines (strings, and the pieces of longer
 * lines, arrays of one string) gathered into `{ type: 'LINES', lines, continued }`, where
 * `continued` holds the indexes of the pieces whose line goes on in the next one; ERROR events
 * as they are, in order.
 */
function logItems(items) {
  const out = [];
  let lines = null;
  let continued = null;
  for (const item of items) {
    if (typeof item === 'string') {
      // A run of whole lines, joined by newlines (which no line holds).
      if (lines === null) lines = item.split('\n');
      else for (const line of item.split('\n')) lines.push(line);
    } else if (Array.isArray(item)) {
      lines ??= [];
      (continued ??= []).push(lines.length);
      lines.push(item[0]);
    } else {
      if (lines !== null) out.push({ type: 'LINES', lines, continued: continued ?? [] });
      lines = continued = null;
      out.push(item);
    }
  }
  if (lines !== null) out.push({ type: 'LINES', lines, continued: continued ?? [] });
  return out;
}

module.exports = { toLogSpec, logBatch, textBatch };
