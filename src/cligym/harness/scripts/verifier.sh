# shellcheck shell=sh disable=SC1090,SC1091,SC2086,SC2153
# The verifier of a cligym task, run under the static busybox shipped in the task's tests/
# (usage: busybox sh verifier.sh MODE TESTS_DIR LOGS_DIR). It uses only busybox's applets,
# so nothing of the image's shell, coreutils, libc or Python runs before the test command.
# Without errexit: a reward is always written. task.env, beside it, holds the task's values
# and the path of every file of its reference.
#
#  1. stops every process but PID 1's keep-alive, its own ancestors and itself, in rounds
#     until a round finds none (reward 0 if that never happens), and checks that PID 1,
#     which no signal reaches, still runs one of gold's keep-alive programs;
#  2. empties the log folder (dot-files too) and restores gold's test files and pytest
#     configuration; deletes conftests and configuration files gold did not have;
#  3. removes an interrupted pip's "~" folders from the site directories, then compares the
#     environment with gold's listing (fingerprint.sh): interpreter, standard library,
#     every site directory, every folder on PATH, the program loader every program's
#     PT_INTERP names (and the links on its way), the mapped shared objects and every
#     folder the loader searches (glibc-hwcaps and hwcap subfolders too), its
#     configuration and cache, nsswitch.conf; and pip's configuration (m_pipconf); the
#     project's own files must be gold's, and no folder on sys.path may hold a new
#     importable entry, in it or below it, nor a new distribution's metadata (entry points
#     load plugins); only then does a program of the image run: gold's loader, shown to be
#     gold's, says how it resolves the interpreter's and each extension module's libraries;
#  4. runs the listed tests with gold's test command, plugin autoloading off, gold's
#     plugins, rootdir and configuration pinned, bytecode only in a fresh cache of its own
#     (seeded with gold's bytecode files that still hold gold's bytes, m_seed_bytecode);
#     nothing before it runs a program that is not busybox's applet, the loader aside;
#  5. stops every process again and writes the verdict, reward 1 only if every listed
#     test is reported passed and the judge says "N of N passed" (N the task's count), to
#     reward.txt and reward.json (each renamed into place).
# shellcheck disable=SC2034  # the paths task.env gives start at it
T=$2
. "${0%/*}/task.env"
. "$R_VERDICT"  # MODE and LOGS from the arguments; the listing, sweeping and verdict functions

# -- 1. nothing the agent left running survives (sweep.sh); 2. a clean log folder ---------
begin
# -- 2. gold's test files -----------------------------------------------------------------
while IFS= read -r p; do rm -rf "$p"; done < "$R_PRISTINE"
while IFS= read -r p; do rm -rf "$p"; done < "$R_FOREIGN"
tar -xf "$R_TAR" -C / || refuse "cannot restore the test files"
find "$ROOTDIR" -name conftest.py 2>/dev/null | while IFS= read -r p; do
  grep -qxF "$p" "$R_CONFTESTS" || rm -f "$p"
done

# -- 3. the environment is gold's ---------------------------------------------------------
# what an interrupted pip leaves in a site directory, a folder under a "~" name, is removed
# unless gold had it: pip ignores it, but importlib.metadata reads a ~x.dist-info as a
# distribution (entry points, pytest plugins); anything else under a "~" name is listed
grep '^S ' "$R_SPEC" | cut -c3- | while IFS= read -r site; do
  for p in "$site"/~*; do
    if [ -d "$p" ] && [ ! -L "$p" ] && ! grep -qF " $p/" "$R_FINGERPRINT"; then rm -rf "$p"; fi
  done
done
# the listings at once, in groups of about equal work (hashing is most of the verifier's time)
for kinds in PI L TSHCF; do
  grep -E "^[$kinds] " "$R_SPEC" > "$LOGS/spec-$kinds.txt"
  m_listing "$LOGS/spec-$kinds.txt" > "$LOGS/fingerprint-$kinds.txt" &
