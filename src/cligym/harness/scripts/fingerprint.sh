# shellcheck shell=sh
# Fingerprint functions shared by the verifier and the export: a spec file holds one
# "KIND PATH" a line, and m_listing prints one sorted line per thing it covers. The export
# runs them in a gold container, the verifier in the repaired one, so the two listings
# compare line by line. They run under busybox (sh, find, sha256sum, sed, sort).
#
# Kinds: F a file (its sha256, or that it is a folder, something else, or absent); T a
# tree (every file and link below it); S a site directory (the same, hidden files and "~"
# names included, less pip's bookkeeping files); H the import hooks of a folder on sys.path
# (*.pth, dot-files included, sitecustomize, usercustomize); C a venv's pyvenv.cfg (its
# keys as the interpreter reads them, less the ones it does not read); L a library folder
# (every *.so*); P a folder on PATH (what every name there runs, and whether it may run,
# whatever the name: a script whose first line is "#!" and one of the I paths is hashed
# without that line, since pip writes python, python3 or python3.X there depending on how
# it was started, and all run the same interpreter; every folder in it listed whole); I
# one of gold's interpreters (a name in its bin folder that is the interpreter binary:
# lists nothing itself); X a program (as F, then "x" when it may run, "-" when not). Links
# are followed: what counts is what a path opens, not how it gets there. Nothing named __pycache__ is skipped unless it is a plain directory.

# m_entry PATH: what PATH is to whoever opens it: a link to a file is followed (a link and a
# copy of the same bytes behave alike; the link's text, relative or absolute, does not
# matter); a folder says where paths through it lead (a linked /bin replaced by a real
# folder is another folder).
m_entry() {
  if [ -f "$1" ]; then echo "file $1 $(sha256sum < "$1" | cut -c1-64)"
  elif [ -d "$1" ] && [ -L "$1" ]; then echo "dir $1 => $(readlink -f "$1")"  # what a path through it reaches
  elif [ -d "$1" ]; then echo "dir $1"
  elif [ -e "$1" ]; then echo "other $1"
  else echo "absent $1"; fi
}

# m_hash SUFFIX: a "file PATH SHA256" line (then SUFFIX) per NUL-separated path on stdin.
m_hash() {
  xargs -0 -r sha256sum | sed 's/^\\\{0,1\}\([0-9a-f]\{64\}\)  \(.*\)$/file \2 \1/' | sed "s/\$/$1/"
}

# m_walk DIR NESTED [FIND TESTS]: the files, links and others below DIR (hashed in batches);
# NESTED "prune" leaves out nested site-packages/dist-packages (listed by their own S line).
m_walk() {
  dir=$1 nested=$2
  shift 2
  if [ ! -d "$dir" ] || [ -L "$dir" ]; then m_entry "$dir"; return; fi
  if [ "$nested" = prune ]; then set -- ! -path '*/site-packages/*' ! -path '*/dist-packages/*' "$@"; fi
  find "$dir" -name __pycache__ -type d -prune -o "$@" -type f -print0 | m_hash ""
  find "$dir" -name __pycache__ -type d -prune -o "$@" -type l -print | while IFS= read -r p; do m_entry "$p"; done
  find "$dir" -name __pycache__ -type d -prune -o "$@" ! -type f ! -type l ! -type d -print | sed 's/^/other /'
}

m_site() {  # a site directory, less pip's bookkeeping files (no run reads them)
  m_walk "$1" keep ! -path '*.dist-info/RECORD' ! -path '*.dist-info/INSTALLER' \
    ! -path '*.dist-info/REQUESTED' ! -path '*.dist-info/direct_url.json'
}

