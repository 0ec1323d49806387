#!/bin/sh
# The packages a check or a repair cannot do without in this image: the ones owning the
# programs cligym runs in a broken container (the filesystem listing's find, gzip and
# base64; the shell; dpkg's and apt's tools; ldconfig), the shells a harness and an agent
# open there (Harbor runs solve.sh and test.sh with bash; a terminal agent works in a tmux
# session), and every shared object they link. A change that broke one of them (libpcre2's
# soname link, which find loads through libselinux; libtinfo, which bash loads) would break
# the checks or the agent's terminal, not the task. One package name per line.
for program in sh bash tmux find gzip base64 tar dpkg dpkg-query dpkg-divert apt-get ldconfig; do
  path=$(command -v "$program") || continue
  echo "$path"
  ldd "$path" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'
done | while IFS= read -r path; do
  real=$(readlink -f "$path") || continue
  echo "$real"  # dpkg may know it by its merged-/usr twin: /usr/lib/x is /lib/x
  case $real in /usr/bin/* | /usr/sbin/* | /usr/lib/* | /usr/lib64/*) echo "${real#/usr}" ;; esac
done | sort -u | xargs -r dpkg-query -S 2>/dev/null \
  | grep -v '^diversion' | awk -F': /' '{ n = split($1, a, ", "); for (i = 1; i <= n; i++) print a[i] }' | sort -u
