#!/bin/sh
# Install the Debian 12 packages sovereign-keys builds and tests with.
# Idempotent and non-interactive: safe to run on every invocation.
# dpkg-dev, debhelper, fakeroot, lintian: make deb / make test-packages
# build and lint the Debian packages; systemd: systemd-analyze checks the
# units (PID 1 need not be systemd).  golang-go, golang-golang-x-mod-dev:
# t/timeline-tiles.t checks the tiles with Go's sumdb/tlog, built offline.
# strace: t/timeline-chunks.t sees the chunk compressor enter SCHED_IDLE.
# liblmdb-dev: the daemons' on-disk indexes (common/src/db.c).
# libsodium-dev: Ed25519 signing and verifying (common/src/key.c).
# prometheus: t/metrics.t scrapes the daemons with a private Prometheus
# and checks /metrics and dist/prometheus/ with its promtool.
# libldns-dev: DNSSEC evidence (common/src/dnssec.c) reads DNS wire form and
# verifies RRSIGs and DS digests at a given time with it; ldnsutils
# (ldns-keygen, ldns-signzone) signs the test zones; dns-root-data is the
# default trust anchor file, /usr/share/dns/root.ds.  libgetdns-dev:
# test_dnssec.c checks every verdict against getdns_validate_dnssec2, a
# second validator.  nsd, unbound: t/timeline-dnssec.t's private DNSSEC
# hierarchy (t/lib/SKDNS.pm), asked by `sk dnssec chain`.  libexpat1-dev:
# IANA's root-anchors.xml (DNSSEC trust anchors with validity windows,
# common/src/dnssec_anchors.c) is read with expat.
# libevent-dev: `sk proxy`'s event loop and its OpenSSL bufferevents (the
# TLS sessions it splices); chromium, firefox-esr: t/proxy.t's real
# browsers, headless, through `sk proxy`; libnss3-tools: certutil, which
# `sk proxy --install-ca` runs on the browsers' certificate databases.
set -eu

PKGS="build-essential pkg-config clang libclang-rt-14-dev
libssl-dev openssl libcmocka-dev libhiredis-dev libmilter-dev
libmicrohttpd-dev libcurl4-openssl-dev libbz2-dev liblmdb-dev libsodium-dev
libldns-dev libexpat1-dev ldnsutils dns-root-data libgetdns-dev nsd unbound
nginx nginx-dev redis-server tor postfix miltertest swaks
gnutls-bin libgnutls28-dev curl python3 perl libio-socket-ssl-perl libtest-simple-perl
valgrind strace groff-base golang-go golang-golang-x-mod-dev
dpkg-dev debhelper fakeroot lintian systemd prometheus
libevent-dev chromium firefox-esr libnss3-tools"

# apt-get refuses to do anything after a dpkg run was cut short ("dpkg was
# interrupted"), and packages left unpacked but unconfigured look installed
# to nobody: finish that work first, answering any question with the default.
finish_dpkg() {
    [ -n "$(dpkg --audit 2>/dev/null)$(ls -A /var/lib/dpkg/updates 2>/dev/null)" ] \
        || return 0
    if [ "$(id -u)" != 0 ]; then
        echo "install-deps: dpkg has unfinished work; run as root: dpkg --configure -a" >&2
        exit 1
    fi
    echo "install-deps: dpkg was interrupted earlier; finishing with dpkg --configure -a" >&2
    DEBIAN_FRONTEND=noninteractive dpkg --force-confdef --force-confold \
        --configure -a
}

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" \
        || missing="$missing $p"
done
if [ -z "$missing" ]; then
    finish_dpkg
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: need root to install:$missing" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Postfix asks questions at install time; answer them so no prompt appears.
echo "postfix postfix/main_mailer_type select No configuration" | debconf-set-selections
echo "postfix postfix/mailname string localhost" | debconf-set-selections

finish_dpkg
# Wait for another apt or dpkg to let go of its lock rather than fail at once.
APT="apt-get -qq -o DPkg::Lock::Timeout=600"
$APT update
$APT install -y --no-install-recommends -o Dpkg::Options::=--force-confdef \
    -o Dpkg::Options::=--force-confold $missing >/dev/null
# The packaged daemons must not run: tests start private instances.
for s in nginx redis-server tor postfix prometheus nsd unbound; do
    (systemctl disable --now "$s" || service "$s" stop) >/dev/null 2>&1 || true
done
