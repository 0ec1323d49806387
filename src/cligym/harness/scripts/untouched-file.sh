# shellcheck shell=sh
# untouched-file.sh FILE...: exit 0 when only a write to its own path can change each FILE:
# a regular file with one name (a link count of 1: no hard link elsewhere), neither it nor
# any folder on its way a symbolic link, outside $VIRTUAL_ENV (which the sweeper recreates),
# and named by no distribution's install record (RECORD, installed-files.txt: pip's
# uninstall removes what they name); else 1. Run by the verifier's busybox, its applets only.
[ $# -gt 0 ] || exit 0  # (no FILE: nothing to say otherwise)
for f; do
  [ -f "$f" ] && [ ! -L "$f" ] && [ "$(stat -c %h "$f")" = 1 ] || exit 1
  case "$f/" in "${VIRTUAL_ENV:-/nowhere/}"/*) exit 1 ;; esac
  d=${f%/*}
  while [ -n "$d" ]; do
    [ ! -L "$d" ] || exit 1
    d=${d%/*}
  done
  set -- "$@" -e "${f#/}"  # (each path leaves the front below: its pattern for grep stays)
  shift
done
# one walk of the filesystem for every FILE's install records
named=$(find / -xdev \( -name RECORD -o -name installed-files.txt \) -type f \
  -exec grep -l -F "$@" {} + 2>/dev/null | head -n 1)
[ -z "$named" ]
