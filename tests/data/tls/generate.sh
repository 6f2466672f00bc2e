#!/bin/sh
# Regenerates the test certificates of tests/mcp_tls.rs with the openssl command line.
# They are checked in (valid 100 years, the expired one for 2020 only) so that the tests
# need neither openssl nor a certificate crate: run this only to change them.
#   ca.pem            a test CA (its key is thrown away)
#   localhost.pem/key localhost and 127.0.0.1, signed by the CA
#   wrong-name.pem/key wrong.example only, signed by the CA
#   expired.pem/key   localhost and 127.0.0.1, signed by the CA, valid in 2020 only
set -eu
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1"; }
key "$work/ca.key"
openssl req -x509 -new -key "$work/ca.key" -days 36500 -subj "/CN=tdsl test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem
cat > "$work/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
certificate = ca.pem
private_key = $work/ca.key
default_md = sha256
policy = any
copy_extensions = none
unique_subject = no
[any]
commonName = supplied
CNF
: > "$work/index.txt"
echo 1000 > "$work/serial"
leaf() { # name SAN startdate enddate
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$1" -out "$work/$1.csr"
  printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$2" > "$work/$1.ext"
  openssl ca -batch -notext -config "$work/ca.cnf" -in "$work/$1.csr" -out "$1.pem" \
    -startdate "$3" -enddate "$4" -extfile "$work/$1.ext"
}
leaf localhost "DNS:localhost,IP:127.0.0.1" 20260101000000Z 21260101000000Z
leaf wrong-name "DNS:wrong.example" 20260101000000Z 21260101000000Z
leaf expired "DNS:localhost,IP:127.0.0.1" 20200101000000Z 20210101000000Z
