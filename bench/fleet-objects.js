'use strict';
// The fleet benchmark's objects: ConfigMaps shaped as `kubectl apply` and a real API server
// leave them, with `metadata.managedFields` (the field manager's set, in FieldsV1) and the
// `kubectl.kubernetes.io/last-applied-configuration` annotation repeating the applied object,
// the two parts that `strip` removes.

/** `bytes` of deterministic filler text. */
const filler = (seed, bytes) => {
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += `${seed}-${i}-`;
  return s.slice(0, bytes);
};

/** A ConfigMap `name` in `namespace` whose data is about `dataBytes` long. */
function configMap(namespace, name, dataBytes = 600) {
  const data = { 'config.yaml': filler(name, dataBytes), round: '0' };
  const labels = { app: 'fleet', tier: name.endsWith('0') ? 'a' : 'b' };
  const applied = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data };
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace,
      labels,
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': `${JSON.stringify(applied)}\n`,
      },
      managedFields: [
        {
          manager: 'kubectl-client-side-apply',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-11-30T12:00:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:data': { '.': {}, 'f:config.yaml': {}, 'f:round': {} },
            'f:metadata': {
              'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} },
              'f:labels': { '.': {}, 'f:app': {}, 'f:tier': {} },
            },
          },
        },
      ],
    },
    data,
  };
}

module.exports = { configMap };
