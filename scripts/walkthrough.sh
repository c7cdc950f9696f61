#!/bin/sh
# The main job: a walk-through of the whole system on loopback.
# Makes a sovereign key with backups, cross-signs a fresh server
# certificate, verifies the served chain (and shows a forgery failing),
# checks the carrier with the openssl command, writes a Tor onion service
# and lets a real tor confirm its address; then claims the key on three real
# sk-timelines (and a second name with DNSSEC evidence from a private
# signed hierarchy), lets an sk-mirror replicate them, serves the name from
# Debian's nginx with the module and from a private Postfix with sk-milter,
# asks `sk verify` what an SK-aware client decides about both and about an
# impostor with a certificate from the same CA, shows a first contact
# decided from the proof nginx staples in the handshake with no mirror
# reachable, refuses a lying mirror that hides the SK (the timelines' name
# maps prove it there), has `sk fetch` refuse that impostor in the handshake and get
# the real page through the site's onion service over a private Tor
# network, and last revokes the SK.
set -eu
BUILD=${BUILD:-build}
top=$(cd "$(dirname "$0")/.." && pwd)
SK=${SK_BIN:-$top/$BUILD/sk}
D=$(mktemp -d /tmp/sk-walkthrough.XXXXXX)
chmod 711 "$D"   # tor drops to its own user and must reach hs/
tor_pid=
pids=
cleanup() {
    [ -z "$tor_pid" ] || kill "$tor_pid" 2>/dev/null || true
    for p in $pids; do kill "$p" 2>/dev/null || true; done
    # Each stops what it started before the directory goes (demo-mail.pl
    # runs `postfix -c` on its config there: removed first, a master was
    # left running); at most 10 s each.
    for p in $pids; do
        i=0
        while kill -0 "$p" 2>/dev/null && [ $i -lt 100 ]; do
            sleep 0.1; i=$((i + 1))
        done
    done
    [ -n "${SK_KEEP:-}" ] || rm -rf "$D"
}
trap cleanup EXIT INT TERM
NAME=www.example.test

step() { printf '\n== %s\n' "$*"; }
run()  { printf '$ %s\n' "$*"; "$@"; }
die()  { echo "walkthrough: $*" >&2; exit 1; }
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# wait_for SECONDS COMMAND...: until the command succeeds
wait_for() {
    n=$(($1 * 5)); shift
    while ! "$@" >/dev/null 2>&1; do
        n=$((n - 1)); [ $n -gt 0 ] || return 1; sleep 0.2
    done
}

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

step "10. Claim the key: the CA certifies the SK's key for the name, the SK signs a Bind"
# The timeline checks this evidence: a CA it trusts vouched that the key
# holder of the SK held the name when it was claimed.
openssl req -new -key sk.key -subj "/CN=$NAME" -out sk.csr 2>/dev/null
openssl x509 -req -in sk.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile ext.cnf -out sk-evidence.pem 2>/dev/null
cat sk-evidence.pem ca.pem > sk-evidence-chain.pem
run "$SK" entry bind -k sk.key -n $NAME -s "https;$addr,smtp,smtps;$addr" -c sk-evidence-chain.pem -o bind.txt
sed 's/^/   /' bind.txt | cut -c1-100
run "$SK" entry verify -p sk.key.pub -i bind.txt

step "10b. A second name, example.test, claims its SK with DNSSEC evidence, no CA"
# A private DNSSEC hierarchy: ".", "test." and "example.test." signed with
# ldns-signzone, the record below in example.test.  No DNS server here: the
# chain is built from the signed zone files, the bytes `sk dnssec chain`
# collects through a resolver (t/timeline-dnssec.t does, via NSD+Unbound).
"$SK" keygen -n example.test -o sk2.key --no-backups-i-accept-the-risk >/dev/null
run "$SK" dnssec record -k sk2.key.pub -n example.test
mkdir zones
"$top/tests/unit/dnssec_zones.sh" "$D/zones" \
    "$("$SK" pubkey -p sk2.key.pub | sed 's/.*sha256:\([0-9a-f]*\).*/\1/')" >/dev/null
"$top/$BUILD/tests/dnssec_chain" zones ex ex test root > example.test.chain
run "$SK" entry bind -k sk2.key -n example.test -s https --dnssec-chain example.test.chain -o bind2.txt
grep '^DNSSEC-Chain' bind2.txt | cut -c1-76 | sed 's/^/   /; s/$/.../'

