#!/bin/sh
# The main job: a walk-through of what a domain holder does with sk.
# Makes a sovereign key with backups, cross-signs a fresh server
# certificate, verifies the served chain (and shows a forgery failing),
# checks the carrier with the openssl command, writes a Tor onion service
# and lets a real tor confirm its address, and signs a Bind entry.
set -eu
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
SK=${SK_BIN:-$top/$BUILD/sk}
D=$(mktemp -d /tmp/sk-walkthrough.XXXXXX)
chmod 711 "$D"   # tor drops to its own user and must reach hs/
tor_pid=
cleanup() {
    [ -z "$tor_pid" ] || kill "$tor_pid" 2>/dev/null || true
    [ -n "${SK_KEEP:-}" ] || rm -rf "$D"
}
trap cleanup EXIT INT TERM
NAME=www.example.test

step() { printf '\n== %s\n' "$*"; }
run()  { printf '$ %s\n' "$*"; "$@"; }

cd "$D"
mkdir -p media1 media2 media3

step "1. Make a sovereign key for $NAME, with three backups"
run "$SK" keygen -n $NAME -o sk.key -b media1/sk.key -b media2/sk.key -b media3/sk.key
ls -l sk.key sk.key.pub media1/sk.key | sed 's/^/   /'

step "2. A CA issues an ordinary server certificate (ECDSA P-256)"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 30 -subj "/CN=Walkthrough CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout server.key -out server.csr -subj "/CN=$NAME" 2>/dev/null
printf 'subjectAltName=DNS:%s\n' $NAME > ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile ext.cnf -out server.pem 2>/dev/null
cat server.pem ca.pem > chain.pem
echo "   server.pem: $(openssl x509 -in server.pem -noout -subject -issuer | tr '\n' ' ')"

step "3. The sovereign key cross-signs the server's key (the carrier certificate)"
run "$SK" carrier -k sk.key -c server.pem -n $NAME -s https -o carrier.pem

step "4. Append the carrier to the chain the server sends"
run "$SK" chain -i chain.pem -a carrier.pem -o served.pem
echo "   served.pem holds $(grep -c 'BEGIN CERTIFICATE' served.pem) certificates: leaf, CA, carrier"

step "5. An SK-aware client checks the served chain against the SK"
run "$SK" verify-chain -p sk.key.pub -i served.pem

step "6. A chain cross-signed by another key is refused, saying why"
"$SK" keygen -n $NAME -o evil.key --no-backups-i-accept-the-risk >/dev/null
"$SK" carrier -k evil.key -c server.pem -n $NAME -o evil-carrier.pem
"$SK" chain -i chain.pem -a evil-carrier.pem -o evil-served.pem
if "$SK" verify-chain -p sk.key.pub -i evil-served.pem; then
    echo "walkthrough: a forged cross-signature was accepted" >&2; exit 1
fi

step "7. An independent check: openssl verifies the carrier with the SK"
run "$SK" selfcert -k sk.key -n $NAME -o sk-cert.pem
run openssl verify -partial_chain -trusted sk-cert.pem carrier.pem

step "8. A Tor onion service for the site, from a separate onion key"
run "$SK" onion --new -K onion.key -P 443:127.0.0.1:8443 -o hs --torrc hs.torrc
sed 's/^/   /' hs.torrc
addr=$(cat hs/hostname)

if command -v tor >/dev/null 2>&1; then
    step "9. A real tor (no network) loads the directory and agrees on the address"
    cp hs/hostname sk-hostname
    rm hs/hostname
    tor_user=$(id -un)
    if [ "$(id -u)" = 0 ] && id debian-tor >/dev/null 2>&1; then
        tor_user=debian-tor
        chown -R debian-tor "$D/hs"
        mkdir -m 700 tordata && chown debian-tor tordata
    else
        mkdir -m 700 tordata
    fi
    cat > torrc <<EOT
DisableNetwork 1
SocksPort 0
DataDirectory $D/tordata
User $tor_user
Log notice file $D/tordata/tor.log
%include $D/hs.torrc
EOT
    [ "$tor_user" != "$(id -un)" ] || sed -i '/^User /d' torrc
    tor -f torrc >/dev/null 2>&1 &
    tor_pid=$!
    i=0
    while [ ! -s hs/hostname ] && [ $i -lt 100 ]; do sleep 0.2; i=$((i + 1)); done
    echo "   sk said:  $addr"
    echo "   tor says: $(cat hs/hostname 2>/dev/null || echo '(nothing)')"
    [ "$(cat hs/hostname 2>/dev/null)" = "$addr" ] || { echo "walkthrough: tor disagrees" >&2; exit 1; }
    kill "$tor_pid"; tor_pid=
fi

step "10. Claim the key: a Bind entry, SK-signed, ready for a timeline"
run "$SK" entry bind -k sk.key -n $NAME -s "https;$addr" -c chain.pem -o bind.txt
sed 's/^/   /' bind.txt | cut -c1-100
run "$SK" entry verify -p sk.key.pub -i bind.txt

printf '\nwalkthrough: done\n'
