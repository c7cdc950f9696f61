#!/bin/bash
# make test-packages: build the .debs (scripts/build-debs.sh), check them
# with lintian, install them on this machine with apt-get, and check them as
# an operator would:
#   - nginx loads the module through its modules-enabled load file (nginx -t
#     on the system configuration, and a private nginx serving a carrier);
#   - the units pass systemd-analyze verify, and security scores them "OK"
#     or better;
#   - each daemon starts from its unit's exact ExecStartPre/ExecStart lines
#     (parsed from the installed unit: PID 1 here is not systemd) as its
#     system user, reports READY=1 on $NOTIFY_SOCKET, and serves: the milter
#     answers miltertest on its packaged socket and reloads on ExecReload;
#   - sk-renew-hook, as certbot calls it, deploys a renewal with the same
#     key, refuses one with a new key (the old certificate keeps serving)
#     and prints the sk carrier command that, once run, lets it deploy;
#   - a modified conffile survives a reinstall, remove keeps state, purge
#     removes it, and nothing is left behind but the system users.
# Whatever happens, every daemon it started is stopped and the packages are
# purged.  Root only; prints "ok"/"not ok" lines and a summary.
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
PKGS="sk-tools libnginx-mod-http-sovereign-key sk-milter sk-timeline sk-mirror"
UNITS="sk-milter.service sk-timeline.service sk-mirror.service sk-check.service
       sk-milter-postfix.service"
export DEBIAN_FRONTEND=noninteractive
APT="apt-get -y -q -o DPkg::Lock::Timeout=300"

if [ "$(id -u)" != 0 ]; then
    echo "test-packages: needs root (it installs packages)" >&2
    exit 1
fi

work=$(mktemp -d /tmp/sk-pkgtest.XXXXXX)
chmod 0755 "$work"
pass=0 fail=0
pids=""

ok() {          # NAME, then a command: "ok"/"not ok" by its status
    local name=$1
    shift
    if "$@" >>"$work/checks.log" 2>&1; then
        pass=$((pass + 1))
        echo "ok - $name"
    else
        fail=$((fail + 1))
        echo "not ok - $name"
        tail -5 "$work/checks.log" | sed 's/^/#   /'
    fi
}

installed() {   # the packages of ours dpkg knows (installed or config-files)
    dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' $PKGS 2>/dev/null \
        | awk '$2 ~ /^[ir]/ { print $1 }'
}

stop_pid() {    # TERM, up to 10 s, then KILL
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || :
}

