#!/bin/sh
# The sweeper: a fixed, task-blind battery of generic environment repairs. It reads
# neither the task nor any error; it does what a "fix everything" script does on a broken
# Python machine. A task it solves teaches little: difficulty measurement runs it in the
# broken image and then the task's failing tests.
#
# Every step is tried; a failing step does not stop the others. Each step is a habit (named
# in cligym.invert.scenarios.base.HABITS) an admin has; the steps:
#  0. run its own commands in a clean environment: every PYTHON*, PIP_* and LD_* variable
#     unset, the interpreter isolated (-I);
#  1. make every interpreter and every program of the venv executable;
#  2. drop /etc/ld.so.preload and rebuild the dynamic loader's cache and SONAME links;
#  3. delete all bytecode (every __pycache__ folder and stray .pyc);
#  4. delete modules in the working directory named like standard-library modules;
#  5. recreate the virtual environment (venv --clear) with the system's pip and setuptools
#     and reinstall every wheel of every local wheelhouse (pip's find-links, and
#     /opt/wheelhouse) with pip's configuration ignored (PIP_CONFIG_FILE=/dev/null, the
#     wheelhouses named on the command line), one wheel per distribution (the last found
#     of those pip can open): all at once; when that fails, all at once with --no-deps,
#     then wheel by wheel;
#  6. refresh the CA certificates, regenerate the configured locales, and restore the time
#     zone link to UTC when it dangles (beside step 5: neither touches the other's files).
#
# With --prepare it only prepares, in $tool, what later sweeps may be given, and exits: its
# pip (step 5), compiled, in one zip, and the state a certificate refresh leaves
# (certs_state, after one). Run in a gold container, that folder is what a harness puts into
# later sweeps' containers. A sweep given it skips the refresh when the certificates are in
# that state already and no hook would run: the refresh would write the same bytes again.
# shellcheck disable=SC2086

step() { echo "sweeper: $*"; }

tool=/tmp/cligym-sweeper-pip
# unpack_pip WHEEL: WHEEL unpacked in $tool with its sha256 beside it, unless $tool holds a
# copy of a wheel with that sha256 already (put there before the sweep: --prepare's zip);
# pip_from says which, pip_main is the pip to run
unpack_pip() {
  sum=$(sha256sum "$1" 2>/dev/null | cut -d ' ' -f 1)
  [ -n "$sum" ] || return 1
  if [ "$(cat "$tool/wheel.sha256" 2>/dev/null)" = "$sum" ] && [ -f "$tool/pip.zip" ]; then
    pip_from="the copy" pip_main="$tool/pip.zip/pip"
    return 0
  fi
  rm -rf "$tool"
  /usr/bin/python3 -I -m zipfile -e "$1" "$tool" 2>&1 && echo "$sum" > "$tool/wheel.sha256" &&
    pip_from=unpacked pip_main="$tool/pip"
}
# certs_state: one sha256 of everything update-ca-certificates reads or writes (the /etc/ssl
# tree, the certificates it links, its configuration and hooks folder, the program and
# openssl): every entry's type, mode, owner and link, every file's bytes. Fails (prints
# nothing) when a tool does: no two states then look alike.
certs_state() {
  state=$(mktemp /tmp/cligym-certs.XXXXXXXX) || return 1  # (a fresh file: no name the image may hold)
  set -- /etc/ssl /usr/share/ca-certificates /usr/local/share/ca-certificates /etc/ca-certificates \
    /etc/ca-certificates.conf "$(command -v update-ca-certificates)" "$(command -v openssl)"
  for p in "$@"; do  # (each path leaves the front; those that are there come back at the end)
    shift
    if [ -e "$p" ] || [ -L "$p" ]; then set -- "$@" "$p"; else echo "absent $p" >> "$state"; fi
  done
  if [ $# -eq 0 ] || { LC_ALL=C find "$@" -printf '%y %m %U %G %p -> %l\n' >> "$state" &&
    LC_ALL=C find "$@" -type f -exec sha256sum {} + >> "$state"; }; then
    LC_ALL=C sort "$state" | sha256sum | cut -d ' ' -f 1
  fi
  rm -f "$state"
}
# no_ca_hooks: update-ca-certificates would run no hook (a hook may write beyond certs_state)
no_ca_hooks() {
  [ -z "$(ls -A /etc/ca-certificates/update.d 2>/dev/null)" ]
}

