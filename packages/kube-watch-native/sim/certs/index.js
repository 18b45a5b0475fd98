'use strict';

// The TLS fixtures as PEM strings (for Node servers and clients) and as paths (for
// kubeconfig-style `caFile` tests). Regenerate them with ./generate.sh.

const fs = require('node:fs');
const path = require('node:path');

const dir = __dirname;
const FILES = {
  ca: 'ca.pem',
  caKey: 'ca-key.pem',
  server: 'server.pem',
  serverKey: 'server-key.pem',
  client: 'client.pem',
  clientKey: 'client-key.pem',
  otherCa: 'other-ca.pem',
  otherCaKey: 'other-ca-key.pem',
  otherClient: 'other-client.pem',
  otherClientKey: 'other-client-key.pem',
  // A server certificate for DNS:kube.internal only (no IP, no localhost): tls-server-name.
  kubeInternal: 'kube-internal.pem',
  kubeInternalKey: 'kube-internal-key.pem',
};

const paths = Object.fromEntries(Object.entries(FILES).map(([k, f]) => [k, path.join(dir, f)]));
const pems = Object.fromEntries(Object.entries(paths).map(([k, p]) => [k, fs.readFileSync(p, 'utf8')]));

module.exports = { ...pems, paths, dir };