m_hooks() {
  for p in "$1"/*.pth "$1"/.*.pth "$1"/sitecustomize* "$1"/usercustomize*; do
    if [ -e "$p" ] || [ -L "$p" ]; then m_entry "$p"; fi
  done
}

# m_bin DIR: a folder on PATH, whatever its names: what each one runs, and whether it may
# run ("x" or "-"). A script whose first line is exactly "#!" and one of the interpreters
# listed in the file $M_INTERPS is "script PATH MODE SHA" with SHA the hash of what follows
# that line (checked by size: a NUL hidden in the line makes it another file); anything
# else "file PATH SHA MODE" by its bytes; a folder in it is listed whole. The first lines
# in one pass of awk and the bytes in one of sha256sum (a process per file would be most
# of the verifier's time); one tail per such script.
m_bin() {
  [ -d "$1" ] || { m_entry "$1"; return; }
  tmp=$(mktemp -d /tmp/cligym-scripts.XXXXXXXX) folder=$1
  set --
  for p in "$folder"/* "$folder"/.[!.]* "$folder"/..?*; do
    if [ -f "$p" ]; then set -- "$@" "$p"
    elif [ -d "$p" ]; then m_entry "$p"; [ -L "$p" ] || m_walk "$p" keep
    elif [ -e "$p" ] || [ -L "$p" ]; then m_entry "$p"; fi
  done
  if [ $# -gt 0 ]; then
    for p in "$@"; do if [ -x "$p" ]; then echo "x $p"; else echo "- $p"; fi; done > "$tmp/modes"
    sha256sum "$@" > "$tmp/raw"
    LC_ALL=C awk -v interps="${M_INTERPS:-/dev/null}" '
      FILENAME == interps { shebang["#!" $0] = 1; next }
      FNR == 1 { if ($0 in shebang) print ++n "\t" length($0) "\t" FILENAME; nextfile }' \
      "${M_INTERPS:-/dev/null}" "$@" > "$tmp/names"
    set --
    while IFS="$(printf '\t')" read -r n _ p; do
      tail -n +2 "$p" > "$tmp/$n"
      set -- "$@" "$p" "$tmp/$n"
    done < "$tmp/names"
    : > "$tmp/sizes"
    if [ $# -gt 0 ]; then stat -L -c '%s %n' "$@" > "$tmp/sizes"; fi
    (cd "$tmp" && for f in [0-9]*; do [ -f "$f" ] && echo "$f"; done | xargs -r sha256sum) > "$tmp/rest"
    awk -v dir="$tmp" '
      FILENAME == dir "/names" { split($0, a, "\t"); name[a[1]] = a[3]; len[a[1]] = a[2]; next }
      FILENAME == dir "/sizes" { size[substr($0, index($0, " ") + 1)] = $1; next }
      FILENAME == dir "/rest" { rest[$2] = $1; next }
      FILENAME == dir "/raw" { raw[substr($0, 67)] = $1; next }
      FNR == 1 && FILENAME == dir "/modes" { for (k in name) if (size[name[k]] != "" && size[name[k]] == len[k] + 1 + size[dir "/" k])
                                               script[name[k]] = rest[k] }
      { p = substr($0, 3); if (p in script) print "script " p " " $1 " " script[p]; else print "file " p " " raw[p] " " $1 }
    ' "$tmp/names" "$tmp/sizes" "$tmp/rest" "$tmp/raw" "$tmp/modes"
  fi
  rm -rf "$tmp"
}

m_venv() {  # the keys as the interpreter reads them (trimmed, lower-case), less the unread ones
  if [ -f "$1" ]; then
    echo "venv $1 $(awk 'index($0, "=") { k = tolower(substr($0, 1, index($0, "=") - 1)); v = substr($0, index($0, "=") + 1)
      gsub(/^[ \t]+|[ \t]+$/, "", k); gsub(/^[ \t]+|[ \t]+$/, "", v)
      if (k !~ /^(command|version|executable|prompt)$/) print k "=" v }' "$1" | sha256sum | cut -c1-64)"
  else m_entry "$1"; fi
}

m_libs() {  # every *.so* in the folder but its real subfolders, as m_entry says it: the files
  # (links followed) hashed in one batch, the rest one by one; and its glibc-hwcaps folder
  # whole, which the loader searches first (x86-64-v3/, x86-64-v2/...)
  [ -d "$1" ] || { m_entry "$1"; return; }
  find -L "$1" -maxdepth 1 -name '*.so*' -type f -print0 | m_hash ""
  find -L "$1" -maxdepth 1 -name '*.so*' ! -type f | while IFS= read -r p; do
    if [ -L "$p" ] || [ ! -d "$p" ]; then m_entry "$p"; fi
  done
  m_entry "$1/glibc-hwcaps"
  if [ -d "$1/glibc-hwcaps" ] && [ ! -L "$1/glibc-hwcaps" ]; then m_walk "$1/glibc-hwcaps" keep; fi
}

m_listing() {
  files=$(mktemp /tmp/cligym-files.XXXXXXXX)  # the F entries that are files: hashed in one batch
  M_INTERPS=$(mktemp /tmp/cligym-interps.XXXXXXXX)  # the I entries, for every P entry
  grep '^I ' "$1" | cut -c3- > "$M_INTERPS"
  {
  while IFS=' ' read -r kind path; do
    case "$kind" in
      F) if [ -f "$path" ]; then printf '%s\0' "$path" >> "$files"; else m_entry "$path"; fi ;;
      X) if [ -x "$path" ]; then m_entry "$path" | sed 's/$/ x/'; else m_entry "$path" | sed 's/$/ -/'; fi ;;
      T) m_walk "$path" prune ;;
      S) m_site "$path" ;;
      H) m_hooks "$path" ;;
      C) m_venv "$path" ;;
      L) m_libs "$path" ;;
      P) m_bin "$path" ;;
    esac
  done < "$1"
  m_hash "" < "$files"
  } | LC_ALL=C sort -u
  rm -f "$files" "$M_INTERPS"
}

# m_workdir DIR [SITES]: the project's tree, less bytecode, pytest's caches, a build's file
# list, the project's git folder and the site directories named in the file SITES (each
# listed whole by its S entry, its pip bookkeeping aside): a folder's name alone (one
# called site-packages, say) leaves nothing out.
m_workdir() {
  dir=$1 sites=${2:-/dev/null}
  set -- ! -path '*/.pytest_cache/*' ! -path "$dir/.git/*" ! -path '*.egg-info/SOURCES.txt'
  while IFS= read -r site; do
    case "$site" in "$dir"/*) set -- "$@" ! -path "$site/*" ;; esac
  done < "$sites"
  m_walk "$dir" keep "$@" | LC_ALL=C sort -u
}

# m_bytecode LIST: "SHA256  PATH", sha256sum's own lines (which "sha256sum -c" reads), of
# each file LIST names (a line each): the bytecode gold's run read, which m_seed_bytecode
# lets a verifier reuse.
m_bytecode() {
  tr '\n' '\0' < "$1" | xargs -0 -r sha256sum | LC_ALL=C sort -k2 -u
}

# m_seed_bytecode LIST CACHE: gold's bytecode, where a file still holds gold's bytes (LIST as
# m_bytecode printed it in gold), for an interpreter whose bytecode cache prefix is the fresh
# folder CACHE: it reads CACHE/DIR/NAME.pyc for DIR/NAME.py and no __pycache__ folder. Each
# __pycache__ folder (a plain one) that holds such a file keeps those files alone (anything
# else in it is deleted), and each is linked as CACHE/DIR/NAME.pyc; all other bytecode is
# compiled afresh into CACHE.
m_seed_bytecode() {
  list=$1 cache=$2 tmp=$(mktemp -d /tmp/cligym-bytecode.XXXXXXXX)
  # only plain files are read (a FIFO in a listed place would hold the reading forever)
  while IFS= read -r line; do
    p=${line#*  }
    if [ -f "$p" ] && [ ! -L "$p" ]; then printf '%s\n' "$line"; fi
  done < "$list" > "$tmp/plain"
  sha256sum -c "$tmp/plain" 2>/dev/null | sed -n 's/: OK$//p' | LC_ALL=C sort -u > "$tmp/gold"
  sed 's,/[^/]*$,,' "$tmp/gold" | LC_ALL=C sort -u | while IFS= read -r d; do
    if [ "${d##*/}" = __pycache__ ] && [ -d "$d" ] && [ ! -L "$d" ]; then echo "$d"; fi
  done > "$tmp/dirs"
  set --
  while IFS= read -r d; do set -- "$@" "$d"; done < "$tmp/dirs"
  : > "$tmp/found"
  if [ $# -gt 0 ]; then find "$@" -mindepth 1 -maxdepth 1 > "$tmp/found"; fi
  awk 'FILENAME == ARGV[1] { gold[$0] = 1; next } !($0 in gold)' "$tmp/gold" "$tmp/found" | tr '\n' '\0' |
    xargs -0 -r rm -rf
  sed "s,/__pycache__\$,,; s,^,$cache," "$tmp/dirs" | tr '\n' '\0' | xargs -0 -r mkdir -p
  while IFS= read -r d; do cp -s "$d"/*.pyc "$cache${d%/__pycache__}/"; done < "$tmp/dirs"
  rm -rf "$tmp"
}

# m_resolved LOADER FILE...: how the dynamic loader resolves each shared object's
# dependencies now (the loader only maps them: no code of theirs runs), addresses dropped,
# each resolved file with its sha256 (a path the listing reaches another way may not be the
# one the loader opens); a program's own loader line ("/lib64/ld-linux-x86-64.so.2 => ...",
# its PT_INTERP) with the sha256 of what that path opens too: the kernel starts that one.
m_resolved() {
  loader=$1 tmp=$(mktemp -d /tmp/cligym-resolved.XXXXXXXX)
  shift
  for f in "$@"; do
    echo "== $f"
    "$loader" --list "$f" 2>&1 | sed 's/ *(0x[0-9a-f]*)$//'
  done > "$tmp/lines"
  # two lines a line: the path it names (after its last "=> /", or from the "/" after its
  # first blank), and the path before its "=> " when that is absolute (a PT_INTERP)
  awk '{ p = ""; q = "" }
       index($0, "=> /") { p = $0; while ((i = index(p, "=> ")) > 0) p = substr(p, i + 3)
                           if ($0 ~ /^[[:space:]]\//) { q = substr($0, 2); q = substr(q, 1, index(q, " => ") - 1) } }
       p == "" && /^[[:space:]]\// { p = substr($0, 2) } { print p; print q }' "$tmp/lines" > "$tmp/paths"
  grep -v '^$' "$tmp/paths" | sort -u | tr '\n' '\0' | xargs -0 -r sha256sum 2>/dev/null > "$tmp/sums"
  awk -v sums="$tmp/sums" -v paths="$tmp/paths" '
    BEGIN { while ((getline l < sums) > 0) hash[substr(l, 67)] = substr(l, 1, 64)
            while ((getline l < paths) > 0) path[++n] = l }
    { p = path[2 * NR - 1]; q = path[2 * NR]
      if (p == "") print; else if (q == "") print $0 " " hash[p]; else print $0 " " hash[p] " " hash[q] }' "$tmp/lines"
  rm -rf "$tmp"
}

# m_pipconf PREFIX: pip's configuration as pip reads it, whatever the bytes: every file pip
# reads (global: each $XDG_CONFIG_DIRS/pip/pip.conf, default /etc/xdg, and /etc/pip.conf;
# user: $XDG_CONFIG_HOME/pip/pip.conf, default ~/.config, and ~/.pip/pip.conf; site:
# PREFIX/pip.conf; $PIP_CONFIG_FILE) as "FILE [section] key = value" lines, sections and
# keys lowercased (a key as pip names it: "_" is "-", no leading "--"), values trimmed, a
# value's continuation lines joined to it, comments and blank lines dropped; a line that
# is no setting as "FILE [section] ? LINE" (pip refuses such a file); what each file a
# constraint, requirement or find-links value names is (m_entry: a file by its sha256);
# and the PIP_* variables. Sorted, not merged: a key given twice is an error to pip.
m_pipconf() {
  prefix=$1 tmp=$(mktemp -d /tmp/cligym-pipconf.XXXXXXXX)
  home=${HOME:-/root}
  old_ifs=$IFS
  IFS=:
  set --
  for d in ${XDG_CONFIG_DIRS:-/etc/xdg}; do set -- "$@" "$d/pip/pip.conf"; done
  IFS=$old_ifs
  set -- "$@" /etc/pip.conf "${XDG_CONFIG_HOME:-$home/.config}/pip/pip.conf" "$home/.pip/pip.conf" "$prefix/pip.conf"
  [ -n "${PIP_CONFIG_FILE+set}" ] && set -- "$@" "$PIP_CONFIG_FILE"
  for f in "$@"; do
    [ -f "$f" ] || continue
    awk -v file="$f" '
      function key(k) { k = tolower(k); gsub(/_/, "-", k); sub(/^--/, "", k); return k }
      function flush() { if (name != "") print file " [" sec "] " name " = " value; name = "" }
      { sub(/\r$/, "") }
      /^[ \t]*([#;]|$)/ { next }
      /^[ \t]/ && name != "" { v = $0; gsub(/^[ \t]+|[ \t]+$/, "", v); value = value " " v; next }
      { flush(); line = $0; gsub(/^[ \t]+|[ \t]+$/, "", line) }
      line ~ /^\[.*\]/ { sec = substr(line, 2); sec = tolower(substr(sec, 1, match(sec, /\][^]]*$/) - 1)); next }
      { e = index(line, "="); c = index(line, ":"); if (e == 0 || (c > 0 && c < e)) e = c
        if (e == 0) { print file " [" sec "] ? " line; next }
        name = substr(line, 1, e - 1); value = substr(line, e + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", name); gsub(/^[ \t]+|[ \t]+$/, "", value); name = key(name) }
      END { flush() }' "$f"
  done > "$tmp/lines"
  env | grep '^PIP_' | sed 's/^/env /' >> "$tmp/lines"
  # the files and folders the settings name (a constraint file pins what may be installed)
  awk '/^env PIP_(CONSTRAINT|REQUIREMENT|FIND_LINKS)=/ { v = substr($0, index($0, "=") + 1) }
       !/^env / { v = ""; i = index($0, "] "); k = substr($0, i + 2); e = index(k, " = ")
                  if (e > 0 && substr(k, 1, e - 1) ~ /^(constraint|requirement|find-links)$/) v = substr(k, e + 3) }
       v != "" { n = split(v, a, /[ \t]+/); for (j = 1; j <= n; j++) { p = a[j]; sub(/^file:\/\//, "", p); if (p ~ /^\//) print p } }' \
    "$tmp/lines" | sort -u > "$tmp/named"
  {
    cat "$tmp/lines"
    while IFS= read -r p; do echo "named $(m_entry "$p")"; done < "$tmp/named"
  } | LC_ALL=C sort
  rm -rf "$tmp"
}
