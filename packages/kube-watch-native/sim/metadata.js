'use strict';

// Metadata-only lists and watches, as the API server serves them to client-go's metadata
// informers: an `Accept` of `application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
// (lists) or `…as=PartialObjectMetadata…` (watches) gets a `meta.k8s.io/v1`
// `PartialObjectMetadataList` whose items, like each watch event's object, are
// `{ kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata }`.
//
// The simulator option `metadataAs` plays the servers that do not: 'serve' (default) as above,
// 'refuse' answers 406 Not Acceptable as a server without the conversion does, 'ignore' serves
// the full objects as if the parameter were not there.

const API_VERSION = 'meta.k8s.io/v1';

/** The `as=` kind asked for by an Accept header, or null. Parameters may come in any order. */
function partialKind(accept) {
  if (typeof accept !== 'string') return null;
  for (const range of accept.split(',')) {
    const [type, ...params] = range.split(';').map((p) => p.trim());
    if (type !== 'application/json') continue;
    const p = Object.fromEntries(params.map((kv) => kv.split('=').map((s) => s.trim())));
    if (p.g === 'meta.k8s.io' && p.v === 'v1' && /^PartialObjectMetadata(List)?$/.test(p.as)) return p.as;
  }
  return null;
}

/** An object as a PartialObjectMetadata. */
function asPartial(object) {
  return { kind: 'PartialObjectMetadata', apiVersion: API_VERSION, metadata: object.metadata };
}

// Watch lines converted, cached per line (lines are shared by every watcher of a store).
const converted = new WeakMap();

/** A watch line whose object is a PartialObjectMetadata (BOOKMARK and ERROR lines as they are). */
function partialLine(buf) {
  let out = converted.get(buf);
  if (!out) {
    const event = JSON.parse(buf.toString('utf8'));
    out =
      event.type === 'BOOKMARK' || event.type === 'ERROR'
        ? buf
        : Buffer.from(`${JSON.stringify({ type: event.type, object: asPartial(event.object) })}\n`);
    converted.set(buf, out);
  }
  return out;
}

module.exports = { partialKind, asPartial, partialLine, API_VERSION };
