#!/bin/sh
# The verifier's busybox: Debian 13's static busybox (1.36 or later), whose sha256sum uses
# the CPU's SHA extensions where it has them; hashing the environment is most of a
# verifier's work, and Debian 12's busybox hashes about five times slower. It comes from the
# host's own Debian mirror (the first apt source that is not a security one), through apt
# with a private state in a temporary folder: the Release file's signature is checked with
# the host's archive keyring, and the host's apt state is left alone.
#
# usage: verifier-busybox.sh [TARGET]   (default /usr/local/libexec/cligym/busybox)
# Does nothing when TARGET exists. Without it cligym uses the host's /bin/busybox.
set -eu
target=${1:-/usr/local/libexec/cligym/busybox}
suite=trixie
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
[ -x "$target" ] && exit 0

# the mirror: deb822 stanzas (URIs, Suites) first, then one-line "deb [options] URI suite" entries
uri=$(awk 'BEGIN { RS = ""; FS = "\n" }
  { u = ""; s = ""
    for (i = 1; i <= NF; i++) {
      if ($i ~ /^URIs:/) { split($i, a, /[ \t]+/); u = a[2] }
      if ($i ~ /^Suites:/) s = $i
    }
    if (u != "" && s !~ /-security/) { print u; exit } }' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
if [ -z "$uri" ]; then
  uri=$(sed -n 's/^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\)[[:space:]]\{1,\}[a-z]*[[:space:]].*/\2/p' \
    /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | grep -v security | head -n 1 || true)
fi
[ -n "$uri" ] || { echo "verifier-busybox: the host names no Debian apt source" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lists/partial" "$tmp/archives/partial" "$tmp/none"
echo "deb [signed-by=$keyring] $uri $suite main" > "$tmp/sources.list"
apt_in_tmp() {
  apt-get -q -o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts="$tmp/none" \
    -o Dir::Etc::PreferencesParts="$tmp/none" -o Dir::State::Lists="$tmp/lists" \
    -o Dir::Cache::Archives="$tmp/archives" -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= \
    -o APT::Sandbox::User=root "$@"
}
apt_in_tmp update >/dev/null
(cd "$tmp" && apt_in_tmp download busybox-static >/dev/null)
dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/x"
found=$tmp/x/usr/bin/busybox
if head -c 8192 "$found" | grep -qa ld-linux; then
  echo "verifier-busybox: the $suite busybox is not static" >&2
  exit 1
fi
version=$("$found" 2>&1 | sed -n '1s/^BusyBox v\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
# shellcheck disable=SC2086
set -- $version
if [ $# -ne 2 ] || [ "$1" -lt 1 ] || { [ "$1" -eq 1 ] && [ "$2" -lt 36 ]; }; then
  echo "verifier-busybox: the $suite busybox is older than 1.36 ($version)" >&2
  exit 1
fi
install -D -m 0755 "$found" "$target"
echo "verifier-busybox: installed BusyBox $1.$2 of Debian $suite as $target"