done
grep '^S ' "$R_SPEC" | cut -c3- > "$LOGS/sites.txt"
m_workdir "$WORKDIR" "$LOGS/sites.txt" > "$LOGS/workdir-found.txt" &
m_pipconf "$PREFIX" > "$LOGS/pip-config-found.txt" &
wait
LC_ALL=C sort -u "$LOGS/fingerprint-PI.txt" "$LOGS/fingerprint-L.txt" "$LOGS/fingerprint-TSHCF.txt" > "$LOGS/fingerprint-found.txt"
same_as_gold "$R_FINGERPRINT" "$LOGS/fingerprint-found.txt" "the environment differs"
# pip's configuration is part of the state: a blocker left in it sends the next install astray
same_as_gold "$R_PIP" "$LOGS/pip-config-found.txt" "pip's configuration differs"
lines_not_in() {  # the lines of the file $2 that the file $1 does not hold, in $2's order
  awk 'FILENAME == ARGV[1] { seen[$0] = 1; next } !($0 in seen)' "$1" "$2"
}
lines_not_in "$LOGS/workdir-found.txt" "$R_WORKDIR" > "$LOGS/workdir-missing.txt"
if [ -s "$LOGS/workdir-missing.txt" ]; then
  refuse "a file of the project differs from gold: $(head -n 1 "$LOGS/workdir-missing.txt")"
fi
lines_not_in "$R_WORKDIR" "$LOGS/workdir-found.txt" | cut -d' ' -f2 > "$LOGS/workdir-new.txt"
while IFS= read -r p; do
  case "${p##*/}" in *.py|*.pyc|*.pyo|*.so|*.pth|*.zip|*.egg|__pycache__) ;; *) continue ;; esac
  grep -qxF "${p%/*}" "$R_PACKAGES" && refuse "$p is a new module inside the project's packages"
done < "$LOGS/workdir-new.txt"
ident() {  # a name an import statement can spell (any byte above ASCII may be a letter)
  case "$1" in ''|[0-9]*|*[]\ \!\"#\$%\&\'\(\)\*+,./:\;\<=\>?@[\\^\`\{\|\}~-]*|__pycache__) return 1 ;; esac
}
metadata() {  # a name importlib.metadata reads as a distribution in a folder on sys.path
  case "$1" in
    *.[dD][iI][sS][tT]-[iI][nN][fF][oO]|*.[eE][gG][gG]-[iI][nN][fF][oO]|*.[eE][gG][gG]-[lL][iI][nN][kK]|*.[eE][gG][gG]) return 0 ;;
  esac
  return 1
}
importable() {  # an entry Python could import from a folder on sys.path (by an identifier),
  # or read as a distribution's metadata (entry points load pytest plugins by name)
  n=${1##*/}
  metadata "$n" && return 0
  ident "${n%%.*}" || return 1
  if [ -d "$1" ]; then
    case "$n" in *.*) return 1 ;; esac
    [ -n "$(find "$1" \( -name '*.py' -o -name '*.pyc' -o -name '*.so' -o -name '*.pth' \) -print 2>/dev/null | head -n 1)" ]
    return
  fi
  case "$n" in *.py|*.pyc|*.pyw|*.so|*.zip|*.pth) return 0 ;; esac
  return 1
}
below() {  # a new PATH below the folder DIR on sys.path that an import reaches: anything in a
  # distribution's metadata there, or a module or package in folders named as identifiers
  # (a folder without __init__.py is a namespace package), build output aside
  rel=${1#"$2"/}
  first=${rel%%/*}
  case " $BUILD_OUTPUT " in *" $first "*) return 1 ;; esac
  metadata "$first" && return 0
  while :; do
    c=${rel%%/*}
    [ "$c" = "$rel" ] && break
    ident "$c" || return 1
    rel=${rel#*/}
  done
  ident "${rel%%.*}" || return 1
  case "$rel" in *.py|*.pyc|*.so) return 0 ;; esac
  [ -d "$1" ] && importable "$1"
}
shadow() {  # a folder on sys.path, and the file of its entries in gold (or nothing): no new
  [ -d "$1" ] || return 0  # importable entry (build output is allowed unless a test imports it)
  for p in "$1"/* "$1"/.[!.]* "$1"/..?*; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    n=${p##*/}
    [ -n "$2" ] && grep -qxF "$n" "$2" && continue
    importable "$p" || continue
    case " $BUILD_OUTPUT " in *" $n "*) continue ;; esac
    refuse "$p is new and importable: it could shadow or add to what the tests import"
  done
}
BUILD_OUTPUT=""  # build and dist, unless a test imports or looks for such a name
for n in build dist; do grep -qxF "$n" "$R_PROTECTED" || BUILD_OUTPUT="$BUILD_OUTPUT $n"; done
while IFS= read -r d; do  # the folders on sys.path whose new files the project's listing shows
  case "$d" in "$WORKDIR"|"$WORKDIR"/*) echo "$d" ;; esac
done < "$R_SHADOWS" > "$LOGS/path-dirs.txt"
while IFS= read -r p; do
  while IFS= read -r d; do
    case "$p" in "$d"/*/*) below "$p" "$d" && refuse "$p is new and importable: it could shadow or add to what the tests import" ;; esac
  done < "$LOGS/path-dirs.txt"
