#!/bin/bash
# Build ngx_sk_module as a dynamic module for Debian's nginx, against
# nginx-dev (/usr/share/nginx/src) with Debian's own configure flags, into
# $BUILD/ngx/ngx_http_sk_module.so.  Nothing is written under the nginx
# sources: configure runs with --builddir.
#
#   scripts/build-ngx-module.sh BUILD LIBSK     (SAN=1: ASan + UBSan)
#
# configure (about 8 s) reruns only when its inputs change.
set -euo pipefail

BUILD=${1:?usage: build-ngx-module.sh BUILD LIBSK}
LIBSK=${2:?usage: build-ngx-module.sh BUILD LIBSK}
NGX_SRC=${NGX_SRC:-/usr/share/nginx/src}
SAN=${SAN:-}

top=$(cd "$(dirname "$0")/.." && pwd)
case $BUILD in /*) ;; *) BUILD=$top/$BUILD ;; esac
case $LIBSK in /*) ;; *) LIBSK=$top/$LIBSK ;; esac
bld=$BUILD/ngx
mkdir -p "$bld"

[ -f "$NGX_SRC/conf_flags" ] || {
    echo "build-ngx-module: $NGX_SRC/conf_flags: missing (install nginx-dev)" >&2
    exit 1
}
# shellcheck disable=SC1091
. "$NGX_SRC/conf_flags"

cc_opt="$(dpkg-buildflags --get CFLAGS) -fPIC $(dpkg-buildflags --get CPPFLAGS)"
ld_opt="$(dpkg-buildflags --get LDFLAGS) -fPIC"
if [ "$SAN" = 1 ]; then
    san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    cc_opt="$cc_opt $san"
    ld_opt="$ld_opt $san"
fi

export SK_LIBSK=$LIBSK SK_INCLUDE=$top/common/include
stamp="$cc_opt|$ld_opt|$LIBSK|$top|$(cat "$top/ngx_sk_module/config")|${NGX_CONF_FLAGS[*]}"
if [ ! -f "$bld/Makefile" ] || [ "$(cat "$bld/.configured" 2>/dev/null)" != "$stamp" ]; then
    (cd "$NGX_SRC" && ./configure --with-cc-opt="$cc_opt" --with-ld-opt="$ld_opt" \
        "${NGX_CONF_FLAGS[@]}" --add-dynamic-module="$top/ngx_sk_module" \
        --builddir="$bld") >"$bld/configure.log" 2>&1 || {
        tail -20 "$bld/configure.log" >&2
        echo "build-ngx-module: configure failed, see $bld/configure.log" >&2
        exit 1
    }
    printf '%s' "$stamp" >"$bld/.configured"
fi

# The .so's link line does not see libsk.a as a dependency: relink when
# libsk.a is newer.  nginx's Makefile does not see libsk's headers either:
# a struct grown in one (sk_client_trust_t) left the module's objects
# compiled with the old layout, and nginx corrupted its heap at start, so
# recompile them when a header is newer than the .so.
so=$bld/ngx_http_sk_module.so
if [ -f "$so" ] && [ -n "$(find "$top/common/include/sk" -name '*.h' -newer "$so")" ]; then
    rm -f "$bld"/addon/ngx_sk_module/*.o
fi
[ ! -f "$so" ] || [ "$LIBSK" -ot "$so" ] || rm -f "$so"
make -s -f "$bld/Makefile" -C "$NGX_SRC" modules

sig() { strings "$1" | grep -E '^8,4,8,[01]+$' || true; }
if [ "$(sig "$bld/ngx_http_sk_module.so")" != "$(sig /usr/sbin/nginx)" ]; then
    echo "build-ngx-module: module signature differs from /usr/sbin/nginx" >&2
    exit 1
fi
