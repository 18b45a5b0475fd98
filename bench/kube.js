'use strict';
// How the benchmarks' clients reach a simulated cluster: its CA (sim/certs), a bearer token, and
// a resource, put as client-node's KubeConfig and as the native watcher's params want them.

const certs = require('../packages/kube-watch-native/sim/certs');

/** The simulators' CA, base64 PEM as a kubeconfig carries it. */
const CA_DATA = Buffer.from(certs.ca).toString('base64');

/** A client-node KubeConfig of one cluster `name` at `server` (its CA `caData`) and its user `token`. */
function kubeConfig(k8s, { name, server, token, caData, skipTLSVerify }) {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name, server, caData, skipTLSVerify }],
    users: [{ name, token }],
    contexts: [{ name, cluster: name, user: name }],
    currentContext: name,
  });
  return kc;
}

/** The native watcher's params for `plural` of `group`/`version` on cluster `name` at `url`. */
const resourceParams = ({ name, url, token, caData }, { group = '', version = 'v1', plural }) => ({
  clusterDetails: { name, url, authMetadata: {}, caData },
  credential: { type: 'bearer token', token },
  group,
  apiVersion: version,
  plural,
});

module.exports = { CA_DATA, kubeConfig, resourceParams };
