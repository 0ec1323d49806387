#!/bin/sh
# The Debian sweeper: a fixed, task-blind battery of the repairs an admin runs on a broken
# Debian system without reading the task or any error. A task it solves teaches little:
# difficulty measurement runs it in the broken image, then the task's failing tests.
#
# Every step is tried; a failing step does not stop the others. Nothing is downloaded: apt
# reads only the image's own repository. The steps:
#  0. run its own commands in a clean environment: every LD_* variable and the language
#     search paths (PERL5LIB, PERLLIB, NODE_PATH, RUBYLIB, GEM_PATH, GEM_HOME, GOPATH,
#     GOFLAGS, R_LIBS*, PYTHONPATH) unset;
#  1. drop /etc/ld.so.preload and rebuild the loader's cache and soname links (ldconfig);
#  2. finish an interrupted dpkg run (dpkg --configure -a), let apt mend broken
#     dependencies (apt-get -f install: a package removed by force comes back when another
#     depends on it), then reinstall every package
#     whose files dpkg --verify finds changed or missing (conffiles aside): by apt from the
#     image's repository, and where apt cannot, by dpkg -i from that repository's files;
#  3. set every alternative back to automatic;
#  4. empty /usr/local of every file no package owns (folders, and links to folders, stay).
# shellcheck disable=SC2086

step() { echo "sweeper: $*"; }

step "0 a clean environment"
for var in $(env | sed -n 's/^\(LD_[A-Za-z0-9_]*\|R_LIBS[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$var"; done
unset PERL5LIB PERLLIB NODE_PATH RUBYLIB GEM_PATH GEM_HOME GOPATH GOFLAGS PYTHONPATH
export DEBIAN_FRONTEND=noninteractive

step "1 dynamic loader"
rm -f /etc/ld.so.preload
ldconfig 2>&1

step "2 packages dpkg finds changed"
dpkg --configure -a 2>&1 | tail -n 3
apt-get -f install -y --no-install-recommends 2>&1 | tail -n 3
# changed [PACKAGE...]: the paths dpkg --verify finds changed or missing, conffiles aside
# ("??5?????? c /etc/x" or "missing     /usr/lib/x": the path is the last field). Paths
# dpkg's own configuration keeps off the disk (path-exclude, as a minimal image's
# /usr/share/doc) are not missing; a path-include brings one back.
changed() {
  dpkg --verify "$@" 2>/dev/null | awk '
    function rx(glob) { gsub(/[.+^$(){}|\\]/, "\\\\&", glob); gsub(/\*/, ".*", glob); gsub(/\?/, ".", glob); return "^" glob "$" }
    FILENAME != "-" { if (sub(/^path-exclude=/, "")) ex[++ne] = rx($0); else if (sub(/^path-include=/, "")) in_[++ni] = rx($0); next }
    $2 == "c" { next }
    { path = $NF; out = 0
      for (i = 1; i <= ne; i++) if (path ~ ex[i]) out = 1
      for (i = 1; i <= ni; i++) if (path ~ in_[i]) out = 0
      if (!out) print path }' /etc/dpkg/dpkg.cfg /etc/dpkg/dpkg.cfg.d/* - 2>/dev/null | sort -u
}
changed=$(changed)
if [ -n "$changed" ]; then
  # dpkg-query -S: "pkg1[:arch], pkg2[:arch]: /path"
  packages=$(echo "$changed" | tr '\n' '\0' | xargs -0 -r dpkg-query -S 2>/dev/null \
    | grep -v '^diversion' | awk -F': /' '{ n = split($1, a, ", "); for (i = 1; i <= n; i++) print a[i] }' | sort -u)
  step "reinstalling" $packages
  [ -n "$packages" ] && apt-get install --reinstall -y --no-install-recommends $packages 2>&1 | tail -n 3
  if [ -n "$packages" ] && [ -n "$(changed $packages)" ]; then
    for package in $packages; do  # apt could not: the repository's file of the installed version
      version=$(dpkg-query -W -f '${Version}' "$package" 2>/dev/null)
      for deb in /opt/cligym/apt/"${package%%:*}"_*.deb /opt/cligym/apt/*/"${package%%:*}"_*.deb; do
        [ -f "$deb" ] && [ "$(dpkg-deb -f "$deb" Version)" = "$version" ] && dpkg -i "$deb" 2>&1 | tail -n 1
      done
    done
  fi
fi

step "3 alternatives"
update-alternatives --get-selections 2>/dev/null | awk '{ print $1 }' | while IFS= read -r name; do
  update-alternatives --auto "$name" > /dev/null 2>&1
done

step "4 /usr/local"
# links to folders stay: the base system's own (man -> share/man) belong to no package either
find /usr/local ! -type d ! -xtype d 2>/dev/null | while IFS= read -r path; do
  dpkg-query -S "$path" > /dev/null 2>&1 || rm -f "$path"
done
ldconfig 2>&1
true
