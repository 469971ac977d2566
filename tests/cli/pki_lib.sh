# Test certificates made with openssl, under the directory $K. Source after lib.sh and set K.
#   newkey FILE                    a P-256 private key, mode 600
#   mkca NAME CN                   a self-signed CA: $K/NAME.pem and $K/NAME.key
#   mkcert NAME CA CN EXTENSIONS   a certificate signed by $K/CA.pem with the given extensions
#   mkpki                          ca, server (127.0.0.1), client; other and its intruder
#   tls_config FILE CERT KEY CA    a daemon configuration with TLS (mutual when CA is set)
newkey() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null && chmod 600 "$1"; }
mkca() { # NAME CN
    newkey "$K/$1.key" &&
        openssl req -x509 -new -key "$K/$1.key" -out "$K/$1.pem" -days 2 -subj "/CN=$2" \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
mkcert() { # NAME CA CN EXTENSIONS
    newkey "$K/$1.key" &&
        openssl req -new -key "$K/$1.key" -out "$K/$1.csr" -subj "/CN=$3" 2>/dev/null &&
        printf '%s\n' "$4" >"$K/$1.ext" &&
        openssl x509 -req -in "$K/$1.csr" -CA "$K/$2.pem" -CAkey "$K/$2.key" -CAcreateserial \
            -days 2 -extfile "$K/$1.ext" -out "$K/$1.pem" 2>/dev/null
}
# mkpki: a CA (ca), a server certificate for 127.0.0.1 (server), a client certificate (client),
# another CA (other) and a client certificate from it (intruder). Returns non-zero on failure.
mkpki() {
    mkca ca "wattage test CA" &&
        mkcert server ca 127.0.0.1 "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth" &&
        mkcert client ca scraper "extendedKeyUsage=clientAuth" &&
        mkca other "another CA" &&
        mkcert intruder other scraper "extendedKeyUsage=clientAuth"
}
# tls_config FILE CERT KEY CA: a daemon configuration with TLS (and mutual TLS when CA is set)
tls_config() {
    printf 'daemon:\n  tls:\n    cert: "%s"\n    key: "%s"\n    client_ca: "%s"\n' "$2" "$3" "$4" >"$1"
}