step "11. Three timelines (sk-timeline), each trusting the walkthrough CA"
openssl genpkey -algorithm ed25519 -out operator.key 2>/dev/null
chmod 600 operator.key
openssl pkey -in operator.key -pubout -out operator.pub
tls=
for tid in 7 8 9; do
    port=$(free_port)
    mkdir -p tl$tid
    cat > tl$tid.conf <<EOT
listen = 127.0.0.1:$port
data_dir = $D/tl$tid
tid = $tid
operator_key = $D/operator.pub
chunk_interval = 1
evidence = ca, dnssec
dnssec_anchors = $D/zones/root.ds
EOT
    "$top/$BUILD/sk-timeline" -c tl$tid.conf 2>tl$tid.log &
    pids="$pids $!"
    wait_for 10 curl -sf "http://127.0.0.1:$port/checkpoint" || die "timeline $tid did not start: $(cat tl$tid.log)"
    echo "   timeline $tid on http://127.0.0.1:$port"
    tls="$tls -t http://127.0.0.1:$port"
    eval "tl${tid}_url=http://127.0.0.1:$port"
done
run "$SK" entry add-root-ca -k operator.key -c ca.pem --serial 1 -o add-root.txt
# shellcheck disable=SC2086
run "$SK" register -i add-root.txt $tls

step "12. Register the Bind on every timeline"
# shellcheck disable=SC2086
run "$SK" register -i bind.txt $tls
if "$SK" register -i bind.txt -t "$tl7_url" >claim-again.out 2>&1; then
    die "a second Bind for $NAME was accepted"
fi
echo "   a second Bind for the name is refused: $(grep -m1 -o '403.*' claim-again.out || cat claim-again.out)"
# shellcheck disable=SC2086
run "$SK" register -i bind2.txt $tls

step "13. A mirror (sk-mirror) replicates the timelines and answers name queries"
mport=$(free_port)
cat > mirror.conf <<EOT
listen = 127.0.0.1:$mport
data_dir = $D/mirror
timeline = 7 $tl7_url $D/tl7/timeline.pub
timeline = 8 $tl8_url $D/tl8/timeline.pub
timeline = 9 $tl9_url $D/tl9/timeline.pub
poll_interval = 1
dnssec_anchors = $D/zones/root.ds
EOT
mkdir -p mirror
"$top/$BUILD/sk-mirror" -c mirror.conf 2>mirror.log &
pids="$pids $!"
# mirror_entries N [NAME]: the mirror's answer for the name holds N entries
mirror_entries() {
    [ "$(curl -sf "http://127.0.0.1:$mport/query/${2:-$NAME}" | grep -c '^Entry: ')" -ge "$1" ]
}
wait_for 30 mirror_entries 3 || die "the mirror did not sync: $(cat mirror.log)"
wait_for 30 mirror_entries 3 example.test || die "the mirror did not sync example.test: $(cat mirror.log)"
echo "   example.test: $(curl -sf "http://127.0.0.1:$mport/query/example.test" | grep -c '^DNSSEC-Chain: ') Binds, each with its DNSSEC-Chain, checked again by the mirror"
curl -sf "http://127.0.0.1:$mport/query/$NAME" | grep '^SK-Mirror\|^Timeline: \|^Entry: ' | sed 's/^/   /'
# t1 = 0: ask the mirror every time (by default a view younger than half
# an hour answers from the client's cache, and the revocation below would
# wait for it).
cat > trust.conf <<EOT
timeline = 7 $D/tl7/timeline.pub
timeline = 8 $D/tl8/timeline.pub
timeline = 9 $D/tl9/timeline.pub
mirror = http://127.0.0.1:$mport $D/mirror/mirror.pub
t1 = 0
EOT

step "14. Debian's nginx serves the site with the module: the carrier, the stapled proof, Onion-Location"
nport=$(free_port); eport=$(free_port)
mkdir -p nginx/html
mkdir -m 777 staples     # nginx's workers keep the stapled proof here
echo "hello from $NAME" > nginx/html/index.html
cat > nginx/nginx.conf <<EOT
load_module $top/$BUILD/ngx/ngx_http_sk_module.so;
daemon off;
pid $D/nginx/nginx.pid;
error_log $D/nginx/error.log notice;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $D/nginx/body;
    proxy_temp_path $D/nginx/proxy;
    fastcgi_temp_path $D/nginx/fastcgi;
    uwsgi_temp_path $D/nginx/uwsgi;
    scgi_temp_path $D/nginx/scgi;
    root $D/nginx/html;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_certificate $D/chain.pem;
    ssl_certificate_key $D/server.key;
    server {                    # the real site
        listen 127.0.0.1:$nport ssl;
        server_name $NAME;
        sovereign_key_public $D/sk.key.pub;
        sovereign_key_carrier $D/carrier.pem;
        sovereign_key_onion $addr;
        sovereign_key_staple extension;
        sovereign_key_trust $D/trust.conf;
        sovereign_key_staple_cache $D/staples;
        location / { }
        location = /.well-known/sovereign-key { sovereign_key_status; }
    }
    server {                    # an impostor with a mis-issued certificate
        listen 127.0.0.1:$eport ssl;
        server_name $NAME;
        access_log $D/nginx/impostor.log;
        location / { }
    }
}
EOT
grep -A7 'the real site' nginx/nginx.conf | sed 's/^/   /'
# An ASan-built module (make SAN=1) loads into Debian's nginx only with the
# sanitizer runtime preloaded.
set -- nginx
if [ "${SAN:-}" = 1 ]; then
    set -- env LD_PRELOAD="$(gcc -print-file-name=libasan.so)" ASAN_OPTIONS=detect_leaks=0 nginx
