#!/bin/sh
# Build the Debian packages (debian/) into OUT, offline, from a copy of
# this tree (tracked and untracked files, ignored ones left out):
# dpkg-buildpackage writes its results into the parent of the source
# directory, which must not be the parent of a checkout.
#
#   scripts/build-debs.sh OUT        OUT/*.deb, OUT/*.changes, OUT/build.log
set -eu

out=${1:?usage: build-debs.sh OUT}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir "$out/src"

(cd "$top" && git ls-files -z --cached --others --exclude-standard) \
    | (cd "$top" && xargs -0 tar cf - --) | (cd "$out/src" && tar xf -)

jobs=$(nproc 2>/dev/null || echo 2)
if ! (cd "$out/src" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" \
        dpkg-buildpackage -b -us -uc) >"$out/build.log" 2>&1; then
    tail -30 "$out/build.log" >&2
    echo "build-debs: dpkg-buildpackage failed, see $out/build.log" >&2
    exit 1
fi
rm -rf "$out/src"
ls "$out"/*.deb
