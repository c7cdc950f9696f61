#!/bin/bash
# bench_nginx.sh -- full TLS 1.3 handshakes (no resumption, ECDSA P-256
# leaf) against Debian's nginx with ngx_sk_module stapling a carrier (A)
# and without the module (B), in interleaved pairs of short windows
# (A B, B A, ...).  Per window: handshakes, the nginx worker's
# utime+stime (/proc/PID/stat), the client's own CPU.  Reports:
#
#   nginx-handshake-cpu          handshakes per server-CPU-second, A vs B
#                                (ratio: median of the pair ratios)
#   nginx-handshake-rate         handshakes per second (the offered rate)
#   nginx-client-cpu-openssl     client CPU per handshake, OpenSSL client
#   nginx-client-cpu-gnutls      the same with a GnuTLS client
#   nginx-carrier-bytes          bytes the server sent per handshake, A-B,
#                                against the carrier's DER size
#
# With NGINX_BENCH=metrics (bench_nginx_metrics.sh) it compares A with
# the same nginx serving sovereign_key_metrics on a second port (M), M B,
# B M, ..., OpenSSL client only, and checks M counted every handshake:
#
#   nginx-metrics-cost           handshakes per server-CPU-second, M vs A
#                                (ratio: median of the pair ratios)
#
# Environment: BUILD (build dir), PAIRS (10), WINDOW (seconds, 2),
# RATE (offered handshakes/s, 600), THREADS (4).
set -euo pipefail

BUILD=${BUILD:-build}
PAIRS=${PAIRS:-10}
WINDOW=${WINDOW:-2}
RATE=${RATE:-600}
THREADS=${THREADS:-4}
MODE=${NGINX_BENCH:-module}
top=$(cd "$(dirname "$0")/../.." && pwd)
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
MOD=$BUILD/ngx/ngx_http_sk_module.so
SK=${SK_BIN:-$BUILD/sk}

if [ ! -f "$MOD" ] || [ ! -x /usr/sbin/nginx ]; then
    echo "bench_nginx: no nginx or no $MOD: skipped"
    exit 0
fi
make -s -C "$top" BUILD="${BUILD#$top/}" ngx >/dev/null
CLIENT=$BUILD/bench/nginx_client

tmp=$(mktemp -d /tmp/bench-nginx.XXXXXX)
chmod 0755 "$tmp"
cleanup() {
    for v in a b m; do
        [ -f "$tmp/$v/nginx.pid" ] && kill -QUIT "$(cat "$tmp/$v/nginx.pid")" 2>/dev/null
    done
    sleep 0.3
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

q() { "$@" >/dev/null 2>&1; }
cd "$tmp"
q openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout ca.key -out ca.pem -days 30 -subj "/CN=Bench CA"
q openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout leaf.key -out leaf.csr -subj "/CN=a.test"
printf 'subjectAltName=DNS:a.test\nbasicConstraints=CA:FALSE\n' >leaf.ext
q openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
    -days 30 -extfile leaf.ext -out leaf.pem
cat leaf.pem ca.pem >chain.pem
q "$SK" keygen -n a.test -o sk.key --no-backups-i-accept-the-risk
q "$SK" carrier -k sk.key -c leaf.pem -n a.test -o carrier.pem
chmod 0644 carrier.pem
carrier_bytes=$(openssl x509 -in carrier.pem -outform DER | wc -c)

# $1 = a (module), b (no module) or m (module, metrics on port $3),
# $2 = port
start_nginx() {
    local v=$1 port=$2 load='' sk='' metrics=''
    mkdir -p "$tmp/$v"
    if [ "$v" != b ]; then
        load="load_module $MOD;"
        sk="sovereign_key_public $tmp/sk.key.pub; sovereign_key_carrier $tmp/carrier.pem;"
    fi
    if [ "$v" = m ]; then
        metrics="server { listen 127.0.0.1:$3; location = /metrics { sovereign_key_metrics; } }"
    fi
    cat >"$tmp/$v/nginx.conf" <<EOF
$load
worker_processes 1;
pid $tmp/$v/nginx.pid;
error_log $tmp/$v/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $tmp/$v/cb; proxy_temp_path $tmp/$v/px;
    fastcgi_temp_path $tmp/$v/fc; uwsgi_temp_path $tmp/$v/uw; scgi_temp_path $tmp/$v/sc;
    server {
        listen 127.0.0.1:$port ssl;
        server_name a.test;
        ssl_protocols TLSv1.3;
        ssl_session_tickets off;
        ssl_session_cache off;
        ssl_certificate $tmp/chain.pem;
        ssl_certificate_key $tmp/leaf.key;
        $sk
    }
    $metrics
}
EOF
    /usr/sbin/nginx -p "$tmp/$v" -c "$tmp/$v/nginx.conf" -e "$tmp/$v/error.log"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
# The two variants compared: X (measured) and Y (its reference).
declare -A port worker
if [ "$MODE" = metrics ]; then X=m Y=a; else X=a Y=b; fi
for v in $X $Y; do
    port[$v]=$(free_port)
    [ "$v" != m ] || mport=$(free_port)
    start_nginx "$v" "${port[$v]}" "${mport:-}"
done
sleep 0.5

worker_of() { pgrep -P "$(cat "$tmp/$1/nginx.pid")" | head -1; }
for v in $X $Y; do worker[$v]=$(worker_of "$v"); done
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# window VARIANT CLIENT: "handshakes server_cpu client_cpu bytes errors"
window() {
    local v=$1 client=$2 t0 t1 out
    t0=$(ticks "${worker[$v]}")
    out=$("$client" 127.0.0.1 "${port[$v]}" a.test "$tmp/ca.pem" "$THREADS" "$WINDOW" "$RATE")
    t1=$(ticks "${worker[$v]}")
    echo "$out" | awk -v s="$(( t1 - t0 ))" -v hz="$hz" '{
        for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
        print f["handshakes"], s / hz, f["cpu"], f["bytes_in"], f["errors"] }'
}

