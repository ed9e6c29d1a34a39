#!/bin/sh
# Certificates for the TLS tests (unwindd_tls_test.cc), made at test time in
# DIR with Debian's openssl; valid for one day, EC P-256 keys.
#
#   make_tls_certs.sh DIR
#
# DIR/ca.pem            the CA unwindd trusts for clients (--tls-client-ca),
#                       which also signs the server's certificate
# DIR/server.{pem,key}  the server: SAN DNS:localhost, IP:127.0.0.1
# DIR/profiler.{pem,key}  client: CN=profiler-cn, SAN DNS:profiler
# DIR/debugger.{pem,key}  client: CN=debugger, no SAN
# DIR/stranger.{pem,key}  client: CN=stranger (signed, but in no rule)
# DIR/rogue.{pem,key}   client: CN=debugger, signed by another CA
set -eu
cd "$1"

# key NAME: a fresh P-256 key in NAME.key.
key() {
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null
}

# ca NAME CN: a self-signed CA certificate NAME.pem.
ca() {
  key "$1"
  openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 1 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# leaf NAME CN CA USAGE [SAN]: NAME.pem for NAME.key, signed by CA.
leaf() {
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$4"
    if [ -n "${5:-}" ]; then echo "subjectAltName=$5"; fi
  } > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$3.pem" -CAkey "$3.key" -set_serial "0x$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')" \
    -days 1 -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

ca ca "unwindd test CA"
ca other_ca "another CA"
leaf server localhost ca serverAuth "DNS:localhost,IP:127.0.0.1"
leaf profiler profiler-cn ca clientAuth "DNS:profiler"
leaf debugger debugger ca clientAuth
leaf stranger stranger ca clientAuth
leaf rogue debugger other_ca clientAuth
