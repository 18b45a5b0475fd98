'use strict';
// What of a request's credential may key a shared cache, and how. Only a credential that is the
// backend's own (a server-side provider's) is shared as it comes; a viewer's own is shared only
// where the config opts in with a service account token (./access.js then asks for each viewer).
//
// A cache is keyed by everything that decides where and how its requests are sent, the
// connection (URL, CA, TLS verification, proxy, server name and the whole `authMetadata`) and
// the credential, both as a keyed hash: HMAC with a key of the process's own, so that equal
// credentials share a key while no key tells anything of the secret, even one easy to guess.

const crypto = require('node:crypto');

/**
 * Auth providers whose credential is the backend's own, the same for every viewer; any other
 * (google, oidc and aks use the viewer's token from the request's `auth`; a custom strategy may
 * too) is never answered from a cache shared between users.
 */
const SERVER_SIDE_PROVIDERS = new Set([
  'serviceAccount',
  'aws',
  'azure',
  'googleServiceAccount',
  'localKubectlProxy',
]);

/**
 * A cluster whose provider takes the viewer's credential, configured with a service account
 * token as well (which Backstage itself ignores for such providers): the opt-in to caching it
 * with that token while each viewer's access is asked with its own (./access.js).
 */
function isViewerChecked(clusterDetails) {
  const authMetadata = clusterDetails?.authMetadata ?? {};
  const token = authMetadata.serviceAccountToken;
  return (
    !SERVER_SIDE_PROVIDERS.has(authMetadata['kubernetes.io/auth-provider']) &&
    typeof token === 'string' &&
    token.length > 0
  );
}

/** Whether the request's credential is the backend's own, and so may key a shared cache. */
function sharedCredential(clusterDetails, credential) {
  const provider = clusterDetails?.authMetadata?.['kubernetes.io/auth-provider'];
  if (!SERVER_SIDE_PROVIDERS.has(provider) || !credential) return false;
  return credential.type !== 'anonymous' || provider === 'localKubectlProxy';
}

/** The key of the HMAC that turns credentials into identity keys: this process's own, never stored. */
const IDENTITY_KEY = crypto.randomBytes(32);

/** A keyed hash: equal for equal texts, and telling nothing of the text without the process's key. */
function keyedHash(text) {
  return crypto.createHmac('sha256', IDENTITY_KEY).update(text).digest('base64url');
}

/** The secret part of a credential, as one string (only ever hashed). */
function credentialSecret(credential) {
  switch (credential.type) {
    case 'bearer token':
      return `bearer\n${credential.token}`;
    case 'x509 client certificate':
      return `x509\n${credential.cert}\n${credential.key}`;
    default:
      return String(credential.type);
  }
}

/** Everything of the cluster's details that decides where and how a request is sent. */
function connectionOf(clusterDetails) {
  const authMetadata = clusterDetails.authMetadata ?? {};
  return [
    clusterDetails.url,
    clusterDetails.caData ?? '',
    clusterDetails.caFile ?? '',
    Boolean(clusterDetails.skipTLSVerify),
    clusterDetails.proxyUrl ?? '',
    clusterDetails.tlsServerName ?? '',
    Object.keys(authMetadata)
      .sort()
      .map((k) => [k, authMetadata[k]]),
  ];
}

module.exports = {
  SERVER_SIDE_PROVIDERS,
  isViewerChecked,
  sharedCredential,
  keyedHash,
  credentialSecret,
  connectionOf,
};
