#!/bin/sh
# Regenerates the TLS fixtures of the simulated API server: all of them, or only the leaves
# named as arguments (signed by the existing CA), e.g. `./generate.sh kube-internal`.
# The client side verifies them with rustls/webpki, which is strict: every certificate is
# X.509 v3 with SKI/AKI, CAs carry critical basicConstraints + keyUsage, leaves carry a SAN
# and an EKU and are explicitly not CAs.
set -eu
cd "$(dirname "$0")"
DAYS=36500
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# EC P-256; genpkey writes PKCS#8 ("BEGIN PRIVATE KEY"), which every TLS stack reads.
key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"
}

cat > "$TMP/ca.ext" <<'X'
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
X

# $1 file, $2 extendedKeyUsage, $3 subjectAltName (none if not given): a leaf's extensions.
leaf_ext() {
  {
    echo 'basicConstraints = critical, CA:FALSE'
    echo 'keyUsage = critical, digitalSignature'
    echo "extendedKeyUsage = $2"
    [ -z "${3:-}" ] || echo "subjectAltName = $3"
    echo 'subjectKeyIdentifier = hash'
    echo 'authorityKeyIdentifier = keyid:always'
  } > "$1"
}

leaf_ext "$TMP/server.ext" serverAuth 'IP:127.0.0.1, DNS:localhost'
# A server certificate for a name other than the address it is served on (tls-server-name).
leaf_ext "$TMP/kube-internal.ext" serverAuth DNS:kube.internal
leaf_ext "$TMP/client.ext" clientAuth

# `openssl ca` rather than `x509 -req`: it can backdate notBefore, so a test machine whose
# clock is a little behind the one that generated the fixtures still accepts them.
# -rand_serial gives positive 159-bit serials, which webpki accepts.
cat > "$TMP/ca.cnf" <<X
[ca]
default_ca = sim
[sim]
database = $TMP/index.txt
new_certs_dir = $TMP
serial = $TMP/serial
default_md = sha256
policy = any
unique_subject = no
email_in_dn = no
[any]
commonName = supplied
organizationName = optional
X
: > "$TMP/index.txt"
echo 01 > "$TMP/serial"

# $1 output name, $2 key, $3 csr, $4 extension file, then extra `openssl ca` arguments.
sign() {
  out=$1 k=$2 csr=$3 ext=$4
  shift 4
  openssl ca -batch -config "$TMP/ca.cnf" -in "$csr" -keyfile "$k" -extfile "$ext" \
    -startdate 20000101000000Z -days "$DAYS" -rand_serial -preserveDN -notext \
    -out "$out" "$@" 2>"$TMP/ca.log" || { cat "$TMP/ca.log" >&2; exit 1; }
}

# $1 name, $2 subject: self-signed root.
ca() {
  key "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "$2" -out "$TMP/$1.csr"
  sign "$1.pem" "$1-key.pem" "$TMP/$1.csr" "$TMP/ca.ext" -selfsign
}

# $1 name, $2 subject, $3 extension file, $4 issuing CA name.
leaf() {
  key "$1-key.pem"
  openssl req -new -key "$1-key.pem" -subj "$2" -out "$TMP/$1.csr"
  sign "$1.pem" "$4-key.pem" "$TMP/$1.csr" "$3" -cert "$4.pem"
}

if [ $# -eq 0 ]; then
  ca ca "/CN=kube-watch-native test CA"
  ca other-ca "/CN=kube-watch-native unrelated CA"
  set -- server client other-client kube-internal
fi
for name in "$@"; do
  case $name in
    server) leaf server "/CN=localhost" "$TMP/server.ext" ca ;;
    client) leaf client "/O=system:masters/CN=test-user" "$TMP/client.ext" ca ;;
    other-client) leaf other-client "/O=system:masters/CN=other-user" "$TMP/client.ext" other-ca ;;
    kube-internal) leaf kube-internal "/CN=kube.internal" "$TMP/kube-internal.ext" ca ;;
    *) echo "generate.sh: unknown fixture '$name' (server, client, other-client, kube-internal)" >&2; exit 2 ;;
  esac
done

openssl verify -CAfile ca.pem server.pem client.pem kube-internal.pem
openssl verify -CAfile other-ca.pem other-client.pem

# Public test fixtures, not secrets: readable by whoever runs the tests.
chmod 644 ./*.pem