fi
"$@" -p "$D/nginx" -c "$D/nginx/nginx.conf" -e "$D/nginx/error.log" -t 2>&1 | sed 's/^/   /'
"$@" -p "$D/nginx" -c "$D/nginx/nginx.conf" -e "$D/nginx/error.log" 2>nginx/stderr.log &
pids="$pids $!"
wait_for 10 curl -sk "https://127.0.0.1:$nport/" || die "nginx did not start: $(cat nginx/error.log)"
curl -sk -D - -o /dev/null --resolve "$NAME:$nport:127.0.0.1" "https://$NAME:$nport/" \
    | grep -i '^onion-location' | sed 's/^/   /'
# A worker fetches the stapled proof from the mirror in the background.
wait_for 20 "$SK" staple show --connect 127.0.0.1:$nport --servername $NAME \
    || die "nginx staples no proof: $(cat nginx/error.log)"
curl -sk --resolve "$NAME:$nport:127.0.0.1" "https://$NAME:$nport/.well-known/sovereign-key" | cut -c1-160 | sed 's/^/   /'
grep -o 'sovereign_key_staple .*' nginx/error.log | head -1 | sed 's/^/   /'
echo

step "15. Postfix serves the name too: sk-milter staples the carrier on SMTP TLS"
if command -v postfix >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout mail.key -out mail.csr -subj "/CN=$NAME" 2>/dev/null
    openssl x509 -req -in mail.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days 30 -extfile ext.cnf -out mail.pem 2>/dev/null
    mkdir -m 700 keycache
    run "$SK" carrier -k sk.key -c mail.pem -n $NAME -s smtp,smtps -o mail-carrier.pem
    run "$SK" publish -a mail-carrier.pem --cache "$D/keycache"
    cat mail.key mail.pem ca.pem > mail-source.pem
    chmod 600 mail-source.pem
    mkdir mail
    perl "$top/scripts/demo-mail.pl" "$D/mail" $NAME "$D/mail-source.pem" "$D/keycache" > mail.ports 2>mail.log &
    pids="$pids $!"
    wait_for 60 grep -q smtps mail.ports || die "Postfix and sk-milter did not start: $(cat mail.log)"
    smtp=$(awk '{print $2}' mail.ports); smtps=$(awk '{print $4}' mail.ports)
    grep 'carrier served' mail/sk-milter.log | sed 's/^/   /'
else
    echo "   (skipped: needs postfix and root)"
fi

step "16. What an SK-aware client decides (sk verify: mirror, freshness, carrier)"
verify() { "$SK" verify --trust trust.conf --cache client-cache "$@"; }
run verify --connect 127.0.0.1:$nport "https://$NAME:$nport"
if [ -n "${smtp:-}" ]; then
    run verify --connect 127.0.0.1:$smtp "smtp://$NAME:$smtp"
    run verify --connect 127.0.0.1:$smtps "smtps://$NAME:$smtps"
fi

step "17. A first contact with no mirror reachable: the proof stapled in the handshake decides"
# The client asks for TLS extension 0xFF53; nginx answers with the mirror's
# signed answer, which the client checks as if it had fetched it itself.
run "$SK" staple show --connect 127.0.0.1:$nport --servername $NAME --trust trust.conf
deadm="http://127.0.0.1:$(free_port)"
run "$SK" verify --trust trust.conf --mirror "$deadm" --mirror-key "$D/mirror/mirror.pub" \
    --cache first-contact --connect 127.0.0.1:$nport "https://$NAME:$nport" 2>&1

