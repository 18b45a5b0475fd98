'use strict';

// Field selectors as the API server applies them: `field=value`, `field==value` and
// `field!=value` joined by commas, over the fields each resource type supports
// (metadata.name and metadata.namespace everywhere, plus a few per type). Any other field is
// answered 400 `field label not supported`, as the real server does.

const { SelectorError } = require('./selector');

/** Fields beyond metadata.name/metadata.namespace, per plural (core and named groups alike). */
const EXTRA_FIELDS = {
  pods: [
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.nominatedNodeName',
  ],
  namespaces: ['status.phase'],
  nodes: ['spec.unschedulable'],
  secrets: ['type'],
  // The API server's event fields (event/strategy.go): `source` is the source's component.
  events: [
    'involvedObject.kind',
    'involvedObject.namespace',
    'involvedObject.name',
    'involvedObject.uid',
    'involvedObject.apiVersion',
    'involvedObject.resourceVersion',
    'involvedObject.fieldPath',
    'reason',
    'reportingComponent',
    'source',
    'type',
  ],
  replicasets: ['status.replicas'],
  jobs: ['status.successful'],
};

function fieldValue(obj, field) {
  if (field === 'source') return String(obj.source?.component ?? '');
  let v = obj;
  for (const part of field.split('.')) v = v && typeof v === 'object' ? v[part] : undefined;
  // Absent fields compare as the empty string; booleans and numbers as their text.
  if (v === undefined || v === null)
    return field === 'spec.hostNetwork' || field === 'spec.unschedulable' ? 'false' : '';
  return String(v);
}

/**
 * @param {string|null} text the fieldSelector query parameter
 * @param {{plural: string}} def the resource description
 * @returns {(obj: object) => boolean}
 * @throws {SelectorError}
 */
function compileFieldSelector(text, def) {
  if (text === null || text === undefined || text.trim() === '') return () => true;
  const allowed = new Set(['metadata.name', 'metadata.namespace', ...(EXTRA_FIELDS[def.plural] || [])]);
  const requirements = text.split(',').map((part) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*([^,]*?)\s*$/.exec(part);
    if (!m) throw new SelectorError(`invalid selector: '${text}'; can't understand '${part}'`);
    const [, field, op, value] = m;
    if (!allowed.has(field)) throw new SelectorError(`field label not supported: ${field}`);
    return { field, equal: op !== '!=', value };
  });
  return (obj) => requirements.every((r) => (fieldValue(obj, r.field) === r.value) === r.equal);
}

module.exports = { compileFieldSelector, EXTRA_FIELDS };
