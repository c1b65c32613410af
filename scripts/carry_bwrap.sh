#!/usr/bin/env bash
# Build `.bwrap/` (ignored) to carry bubblewrap to a machine that lacks it (the device machine): Debian's
# bubblewrap and the three libraries it links, started through the system loader with `--library-path`, so the
# libraries are found without LD_LIBRARY_PATH reaching the sandboxed children. There: AKA_BWRAP=$PWD/.bwrap/bwrap.
#   bash scripts/carry_bwrap.sh        (needs apt-get; run from the repository root)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get update -qq >/dev/null && apt-get download bubblewrap libselinux1 libcap2 libpcre2-8-0 >/dev/null)
for deb in "$work"/*.deb; do dpkg -x "$deb" "$work/x"; done
rm -rf "$root/.bwrap" && mkdir -p "$root/.bwrap/bin" "$root/.bwrap/lib"
cp "$work/x/usr/bin/bwrap" "$root/.bwrap/bin/"
cp -a "$work"/x/lib/x86_64-linux-gnu/* "$work"/x/usr/lib/x86_64-linux-gnu/libpcre2-8.so.0* "$root/.bwrap/lib/"
cat > "$root/.bwrap/bwrap" <<'WRAP'
#!/bin/sh
D=$(dirname "$(readlink -f "$0")")
exec /lib64/ld-linux-x86-64.so.2 --library-path "$D/lib" "$D/bin/bwrap" "$@"
WRAP
chmod +x "$root/.bwrap/bwrap"
grep -qx '/.bwrap/' "$root/.git/info/exclude" 2>/dev/null || echo '/.bwrap/' >> "$root/.git/info/exclude"
"$root/.bwrap/bwrap" --version