done < "$LOGS/workdir-new.txt"
i=0
while IFS= read -r d; do i=$((i + 1)); shadow "$d" "${R_SHADOW%@*}$i${R_SHADOW##*@}"; done < "$R_SHADOWS"
old_ifs=$IFS
IFS=:
for d in ${PYTHONPATH:-}; do
  IFS=$old_ifs
  if [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; then refuse "the PYTHONPATH entry $d is not a folder"; fi
  shadow "$d" ""
  IFS=:
done
IFS=$old_ifs
found=$(cd "$WORKDIR" && command -v "$FIRST")
[ "$found" = "$COMMAND_PATH" ] || refuse "the test command's $FIRST is '$found', not gold's $COMMAND_PATH"
# how the loader resolves the interpreter's and every extension module's libraries: the
# first program of the image to run, and only now that the listing showed it (and every
# program's PT_INTERP, the loader cache, its configuration) to be gold's
if [ -s "$R_ELF" ]; then
  set --
  while IFS= read -r f; do set -- "$@" "$f"; done < "$R_ELF"
  m_resolved "$LOADER" "$@" > "$LOGS/resolved-found.txt"
  same_as_gold "$R_RESOLVED" "$LOGS/resolved-found.txt" "shared libraries resolve differently"
fi

# -- 4. the tests, judged from the JUnit report alone -------------------------------------
set --
while IFS= read -r a; do set -- "$@" "$a"; done < "$R_ARGS"
set -- "$@" --junitxml="$JUNIT"
while IFS= read -r t; do set -- "$@" "$t"; done < "$R_TESTS"
unset PYTEST_ADDOPTS PYTEST_PLUGINS PYTHONDONTWRITEBYTECODE
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
PYTHONPYCACHEPREFIX=$(mktemp -d /tmp/cligym-pycache.XXXXXXXX) || refuse "no fresh bytecode cache"
export PYTHONPYCACHEPREFIX
# gold's own bytecode where a file still holds its bytes: what else is there is compiled anew
if [ -n "${R_BYTECODE:-}" ] && [ -s "$R_BYTECODE" ]; then m_seed_bytecode "$R_BYTECODE" "$PYTHONPYCACHEPREFIX"; fi
load_judge
cd "$WORKDIR" || refuse "no workdir"
eval "$COMMAND"' "$@"' > "$LOGS/pytest-output.txt" 2>&1
cd /
sweep || refuse "a process the tests left kept coming back"
rm -rf "$PYTHONPYCACHEPREFIX"
cat "$LOGS/pytest-output.txt"
judge pytest
