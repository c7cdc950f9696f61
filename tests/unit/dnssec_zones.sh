#!/bin/sh
# dnssec_zones.sh DIR HEX [N] -- the signed zones test_dnssec.c builds its
# chains from: a private root ".", "test." and "example.test." signed with
# fresh Ed25519 keys (ldns-keygen) and fixed validity windows
# (ldns-signzone -i/-e), HEX the SK's SPKI SHA-256.  Variants of
# example.test. (two records, another hash, expired signatures, signatures
# that expire in two minutes, no record, no record under NSEC3)
# share its key; "other.root" is a second root with its own key, and
# "test.nods" a test. whose DS names a key example.test. does not have.
# The root rolls its key: "root" publishes the next key beside its own
# and is signed with its own (two DNSKEYs: an RRset whose order a
# resolver may rotate), "root.new" is the same zone signed with the next
# key.  Anchors: DIR/root.ds (the key "root" is signed with),
# DIR/root-new.ds (the next key).  With N, also "bench": example.test. with N more
# records at _sovereign-key.n<i> (i < N), signed with its key, for
# tests/bench/bench_timeline.sh's Binds of n<i>.example.test.
set -eu
dir=$1 hex=$2 n=${3:-0}
cd "$dir"
good="-i 20200101 -e 20371231"
old="-i 20100101 -e 20110101"

key() {     # key ZONE -> the key's base name
    ldns-keygen -a ED25519 -k "$1"
}

zone() {    # zone FILE ORIGIN RECORDS...: SOA and NS, then RECORDS
    f=$1 o=$2
    shift 2
    {
        echo "\$ORIGIN $o"
        echo "\$TTL 3600"
        echo "@ IN SOA ns.test. host.test. 1 3600 600 86400 300"
        echo "@ IN NS ns.test."
        for r in "$@"; do echo "$r"; done
    } > "$f"
}

sign() {    # sign FILE ORIGIN KEY WINDOW
    # shellcheck disable=SC2086
    ldns-signzone -o "$2" $4 -f "$1.signed" "$1" "$3"
}

rec="_sovereign-key IN TXT \"v=sk1; spki-sha256=$hex\""
other="_sovereign-key IN TXT \"v=sk1; spki-sha256=$(printf '%064d' 0)\""

kex=$(key example.test.)
kstray=$(key example.test.)
ktest=$(key test.)
kroot=$(key .)
knew=$(key .)
kother=$(key .)

zone ex example.test. "$rec"
sign ex example.test. "$kex" "$good"
zone ex.two example.test. "$rec" "$other"
sign ex.two example.test. "$kex" "$good"
zone ex.wrong example.test. "$other"
sign ex.wrong example.test. "$kex" "$good"
cp ex ex.old
sign ex.old example.test. "$kex" "$old"
cp ex ex.soon
sign ex.soon example.test. "$kex" "-i 20200101 -e $(($(date +%s) + 120))"
if [ "$n" -gt 0 ]; then
    cp ex bench
    awk -v n="$n" -v h="$hex" 'BEGIN { for (i = 0; i < n; i++)
        printf "_sovereign-key.n%d IN TXT \"v=sk1; spki-sha256=%s\"\n", i, h }' >>bench
    sign bench example.test. "$kex" "$good"
fi
zone ex.none example.test. "www IN A 192.0.2.1"
sign ex.none example.test. "$kex" "$good"
cp ex.none ex.nsec3
sign ex.nsec3 example.test. "$kex" "$good -n"

zone test test. "example IN NS ns.test." "$(cat "$kex.ds")"
sign test test. "$ktest" "$good"
zone test.nods test. "example IN NS ns.test." "$(cat "$kstray.ds")"
sign test.nods test. "$ktest" "$good"

zone root . "test. IN NS ns.test." "$(cat "$ktest.ds")" "$(cat "$knew.key")"
sign root . "$kroot" "$good"
zone root.new . "test. IN NS ns.test." "$(cat "$ktest.ds")" \
    "$(cat "$kroot.key")"
sign root.new . "$knew" "$good"
zone other.root . "test. IN NS ns.test." "$(cat "$ktest.ds")"
sign other.root . "$kother" "$good"
cp "$kroot.ds" root.ds
cp "$knew.ds" root-new.ds
