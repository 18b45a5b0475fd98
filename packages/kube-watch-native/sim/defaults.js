'use strict';
// What a simulator is made of before a test changes it: the options it takes, the server
// certificates it can present, and the resource types a fresh cluster serves.

const { testOnly } = require('./test-only');

/** The options createSimulator() takes; any other is a TypeError. */
const OPTION_KEYS = new Set([
  'tls',
  'http2',
  'requireClientCert',
  'token',
  'tokens',
  'pathPrefix',
  'bookmarkIntervalMs',
  'defaultTimeoutSeconds',
  'historyLimit',
  'gzip',
  'maxConcurrentStreams',
  'keepAliveTimeoutMs',
  'port',
  'discovery',
  'sendInitialEvents',
  'expiredAs',
  'serverCertificate',
  'metadataAs',
]);

// The certificates the simulator can serve (`serverCertificate`): the default one is for
// 127.0.0.1 and localhost; 'kube.internal' names only that host (tls-server-name tests).
// The TLS fixtures are the repository's (./test-only.js): read when a TLS simulator starts.
const SERVER_CERTIFICATES = {
  localhost: () => ({ cert: testOnly('./certs').server, key: testOnly('./certs').serverKey }),
  'kube.internal': () => ({
    cert: testOnly('./certs').kubeInternal,
    key: testOnly('./certs').kubeInternalKey,
  }),
};

// What a fresh cluster serves before any CRD is installed; anything else is 404 until
// defineResource() or create() introduces it.
const BUILTIN_RESOURCES = [
  'pods',
  'services',
  'endpoints',
  'configmaps',
  'secrets',
  'limitranges',
  'resourcequotas',
  'serviceaccounts',
  'events',
  'namespaces',
  'nodes',
  'persistentvolumes',
  'persistentvolumeclaims',
  'apps/v1/deployments',
  'apps/v1/replicasets',
  'apps/v1/statefulsets',
  'apps/v1/daemonsets',
  'batch/v1/jobs',
  'batch/v1/cronjobs',
  'networking.k8s.io/v1/ingresses',
  'autoscaling/v2/horizontalpodautoscalers',
  'apiextensions.k8s.io/v1/customresourcedefinitions',
];

module.exports = { OPTION_KEYS, SERVER_CERTIFICATES, BUILTIN_RESOURCES };