cleanup() {
    local p
    for p in $pids; do
        stop_pid "$p"
    done
    # What systemd removes when the unit stops.
    rm -rf /run/sk-milter
    p=$(installed)
    if [ -n "$p" ]; then
        # shellcheck disable=SC2086
        $APT purge $p >>"$work/apt.log" 2>&1 || echo "test-packages: purge failed, see $work/apt.log" >&2
    fi
    [ -n "${SK_TEST_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
    perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(Listen => 1,
        LocalAddr => "127.0.0.1", LocalPort => 0)->sockport, "\n"'
}

wait_for() {    # SECONDS, then a command: poll it every 0.1 s
    local n=$(($1 * 10))
    shift
    while [ $n -gt 0 ]; do
        "$@" 2>/dev/null && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}

# A datagram socket standing in for systemd's notify socket; each message
# is appended to OUT as a line.  Writable by the daemons' users.
notify_listen() {   # SOCKET OUT
    perl -MSocket -e '
        my ($path, $out) = @ARGV;
        socket(my $s, AF_UNIX, SOCK_DGRAM, 0) or die "socket: $!";
        bind($s, pack_sockaddr_un($path)) or die "bind $path: $!";
        chmod 0666, $path;
        $| = 1;
        open my $f, ">>", $out or die "$out: $!";
        $f->autoflush(1);
        while (defined recv($s, my $m, 4096, 0)) { print $f "$m\n" }
    ' "$1" "$2" &
    pids="$pids $!"
    wait_for 5 test -S "$1"
}

# KEY of the [Service] section of an installed unit (the last one set).
unit_get() {    # UNIT KEY
    sed -n "s/^$2=//p" "/lib/systemd/system/$1" | tail -1
}

# Run a unit's command line as systemd would: its User and Group, UMask,
# RuntimeDirectory, NOTIFY_SOCKET; "-" prefixes dropped.  It execs: call it
# in a subshell, or with "&" (then $! is the daemon's pid).
run_as_unit() {     # UNIT COMMAND-LINE
    local unit=$1 user group umask rt
    user=$(unit_get "$unit" User)
    group=$(unit_get "$unit" Group)
    umask=$(unit_get "$unit" UMask)
    rt=$(unit_get "$unit" RuntimeDirectory)
    if [ -n "$rt" ] && [ ! -d "/run/$rt" ]; then
        install -d -o "$user" -g "$group" \
            -m "$(unit_get "$unit" RuntimeDirectoryMode)" "/run/$rt"
    fi
    # shellcheck disable=SC2086
    umask "${umask:-0022}"
    cd /
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        NOTIFY_SOCKET="$work/notify-$unit" \
        setpriv --reuid="$user" --regid="$group" --init-groups -- ${2#-}
}

# Start UNIT from its ExecStartPre and ExecStart lines; wait for READY=1.
start_unit() {      # UNIT
    local unit=$1 pre
    : >"$work/$unit.notify"
    notify_listen "$work/notify-$unit" "$work/$unit.notify" || return 1
    pre=$(unit_get "$unit" ExecStartPre)
    if [ -n "$pre" ] && ! (run_as_unit "$unit" "$pre") >"$work/$unit.pre" 2>&1; then
        cat "$work/$unit.pre"
        return 1
    fi
    run_as_unit "$unit" "$(unit_get "$unit" ExecStart)" >"$work/$unit.log" 2>&1 &
    eval "pid_$(echo "$unit" | tr -c 'a-z0-9\n' _)=$!"
    pids="$pids $!"
    if ! wait_for 20 grep -qx READY=1 "$work/$unit.notify"; then
        cat "$work/$unit.log"
        return 1
    fi
}

runs_as() {         # PID USER
    [ "$(ps -o user= -p "$1")" = "$2" ]
}

# ---- build, lint, install ----------------------------------------------
t0=$(date +%s)
for p in $(installed); do
    echo "test-packages: $p is installed already; purging it first"
done
p=$(installed)
# shellcheck disable=SC2086
[ -z "$p" ] || $APT purge $p >>"$work/apt.log" 2>&1

snapshot() {
    find /etc /var /lib/systemd /usr/lib/nginx /usr/share/nginx /usr/bin \
        /usr/sbin /usr/share/doc /usr/share/man -xdev 2>/dev/null \
        | grep -Ev '^/var/(lib/(apt|dpkg|nginx)|cache|log|tmp|backups|mail|spool)(/|$)|^/etc/(passwd|group|shadow|gshadow|subuid|subgid)-?$|^/etc/ld\.so\.cache$' \
        | sort
}
snapshot >"$work/before"

if ! "$top/scripts/build-debs.sh" "$work/debs" >"$work/build.out" 2>&1; then
    cat "$work/build.out"
    echo "not ok - the packages build"
    exit 1
fi
echo "ok - dpkg-buildpackage -b builds the packages ($(($(date +%s) - t0)) s)"
pass=$((pass + 1))
debs=""
for p in $PKGS; do
    debs="$debs $work/debs/${p}_"*.deb
done
debs=$(echo $debs)

lint() {
    lintian --fail-on error,warning --pedantic "$work"/debs/*.changes \
        | tee "$work/lintian.txt"
    ! grep -E '^[EW]: ' "$work/lintian.txt"
}
ok "lintian: no errors or warnings (overrides give reasons)" lint

# Nothing but our packages may be installed or upgraded (other tests use
# the system's nginx, postfix, tor, redis binaries).
only_ours() {
    # shellcheck disable=SC2086
    $APT -s install --no-install-recommends $debs >"$work/sim" || return 1
    ! grep -E '^Inst ' "$work/sim" | grep -Ev "^Inst ($(echo $PKGS | tr ' ' '|')) "
}
ok "apt-get would install nothing but these packages" only_ours
# shellcheck disable=SC2086
if ! $APT install --no-install-recommends $debs >>"$work/apt.log" 2>&1; then
    tail -20 "$work/apt.log"
    echo "not ok - apt-get install ./*.deb"
    exit 1
fi
echo "ok - apt-get install ./*.deb"
pass=$((pass + 1))

# ---- files, users, conffiles --------------------------------------------
conffiles() {
    dpkg-query -W -f='${Conffiles}\n' $PKGS | awk 'NF { print $1 }' | sort \
        | tr '\n' ' ' | grep -qx '/etc/sk-milter.conf /etc/sk-mirror.conf /etc/sk-timeline.conf /etc/sk/renew.conf '
}
ok "the configurations are conffiles" conffiles
users() {
    local u
    for u in sk-milter sk-timeline sk-mirror; do
        getent passwd "$u" | grep -q ":/var/lib/$u:/usr/sbin/nologin$" || return 1
        [ "$(stat -c %U:%G /var/lib/$u)" = "$u:$u" ] || return 1
    done
}
ok "each daemon has its system user and /var/lib state directory" users

# ---- nginx ------------------------------------------------------------------
loadfile() {
    [ "$(readlink /etc/nginx/modules-enabled/50-mod-http-sovereign-key.conf)" \
        = /usr/share/nginx/modules-available/mod-http-sovereign-key.conf ] \
        && grep -qx 'load_module modules/ngx_http_sk_module.so;' \
            /usr/share/nginx/modules-available/mod-http-sovereign-key.conf
}
ok "the module's load file is enabled in /etc/nginx/modules-enabled" loadfile
system_nginx() {
    nginx -t && nginx -T 2>/dev/null | grep -q '^load_module modules/ngx_http_sk_module.so;'
}
ok "nginx -t: the system nginx loads the module through it" system_nginx

# ---- systemd units ---------------------------------------------------------
verify_units() {
    local out
    out=$(cd /lib/systemd/system && systemd-analyze verify sk-*.service \
        sk-*.timer sk-*.path 2>&1) || { echo "$out"; return 1; }
    [ -z "$out" ] || { echo "$out"; return 1; }
}
ok "systemd-analyze verify: every unit clean" verify_units
verify_user_unit() {
    local out
    out=$(systemd-analyze verify /usr/lib/systemd/user/sk-proxy.service 2>&1) \
        || { echo "$out"; return 1; }
    [ -z "$out" ] || { echo "$out"; return 1; }
}
ok "systemd-analyze verify: the user unit sk-proxy.service clean" verify_user_unit
for u in $UNITS; do
    level=$(systemd-analyze security --offline=yes "/lib/systemd/system/$u" \
        2>/dev/null | sed -n 's/.*Overall exposure level for [^:]*: //p')
    ok "systemd-analyze security $u: $level" \
        eval 'case "$level" in *PERFECT* | *SAFE* | *OK*) true ;; *) false ;; esac'
done

# ---- the daemons, from their units -----------------------------------------
tl_port=$(free_port)
mr_port=$(free_port)
cat >/etc/sk-timeline.conf <<EOF
listen   = 127.0.0.1:$tl_port
data_dir = /var/lib/sk-timeline
tid      = 7
EOF
ok "sk-timeline starts from its unit, reports READY=1" start_unit sk-timeline.service
ok "sk-timeline runs as sk-timeline" runs_as "${pid_sk_timeline_service:-0}" sk-timeline
tl_key() {
    [ "$(stat -c %U:%a /var/lib/sk-timeline/timeline.key)" = sk-timeline:600 ] \
        && curl -sf "http://127.0.0.1:$tl_port/checkpoint" | grep -q '^sk-timeline-7$'
}
ok "sk-timeline made its key (0600) and serves a checkpoint" tl_key

mkdir -p "$work/pub"
cp /var/lib/sk-timeline/timeline.pub "$work/pub/tl7.pub"
chmod 0644 "$work/pub/tl7.pub"
cat >/etc/sk-mirror.conf <<EOF
listen   = 127.0.0.1:$mr_port
data_dir = /var/lib/sk-mirror
timeline = 7 http://127.0.0.1:$tl_port $work/pub/tl7.pub
EOF
ok "sk-mirror starts from its unit, reports READY=1" start_unit sk-mirror.service
ok "sk-mirror runs as sk-mirror" runs_as "${pid_sk_mirror_service:-0}" sk-mirror
mr_sync() {
    curl -sf "http://127.0.0.1:$mr_port/status" | grep -q '"state":"Idle"'
}
ok "sk-mirror syncs the timeline" wait_for 20 mr_sync

ok "sk-milter starts from its unit and packaged configuration, reports READY=1" \
    start_unit sk-milter.service
ok "sk-milter runs as sk-milter" runs_as "${pid_sk_milter_service:-0}" sk-milter
milter_socket() {
    [ "$(stat -c %U:%G:%a /run/sk-milter/sk-milter.sock)" = sk-milter:sk-milter:660 ] \
        && [ "$(stat -c %U:%G:%a /run/sk-milter)" = sk-milter:sk-milter:750 ]
}
ok "its socket is for group sk-milter only" milter_socket
cat >"$work/milter.lua" <<'EOF'
local conn = mt.connect("unix:/run/sk-milter/sk-milter.sock", 20, 0.1)
if conn == nil then error("connect failed") end
if mt.macro(conn, SMFIC_MAIL, "{daemon_name}", "smtpd", "{client_addr}",
    "127.0.0.1") ~= nil then error("macro") end
if mt.mailfrom(conn, "<a@nosk.test>") ~= nil then error("mailfrom") end
if mt.header(conn, "From", "a@nosk.test") ~= nil then error("header") end
if mt.eom(conn) ~= nil then error("eom") end
if mt.getreply(conn) ~= SMFIR_CONTINUE then error("not continue") end
if not mt.eom_check(conn, MT_HDRINSERT, "Authentication-Results") then
    error("no Authentication-Results") end
local h = mt.getheader(conn, "Authentication-Results", 0)
if h == nil or not string.find(h, "sk=none") then
    error("header is " .. tostring(h)) end
mt.disconnect(conn)
EOF
ok "the packaged milter stamps mail (miltertest on its socket)" \
    miltertest -s "$work/milter.lua"
reload_milter() {
    local cmd
    cmd=$(unit_get sk-milter.service ExecReload)
    cmd=${cmd//\$MAINPID/${pid_sk_milter_service:-0}}
    $cmd && wait_for 10 grep -q 'reloaded /etc/sk-milter.conf' "$work/sk-milter.service.log"
}
ok "ExecReload (SIGHUP) reloads the milter's configuration" reload_milter

for u in sk-milter sk-mirror sk-timeline; do
    eval "stop_pid \${pid_$(echo "$u" | tr - _)_service:-0}"
done
stopped() {
    grep -qx STOPPING=1 "$work/sk-milter.service.notify" \
        && grep -qx STOPPING=1 "$work/sk-timeline.service.notify" \
        && grep -qx STOPPING=1 "$work/sk-mirror.service.notify"
}
ok "each daemon reports STOPPING=1 on SIGTERM" stopped

# ---- certificate renewal: sk-renew-hook as certbot's deploy hook --------
s=$work/signer le=$work/le ngx=$work/nginx
mkdir -p "$s" "$le/archive/example.test" "$le/live/example.test" "$ngx/logs"
chmod 0755 "$ngx"
(
    set -e
    cd "$s"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout ca.key -out ca.pem -days 30 -subj /CN=Test-CA 2>/dev/null
    sk keygen -n example.test -o sk.key --no-backups-i-accept-the-risk
    cp sk.key.pub "$work/pub/sk.pub"
) >>"$work/checks.log" 2>&1
# archive/example.test/{cert,privkey,fullchain}N.pem, as certbot keeps them.
issue() {       # N [KEY-FROM]: certificate N, with key N or KEY-FROM's
    local n=$1 a=$le/archive/example.test
    if [ -n "${2:-}" ]; then
        cp "$a/privkey$2.pem" "$a/privkey$n.pem"
    else
        openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 \
            -out "$a/privkey$n.pem"
    fi
    openssl req -new -key "$a/privkey$n.pem" -subj /CN=example.test \
        -out "$s/$n.csr" \
        && printf 'subjectAltName=DNS:example.test\n' >"$s/ext" \
        && openssl x509 -req -in "$s/$n.csr" -CA "$s/ca.pem" -CAkey "$s/ca.key" \
            -set_serial "$((1000 + n))" -days 30 -extfile "$s/ext" \
            -out "$a/cert$n.pem" 2>/dev/null \
        && cat "$a/cert$n.pem" "$s/ca.pem" >"$a/fullchain$n.pem" \
        && for f in cert privkey fullchain; do
            ln -sfn "../../archive/example.test/$f$n.pem" \
                "$le/live/example.test/$f.pem" || return 1
        done
}
served_serial() {
    echo | openssl s_client -connect "127.0.0.1:$ngx_port" \
        -servername example.test 2>/dev/null \
        | openssl x509 -noout -serial 2>/dev/null | sed 's/serial=//'
}

issue 1 >>"$work/checks.log" 2>&1
ngx_port=$(free_port)
# As /usr/share/nginx/modules, Debian's nginx prefix: the load files name
# modules/ relative to the prefix.
ln -s /usr/lib/nginx/modules "$ngx/modules"
cat >"$ngx/nginx.conf" <<EOF
include /etc/nginx/modules-enabled/*.conf;
pid $ngx/nginx.pid;
error_log $ngx/logs/error.log info;
daemon off;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path $ngx/body;
    proxy_temp_path $ngx/proxy;
    fastcgi_temp_path $ngx/fastcgi;
    uwsgi_temp_path $ngx/uwsgi;
    scgi_temp_path $ngx/scgi;
    server {
        listen 127.0.0.1:$ngx_port ssl;
        server_name example.test;
        ssl_certificate     /etc/sk/live/example.test/fullchain.pem;
        ssl_certificate_key /etc/sk/live/example.test/privkey.pem;
        sovereign_key_public $work/pub/sk.pub;
        sovereign_key_cache  /var/lib/sk;
        location / { return 204; }
    }
}
EOF
# First without a reload command: nginx starts on what it deployed.
cp /etc/sk/renew.conf "$work/renew.conf.orig"
printf 'example.test %s /var/lib/sk\n' "$work/pub/sk.pub" >>/etc/sk/renew.conf

first_deploy() {
    (cd "$s" && sk carrier -k sk.key -c "$le/live/example.test/cert.pem" \
        -n example.test -o carrier1.pem && sk publish -a carrier1.pem) \
        && sk-renew-hook example.test "$le/live/example.test/privkey.pem" \
            "$le/live/example.test/fullchain.pem"
}
ok "first deployment: sk-renew-hook NAME KEY FULLCHAIN" first_deploy
start_nginx() {
    nginx -p "$ngx" -c "$ngx/nginx.conf" -t || return 1
    nginx -p "$ngx" -c "$ngx/nginx.conf" >>"$ngx/logs/stderr" 2>&1 &
    pids="$pids $!"
    wait_for 10 test -s "$ngx/nginx.pid"
    wait_for 10 sk check -p "$work/pub/sk.pub" --connect "127.0.0.1:$ngx_port" \
        --servername example.test
}
ok "a private nginx, the module loaded by the packaged load file, staples the carrier" start_nginx
cp "$work/renew.conf.orig" /etc/sk/renew.conf
printf 'example.test %s /var/lib/sk nginx -p %s -c %s -s reload\n' \
    "$work/pub/sk.pub" "$ngx" "$ngx/nginx.conf" >>/etc/sk/renew.conf
ok "it serves certificate 1" eval '[ "$(served_serial)" = 03E9 ]'

certbot_hook() {    # as certbot runs deploy hooks
    RENEWED_LINEAGE=$le/live/example.test RENEWED_DOMAINS=example.test \
        sk-renew-hook >"$work/hook.out" 2>&1
}
renew_same_key() {
    issue 2 1 && certbot_hook && wait_for 10 eval '[ "$(served_serial)" = 03EA ]' \
        && sk check -p "$work/pub/sk.pub" --connect "127.0.0.1:$ngx_port" \
            --servername example.test
}
ok "renewal with the same key (--reuse-key): deployed, nginx reloaded, carrier served" renew_same_key

renew_new_key() {
    issue 3 || return 1
    if certbot_hook; then echo "the hook deployed a key without carrier"; return 1; fi
    cat "$work/hook.out"
    grep -qF "sk carrier -k SK.key -c fullchain3.pem -n example.test -s https -o example.test-carrier.pem" "$work/hook.out" \
        && grep -qF "then here: sk publish -a example.test-carrier.pem --cache /var/lib/sk && sk-renew-hook example.test $le/archive/example.test/privkey3.pem $le/archive/example.test/fullchain3.pem" "$work/hook.out" \
        && [ "$(served_serial)" = 03EA ] \
        && cmp -s /etc/sk/live/example.test/fullchain.pem "$le/archive/example.test/fullchain2.pem"
}
ok "renewal with a new key: refused, certificate 2 keeps serving, the commands printed" renew_new_key

# What the domain holder does: the printed sk carrier command on the
# signer (SK.key is the SK's file there), then the printed one here.
follow_instructions() {
    local carrier here
    carrier=$(sed -n 's/.*on the host that holds the SK, with a copy of [^:]*: //p' "$work/hook.out")
    here=$(sed -n 's/.*then here: //p' "$work/hook.out")
    [ -n "$carrier" ] && [ -n "$here" ] || return 1
    cp "$le/archive/example.test/fullchain3.pem" "$s/"
    (cd "$s" && eval "${carrier/-k SK.key/-k sk.key}" && cp example.test-carrier.pem "$work/") \
        && (cd "$work" && eval "$here") \
        && wait_for 10 eval '[ "$(served_serial)" = 03EB ]' \
        && sk check -p "$work/pub/sk.pub" --connect "127.0.0.1:$ngx_port" \
            --servername example.test
}
ok "after the printed commands, certificate 3 serves with its carrier" follow_instructions
ok "sk-renew-hook --check: OK" sk-renew-hook --check
nginx -p "$ngx" -c "$ngx/nginx.conf" -s stop 2>/dev/null || :

# The milter picks the deployed certificate up: its ChainFile output, in
# its StateDirectory, carries the carrier (sk-milter-postfix.path would
# then reload Postfix; Postfix is not running here, so its ExecCondition
# says there is nothing to reload).
cp /etc/sk-milter.conf "$work/sk-milter.conf.orig"
echo "ChainFile /etc/sk/live/example.test/fullchain.pem /var/lib/sk-milter/example.test.pem" \
    >>/etc/sk-milter.conf
milter_chain() {
    start_unit sk-milter.service \
        && wait_for 10 test -s /var/lib/sk-milter/example.test.pem \
        && sk verify-chain -p "$work/pub/sk.pub" -i /var/lib/sk-milter/example.test.pem \
        && [ "$(stat -c %U /var/lib/sk-milter/example.test.pem)" = sk-milter ]
}
ok "sk-milter writes the deployed chain with its carrier for Postfix" milter_chain
stop_pid "${pid_sk_milter_service:-0}"
cp "$work/sk-milter.conf.orig" /etc/sk-milter.conf
no_postfix_reload() {
    ! $(unit_get sk-milter-postfix.service ExecCondition)
}
ok "sk-milter-postfix.service: no reload while Postfix is stopped" no_postfix_reload

# ---- upgrades, remove, purge ---------------------------------------------
echo "# local change" >>/etc/sk-milter.conf
reinstall() {
    $APT install --reinstall --no-install-recommends "$work/debs/"sk-milter_*.deb \
        "$work/debs/"sk-timeline_*.deb \
        && grep -qx '# local change' /etc/sk-milter.conf \
        && [ -s /var/lib/sk-timeline/timeline.key ]
}
ok "reinstall (as an upgrade): the changed conffile and the state stay" reinstall
remove_keeps() {
    $APT remove sk-timeline && [ -s /var/lib/sk-timeline/timeline.key ] \
        && [ -f /etc/sk-timeline.conf ] && [ ! -e /usr/sbin/sk-timeline ]
}
ok "apt-get remove keeps configuration and state" remove_keeps

purge() {
    local p
    p=$(installed)
    # shellcheck disable=SC2086
    $APT purge $p || return 1
    [ -z "$(installed)" ]
}
ok "apt-get purge" purge
leftovers() {
    snapshot >"$work/after"
    # The system users stay (files they owned may live on elsewhere).
    ! comm -13 "$work/before" "$work/after" | grep .
}
ok "purge leaves no files behind (the system users stay)" leftovers

echo "# test-packages: $pass passed, $fail failed, $(($(date +%s) - t0)) s"
[ "$fail" -eq 0 ]