bundled=""
bundled_pip=""
for wheel in /usr/share/python-wheels/*.whl; do
  [ -f "$wheel" ] || continue
  bundled="$bundled $wheel"
  case "${wheel##*/}" in pip-*) bundled_pip=$wheel ;; esac
done
if [ "${1:-}" = "--prepare" ]; then
  # its pip as one zip ($tool/pip.zip: one file to copy into a sweep's container, not a
  # thousand), each module compiled beside its source, where zipimport reads it (a module
  # whose bytecode does not fit the interpreter is compiled from its source, as without it)
  [ -n "$bundled_pip" ] && unpack_pip "$bundled_pip" && /usr/bin/python3 -I -m compileall -q -b "$tool/pip" >/dev/null &&
    (cd "$tool" && /usr/bin/python3 -I -m zipfile -c pip.zip pip/) && rm -rf "$tool/pip" "$tool"/pip-*.dist-info
  if command -v update-ca-certificates >/dev/null && update-ca-certificates --fresh >/dev/null 2>&1 &&
    certs=$(certs_state) && [ -n "$certs" ]; then
    mkdir -p "$tool" && echo "$certs" > "$tool/certs.sha256"
  fi
  exit 0
fi

step "0 a clean environment"
for var in $(env | sed -n 's/^\(PYTHON[A-Za-z0-9_]*\|PIP_[A-Za-z0-9_]*\|LD_[A-Za-z0-9_]*\)=.*/\1/p'); do
  unset "$var"
done
export PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1

