'use strict';

// Resource identity: the simulator names a resource type by a short string key
// (`pods`, `v1/configmaps`, `apps/v1/deployments`) and maps it to the URL segments and the
// kind names the real API server would use.

const CLUSTER_SCOPED = new Set([
  'namespaces',
  'nodes',
  'persistentvolumes',
  'componentstatuses',
  'customresourcedefinitions',
  'apiservices',
  'clusterroles',
  'clusterrolebindings',
  'storageclasses',
  'csidrivers',
  'csinodes',
  'volumeattachments',
  'priorityclasses',
  'runtimeclasses',
  'ingressclasses',
  'certificatesigningrequests',
  'mutatingwebhookconfigurations',
  'validatingwebhookconfigurations',
  'validatingadmissionpolicies',
  'flowschemas',
  'prioritylevelconfigurations',
]);

// Irregular plurals and the multi-word kinds a naive singulariser would get wrong.
const KINDS = {
  pods: 'Pod',
  services: 'Service',
  endpoints: 'Endpoints',
  endpointslices: 'EndpointSlice',
  configmaps: 'ConfigMap',
  secrets: 'Secret',
  serviceaccounts: 'ServiceAccount',
  namespaces: 'Namespace',
  nodes: 'Node',
  events: 'Event',
  limitranges: 'LimitRange',
  resourcequotas: 'ResourceQuota',
  replicationcontrollers: 'ReplicationController',
  persistentvolumes: 'PersistentVolume',
  persistentvolumeclaims: 'PersistentVolumeClaim',
  componentstatuses: 'ComponentStatus',
  deployments: 'Deployment',
  replicasets: 'ReplicaSet',
  statefulsets: 'StatefulSet',
  daemonsets: 'DaemonSet',
  controllerrevisions: 'ControllerRevision',
  jobs: 'Job',
  cronjobs: 'CronJob',
  ingresses: 'Ingress',
  ingressclasses: 'IngressClass',
  networkpolicies: 'NetworkPolicy',
  horizontalpodautoscalers: 'HorizontalPodAutoscaler',
  poddisruptionbudgets: 'PodDisruptionBudget',
  customresourcedefinitions: 'CustomResourceDefinition',
  apiservices: 'APIService',
  roles: 'Role',
  rolebindings: 'RoleBinding',
  clusterroles: 'ClusterRole',
  clusterrolebindings: 'ClusterRoleBinding',
  storageclasses: 'StorageClass',
  csidrivers: 'CSIDriver',
  csinodes: 'CSINode',
  volumeattachments: 'VolumeAttachment',
  priorityclasses: 'PriorityClass',
  runtimeclasses: 'RuntimeClass',
  leases: 'Lease',
  certificatesigningrequests: 'CertificateSigningRequest',
  mutatingwebhookconfigurations: 'MutatingWebhookConfiguration',
  validatingwebhookconfigurations: 'ValidatingWebhookConfiguration',
  validatingadmissionpolicies: 'ValidatingAdmissionPolicy',
  flowschemas: 'FlowSchema',
  prioritylevelconfigurations: 'PriorityLevelConfiguration',
};

/**
 * Splits a resource key into its URL parts.
 * @param {string} key `pods`, `v1/pods`, `apps/v1/deployments` (`core/v1/pods` also accepted)
 * @returns {{group: string, version: string, plural: string}}
 */
function parseKey(key) {
  if (typeof key !== 'string' || key === '') throw new TypeError('resource key must be a non-empty string');
  const parts = key.split('/');
  if (parts.length > 3 || parts.some((p, i) => p === '' && !(parts.length === 3 && i === 0))) {
    throw new TypeError(
      `invalid resource key "${key}" (expected plural, version/plural or group/version/plural)`,
    );
  }
  if (parts.length === 1) return { group: '', version: 'v1', plural: parts[0] };
  if (parts.length === 2) return { group: '', version: parts[0], plural: parts[1] };
  const group = parts[0] === 'core' ? '' : parts[0];
  return { group, version: parts[1], plural: parts[2] };
}

/**
 * The canonical key for a resource type, so `pods`, `v1/pods` and `core/v1/pods` name the
 * same store. Core v1 resources are just their plural.
 * @param {string|{group?: string, version?: string, apiVersion?: string, plural?: string, resource?: string}} spec
 *   a key, or the parts; `apiVersion` (`apps/v1`) may replace group+version
 * @param {string} [version] with a group string as first argument
 * @param {string} [plural] with a group string as first argument
 * @returns {string}
 */
function resourceKey(spec, version, plural) {
  let parts;
  if (typeof spec === 'string' && version !== undefined) {
    parts = { group: spec, version, plural };
  } else if (typeof spec === 'string') {
    parts = parseKey(spec);
  } else if (spec && typeof spec === 'object') {
    let group = spec.group || '';
    let ver = spec.version;
    if (!ver && spec.apiVersion) {
      const slash = spec.apiVersion.indexOf('/');
      group = slash >= 0 ? spec.apiVersion.slice(0, slash) : '';
      ver = slash >= 0 ? spec.apiVersion.slice(slash + 1) : spec.apiVersion;
    }
    parts = { group, version: ver || 'v1', plural: spec.plural || spec.resource };
  } else {
    throw new TypeError('resourceKey expects a key string or { group, version, plural }');
  }
  if (!parts.plural) throw new TypeError('resource key needs a plural');
  const group = parts.group === 'core' ? '' : parts.group || '';
  if (group === '') return parts.version === 'v1' ? parts.plural : `${parts.version}/${parts.plural}`;
  return `${group}/${parts.version}/${parts.plural}`;
}

function guessKind(plural) {
  if (KINDS[plural]) return KINDS[plural];
  let s = plural;
  if (/ies$/.test(s)) s = s.slice(0, -3) + 'y';
  else if (/(ss|x|ch|sh|z)es$/.test(s)) s = s.slice(0, -2);
  else if (/s$/.test(s) && !/ss$/.test(s)) s = s.slice(0, -1);
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/**
 * Builds the description of a resource type.
 * @param {string} key any accepted key form
 * @param {{namespaced?: boolean, kind?: string, listKind?: string}} [options]
 * @returns {{key: string, group: string, version: string, plural: string, apiVersion: string,
 *   namespaced: boolean, kind: string, listKind: string}}
 */
function describeResource(key, options = {}) {
  const canonical = resourceKey(key);
  const { group, version, plural } = parseKey(canonical);
  const kind = options.kind || guessKind(plural);
  return {
    key: canonical,
    group,
    version,
    plural,
    apiVersion: group ? `${group}/${version}` : version,
    namespaced: options.namespaced ?? !CLUSTER_SCOPED.has(plural),
    kind,
    listKind: options.listKind || `${kind}List`,
    // Served by the API server's own types (whose list items carry no kind or apiVersion),
    // not from a CRD's unstructured JSON (whose items keep both).
    builtin: Boolean(options.builtin),
  };
}

module.exports = { parseKey, resourceKey, describeResource, guessKind, CLUSTER_SCOPED };