# run CLIENT: interleaved pairs; prints one line per window: V hs scpu ccpu bytes err
run() {
    local client=$1 i
    window $X "$client" >/dev/null       # warm up both
    window $Y "$client" >/dev/null
    for i in $(seq 1 "$PAIRS"); do
        if [ $((i % 2)) = 1 ]; then
            echo "a $(window $X "$client")"; echo "b $(window $Y "$client")"
        else
            echo "b $(window $Y "$client")"; echo "a $(window $X "$client")"
        fi
    done
}

# A table of windows (a: X, b: Y) -> per-pair ratios and totals.
summarise() {
    awk -v want="$1" '
        function median(arr, n,   i, j, t) {
            for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
                if (arr[j] < arr[i]) { t = arr[i]; arr[i] = arr[j]; arr[j] = t }
            return n % 2 ? arr[(n + 1) / 2] : (arr[n / 2] + arr[n / 2 + 1]) / 2
        }
        {
            v = $1; k = int((NR - 1) / 2) + 1
            hs[v] += $2; scpu[v] += $3; ccpu[v] += $4; by[v] += $5; err[v] += $6
            ws[v, k] = $2 / $3; wc[v, k] = $4 / $2; n = k
        }
        END {
            for (k = 1; k <= n; k++) { rs[k] = ws["a", k] / ws["b", k]; rc[k] = wc["a", k] / wc["b", k] }
            if (want == "server")
                printf "%.1f %.1f %.4f %.1f %.1f %d\n", hs["a"] / scpu["a"], hs["b"] / scpu["b"],
                    median(rs, n), hs["a"] / (n * '"$WINDOW"'), hs["b"] / (n * '"$WINDOW"'), err["a"] + err["b"]
            else if (want == "client")
                printf "%.1f %.1f %.4f\n", 1e6 * ccpu["a"] / hs["a"], 1e6 * ccpu["b"] / hs["b"], median(rc, n)
            else
                printf "%.1f\n", by["a"] / hs["a"] - by["b"] / hs["b"]
        }'
}

run "$CLIENT" >"$tmp/openssl.txt"
if [ "$MODE" = metrics ]; then
    read -r sa sb sr ra rb errs < <(summarise server <"$tmp/openssl.txt")
    # Every handshake M took (the windows, the warm-up) must be counted.
    taken=$(awk '$1 == "a" { n += $2 } END { print n }' "$tmp/openssl.txt")
    counted=$(curl -s "http://127.0.0.1:$mport/metrics" \
        | awk 'index($1, "sk_nginx_carrier_handshakes_total{") == 1 { n += $2 }
               END { print n + 0 }')
    echo "pairs=$PAIRS window=${WINDOW}s offered=$RATE/s threads=$THREADS errors=$errs"
    echo "sk_nginx_carrier_handshakes_total $counted after $taken handshakes in the measured windows"
    if [ -z "$counted" ] || [ "$counted" -lt "$taken" ]; then
        echo "bench_nginx: the metrics did not count the handshakes" >&2
        exit 1
    fi
    awk -v a="$sa" -v b="$sb" -v r="$sr" 'BEGIN {
        printf "BENCH nginx-metrics-cost %s hs/cpu-s ref=%s ratio=%s target=0.98\n", a, b, r }'
    exit 0
fi
run "$CLIENT"_gnutls >"$tmp/gnutls.txt"

read -r sa sb sr ra rb errs < <(summarise server <"$tmp/openssl.txt")
read -r ca cb cr < <(summarise client <"$tmp/openssl.txt")
read -r ga gb gr < <(summarise client <"$tmp/gnutls.txt")
added=$(summarise bytes <"$tmp/openssl.txt")

echo "pairs=$PAIRS window=${WINDOW}s offered=$RATE/s threads=$THREADS errors=$errs"
echo "server CPU per handshake: module $(awk -v x="$sa" 'BEGIN{printf "%.1f", 1e6/x}') us, none $(awk -v x="$sb" 'BEGIN{printf "%.1f", 1e6/x}') us"
awk -v a="$sa" -v b="$sb" -v r="$sr" 'BEGIN {
    printf "BENCH nginx-handshake-cpu %s hs/cpu-s ref=%s ratio=%s target=0.98\n", a, b, r }'
awk -v a="$ra" -v b="$rb" 'BEGIN {
    printf "BENCH nginx-handshake-rate %s hs/s ref=%s ratio=%.4f target=0.98\n", a, b, a / b }'
awk -v a="$ca" -v b="$cb" -v r="$cr" 'BEGIN {
    printf "BENCH nginx-client-cpu-openssl %s us/hs ref=%s ratio=%s target=1.10\n", a, b, r }'
awk -v a="$ga" -v b="$gb" -v r="$gr" 'BEGIN {
    printf "BENCH nginx-client-cpu-gnutls %s us/hs ref=%s ratio=%s target=1.10\n", a, b, r }'
awk -v a="$added" -v b="$carrier_bytes" 'BEGIN {
    printf "BENCH nginx-carrier-bytes %s bytes ref=%s ratio=%.4f target=1.05\n", a, b, a / b }'