step "18. The impostor: a certificate for the name from the same (compromised) CA, no cross-signature"
rc=0
verify --connect 127.0.0.1:$eport "https://$NAME:$eport" || rc=$?
[ $rc -eq 1 ] || die "the impostor was not rejected (exit $rc)"
echo "   exit $rc: refused, although an ordinary client would accept its CA-valid chain"

step "18b. A lying mirror answers that $NAME has no SK: refused, the honest one is asked"
# A proxy with a mirror key of its own (t/lib/SKLiar.pm) in front of the real
# mirror, listed first in a trust file: it leaves the name's entries out of
# every timeline and signs what it altered.  Each timeline's checkpoint ends
# in a Map-Root entry, whose map proof shows the name is there: the answer
# is refused like a bad signature, and the next mirror decides.
mkdir -p liar
openssl genpkey -algorithm ed25519 -out liar/liar.key 2>/dev/null
openssl pkey -in liar/liar.key -pubout -out liar/liar.pub
echo absent > liar/lie
lport=$(free_port)
perl -I"$top/t/lib" -MSKLiar -e 'SKLiar::serve(@ARGV)' "$D/liar" \
    "http://127.0.0.1:$mport" "$lport" 2>liar.log &
pids="$pids $!"
wait_for 10 curl -sf -o /dev/null "http://127.0.0.1:$lport/query/$NAME" \
    || die "the lying mirror did not start: $(cat liar.log)"
echo "   the liar's answer for $NAME: $(curl -sf "http://127.0.0.1:$lport/query/$NAME" | grep -c '^Entry: ') entries; the mirror's: $(curl -sf "http://127.0.0.1:$mport/query/$NAME" | grep -c '^Entry: ')"
{ grep '^timeline' trust.conf
  echo "mirror = http://127.0.0.1:$lport $D/liar/liar.pub"
  grep '^mirror' trust.conf; } > trust-liar.conf
rc=0
run "$SK" verify --trust trust-liar.conf --cache liar-cache --no-staple \
    --connect 127.0.0.1:$eport "https://$NAME:$eport" 2>&1 || rc=$?
[ $rc -eq 1 ] || die "the lying mirror was believed (exit $rc)"

if command -v tor >/dev/null 2>&1 && command -v tor-gencert >/dev/null 2>&1; then
    step "19. sk fetch: the impostor gets nothing, the page comes through the onion route"
    # A private Tor network on loopback (3 authorities, 3 relays) carries the
    # onion service of step 8 in front of the real nginx; the Bind lists its
    # address as the https route.  TLS through it still names $NAME.
    perl "$top/scripts/demo-tor.pl" "$D/hs" "$addr" "$eport" "$eport 127.0.0.1:$nport" \
        > tor.ports 2>tor.log &
    pids="$pids $!"
    wait_for 120 grep -q socks tor.ports || die "the Tor network did not come up: $(cat tor.log)"
    socks=$(awk '{print $2}' tor.ports)
    echo "   Tor's SOCKS port: 127.0.0.1:$socks"
    run "$SK" fetch -v --trust trust.conf --cache client-cache --cacert ca.pem \
        --tor 127.0.0.1:$socks --resolve "$NAME:$eport:127.0.0.1" "https://$NAME:$eport/" 2>&1
    echo "   the impostor's access log: $(wc -l < nginx/impostor.log) requests"
    [ ! -s nginx/impostor.log ] || die "a request reached the impostor"
else
    step "19. sk fetch through the onion route: (skipped: needs tor and tor-gencert)"
fi

step "20. The holder revokes the SK (an Unbind on every timeline); the next check sees it"
# shellcheck disable=SC2086
run "$SK" revoke -k sk.key -n $NAME $tls
wait_for 30 mirror_entries 6 || die "the mirror did not see the Unbind: $(cat mirror.log)"
# A client that asks the mirrors sees it at once.  The proof nginx staples
# is from before the Unbind: clients that take it learn of the revocation
# when the site refreshes it (staple_refresh, 10 minutes), and no view
# from before it decides once it is 45 minutes old (staple_max_age, T2):
# every client that checks sees an Unbind within the hour.
rc=0
verify --no-staple --connect 127.0.0.1:$nport "https://$NAME:$nport" || rc=$?
[ $rc -eq 3 ] || die "after the Unbind sk verify still enforces the SK (exit $rc)"
echo "   exit $rc: no SK in force for $NAME any more"

printf '\nwalkthrough: done\n'
