'use strict';

// The JSON text of stored objects, made once per object version when the store records it
// (sim/store.js), so that serving a list or a watch copies bytes instead of serialising: the
// API server's watch cache keeps each object's encoding too (cachingObject), and a simulator
// that serialised on every request would bill its own work to the benchmark of a client.
//
// An object's one text is its ADDED event line, `{"type":"ADDED","object":{…}}\n`. Every other
// form is cut or copied from it: a MODIFIED (or DELETED) line swaps the prefix, and a list
// item, which carries no kind or apiVersion (the list does), is the object's text after its
// leading `"kind":…,"apiVersion":…,` (the store always writes those two first).
// Stored objects are immutable (an update stores a new object), so the cache never goes stale.

const PREFIX = { ADDED: Buffer.from('{"type":"ADDED","object":') };
const EOL_BYTES = 2; // the `}\n` closing an event line

const texts = new WeakMap();

function prefix(type) {
  return (PREFIX[type] ??= Buffer.from(`{"type":"${type}","object":`));
}

/** The text of stored object `obj`: `{ line, itemStart }` (itemStart -1: no leading type meta). */
function textOf(obj) {
  let t = texts.get(obj);
  if (!t) {
    const json = JSON.stringify(obj);
    const line = Buffer.from(`{"type":"ADDED","object":${json}}\n`);
    const head =
      typeof obj.kind === 'string' && typeof obj.apiVersion === 'string'
        ? `{"kind":${JSON.stringify(obj.kind)},"apiVersion":${JSON.stringify(obj.apiVersion)},`
        : null;
    const itemStart = head && json.startsWith(head) ? PREFIX.ADDED.length + Buffer.byteLength(head) : -1;
    t = { line, itemStart };
    texts.set(obj, t);
  }
  return t;
}

/** The ADDED event line of stored object `obj` (shared: never write into it). */
function addedLine(obj) {
  return textOf(obj).line;
}

/** The `type` event line (ADDED, MODIFIED, DELETED) of `obj`: a copy of its text with that prefix. */
function eventLineOf(type, obj) {
  const line = addedLine(obj);
  if (type === 'ADDED') return line;
  return Buffer.concat([prefix(type), line.subarray(PREFIX.ADDED.length)]);
}

/**
 * `obj` as a list item, without its kind and apiVersion and without the item's opening `{`
 * (the list writes it): a view of the object's text when the object leads with its type meta,
 * else a fresh serialisation.
 */
function itemBody(obj) {
  const t = textOf(obj);
  if (t.itemStart >= 0) return t.line.subarray(t.itemStart, t.line.length - EOL_BYTES);
  const { kind: _k, apiVersion: _a, ...rest } = obj;
  return Buffer.from(JSON.stringify(rest).slice(1));
}

/**
 * `obj` as an item of a custom resource's list, without the item's opening `{`: custom
 * resources are served from their unstructured JSON, whose list items keep the `kind` and
 * `apiVersion` that built-in types' items leave to the list.
 */
function fullItemBody(obj) {
  const { line } = textOf(obj);
  return line.subarray(PREFIX.ADDED.length + 1, line.length - EOL_BYTES);
}

/** The byte length of the JSON text of `obj` as the store holds it. */
function textBytes(obj) {
  return addedLine(obj).length - PREFIX.ADDED.length - EOL_BYTES;
}

module.exports = { addedLine, eventLineOf, itemBody, fullItemBody, textBytes };