step "1 executables"
chmod a+rx /usr/bin/python3* /usr/local/bin/* 2>/dev/null
[ -n "${VIRTUAL_ENV:-}" ] && chmod a+rx "$VIRTUAL_ENV"/bin/* 2>/dev/null

step "2 dynamic loader"
rm -f /etc/ld.so.preload
ldconfig 2>&1

step "3 bytecode"
# (the sweeper's own copy of pip, step 5, holds its bytecode inside its zip: no file here)
find / -xdev \( -name __pycache__ -type d -prune -exec rm -rf {} + \) \
  -o \( -name '*.pyc' -type f -exec rm -f {} + \) 2>/dev/null

step "4 stray standard-library names in $PWD"
names=$(/usr/bin/python3 -I -c 'import sys; print(" ".join(sorted(sys.stdlib_module_names)))' 2>/dev/null)
for file in ./*.py; do
  [ -f "$file" ] || continue
  base=$(basename "$file" .py)
  case " $names " in *" $base "*) rm -f "$file"; echo "removed $file" ;; esac
done

# step 6 touches none of step 5's files (and step 5 installs from local wheels, without
# certificates): it runs beside it. The state a refresh leaves, when given, is read first:
# step 5 may remove $tool.
step "6 certificates, locales, time zone"
refreshed=$(cat "$tool/certs.sha256" 2>/dev/null)
(
  if command -v update-ca-certificates >/dev/null; then
    if [ -n "$refreshed" ] && no_ca_hooks && [ "$(certs_state)" = "$refreshed" ]; then
      step "6 the certificates are as a refresh leaves them"
    else
      update-ca-certificates --fresh >/dev/null 2>&1
    fi
  fi
  command -v locale-gen >/dev/null && [ -f /etc/locale.gen ] && locale-gen >/dev/null 2>&1
  [ -e /etc/localtime ] || ln -sf /usr/share/zoneinfo/Etc/UTC /etc/localtime
) &
system_files=$!

step "5 venv and wheels"
houses=$(sed -n 's/^[[:space:]]*find-links[[:space:]]*=[[:space:]]*//p' /etc/pip.conf /etc/xdg/pip/pip.conf 2>/dev/null)
wheels=""
seen=" "
for house in $houses /opt/wheelhouse; do
  case "$seen" in *" $house "*) continue ;; esac
  seen="$seen$house "
  for wheel in "$house"/*.whl; do [ -f "$wheel" ] && wheels="$wheels $wheel"; done
done
# The venv is made without pip, and pip runs from the system's bundled wheel to install it
# and the wheels at once, without compiling bytecode: what ensurepip installs, less the
# bytecode it compiles (seconds per sweep; imports compile what they need). Without a
# bundled pip wheel, venv's own ensurepip does it. The bundled pip runs unpacked in $tool
# (unpack_pip: a copy put there before the sweep, when it is of a wheel with the same
# sha256, zipped and compiled already; the sweep's last line says which).
links=""
for house in $houses /opt/wheelhouse; do [ -d "$house" ] && links="$links --find-links $house"; done
if [ -n "${VIRTUAL_ENV:-}" ] && [ -n "$bundled_pip" ]; then
  /usr/bin/python3 -I -m venv --clear --without-pip "$VIRTUAL_ENV" 2>&1
  wheels="$bundled $wheels"
  pip="$VIRTUAL_ENV/bin/python -I $bundled_pip/pip"
  unpack_pip "$bundled_pip" && pip="$VIRTUAL_ENV/bin/python -I $pip_main"
elif [ -n "${VIRTUAL_ENV:-}" ]; then
  /usr/bin/python3 -I -m venv --clear "$VIRTUAL_ENV" 2>&1
  pip="$VIRTUAL_ENV/bin/python -I -m pip"
else
  pip="/usr/bin/python3 -I -m pip"
fi
# A wheel pip cannot open (a download cut short: no central directory, or no metadata in
# it) is left out first: wheel by wheel, it alone would fail (one interpreter reads them all)
readable=$(/usr/bin/python3 -I -c '
import sys, zipfile
for path in sys.argv[1:]:
    try:
        with zipfile.ZipFile(path) as archive:
            if any(name.endswith(".dist-info/METADATA") for name in archive.namelist()):
                print(path)
    except Exception:
        pass
' $wheels 2>/dev/null) && [ -n "$readable" ] && wheels=$readable
# One wheel per distribution, the last found (a wheelhouse's over a bundled one; the houses
# in the order read above): pip refuses two versions of one distribution in one install,
# and the last is what installing wheel by wheel would leave.
last=$(printf '%s\n' $wheels | awk '
  { name = $0; sub(/.*\//, "", name); sub(/-.*/, "", name); name = tolower(name); gsub(/[-_.]+/, "-", name)
    at[name] = NR; path[NR] = $0; named[NR] = name }
  END { for (i = 1; i <= NR; i++) if (at[named[i]] == i) print path[i] }') && [ -n "$last" ] && wheels=$last
# all at once with their dependencies; else all at once without (a dependency the houses
# lack); else wheel by wheel (a wheel pip cannot read)
if [ -n "$wheels" ] && ! $pip install --no-index $links --no-compile --force-reinstall $wheels 2>&1 &&
  ! $pip install --no-index $links --no-compile --no-deps --force-reinstall $wheels 2>&1; then
  for wheel in $wheels; do $pip install --no-index $links --no-compile --no-deps --force-reinstall "$wheel" 2>&1; done
fi

rm -rf "$tool"  # (its copy of pip: the tests then run in the state the sweep left)
wait "$system_files"  # step 6
[ -n "${pip_from:-}" ] && echo "sweeper: pip from $pip_from"  # (last: a caller may read the tail only)
exit 0
