"""The verifier script of an exported task, and the manifest listing it shares with the
export.

The script runs under the static busybox shipped in the task's ``tests/bin`` and calls
only its applets (Debian's build prefers applets to ``PATH``), so it needs nothing of the
image: not its shell, coreutils, libc or Python. It

1. stops every process but PID 1, itself and its ancestors (the harness's own exec chain),
   so nothing left running by the agent can write a reward or touch the files it restores;
2. removes the reward file, restores gold's test files, conftests and pytest configuration
   (``pristine.tar``), deletes the conftest/config/``__init__`` files gold did not have and
   the ``__pycache__`` folders beside them and in the trees the manifest covers;
3. checks the manifest (the interpreter, the standard library, pytest and its plugins, the
   import hooks on ``sys.path``), that the test command still finds gold's interpreter,
   and that no new file in the workdir, the test folders or ``$PYTHONPATH`` shadows a
   standard-library or tooling module: any difference is reward 0 with one line saying why;
4. runs the node ids with the project's test command, plugin autoloading off and gold's
   plugins named, gold's rootdir and configuration file pinned, and a fresh JUnit report;
5. writes reward 1 only if every listed id is reported ``passed`` (a missing id fails);
   the exit status of pytest is never read.

``MANIFEST_FUNCS`` is also run in a gold container at export time, so the expected listing
and the one checked come from the same code.
"""

from __future__ import annotations

import shlex

#: Shell functions that list what a manifest spec (``KIND PATH`` lines) covers.
MANIFEST_FUNCS = r'''
m_entry() {
  if [ -L "$1" ]; then echo "link $1 -> $(readlink "$1") $(sha256sum "$1" 2>/dev/null | cut -c1-64)"
  elif [ -f "$1" ]; then set -- "$1" $(sha256sum "$1"); echo "file $1 $2"
  elif [ -e "$1" ]; then echo "other $1"
  else echo "absent $1"; fi
}
m_tree() {
  [ -d "$1" ] || { m_entry "$1"; return; }
  find "$1" \( -name __pycache__ -o -name site-packages -o -name dist-packages \) -prune -o -type f -print0 \
    | xargs -0 -r sha256sum | sed 's/^\([0-9a-f]*\)  \(.*\)$/file \2 \1/'
  find "$1" \( -name __pycache__ -o -name site-packages -o -name dist-packages \) -prune -o -type l -print \
    | while IFS= read -r p; do m_entry "$p"; done
  find "$1" \( -name __pycache__ -o -name site-packages -o -name dist-packages \) -prune -o \
    ! -type f ! -type l ! -type d -print | sed 's/^/other /'
}
m_hooks() {
  for p in "$1"/*.pth "$1"/sitecustomize* "$1"/usercustomize*; do
    if [ -e "$p" ] || [ -L "$p" ]; then m_entry "$p"; fi
  done
}
m_listing() {
  while IFS=' ' read -r kind path; do
    case "$kind" in F) m_entry "$path" ;; T) m_tree "$path" ;; H) m_hooks "$path" ;; esac
  done < "$1" | LC_ALL=C sort
}
'''

#: Stops every process but PID 1, this shell and its ancestors (three rounds: a process
#: may fork while a round runs). Only builtins run inside the loop, so it forks nothing.
#: A child of PID 1 that started with it (within 2 s, in clock ticks) is the container's
#: keep-alive when PID 1 is a shell running ``sleep infinity`` as its child (Harbor's
#: ``sh -c "sleep infinity"``): killing it would end the container. It is stopped instead,
#: after each round's kills, so nothing that could resume it survives; should an agent's
#: process ever be taken for it, that process is frozen, which is as harmless.
STOP_OTHERS = r'''
keep=" 1 $$ "
pid=$$
while [ "$pid" -gt 1 ]; do
  read -r stat < /proc/$pid/stat || break
  stat=${stat##*) }; set -- $stat; pid=$2; keep="$keep$pid "
done
read -r stat < /proc/1/stat; stat=${stat##*) }; set -- $stat; born=$((${20} + 200))
for round in 1 2 3; do
  spared=""
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    case "$keep" in *" $pid "*) continue ;; esac
    read -r stat 2>/dev/null < "$dir/stat" || continue
    stat=${stat##*) }; set -- $stat
    if [ "$2" = 1 ] && [ "${20}" -le "$born" ]; then spared="$spared $pid"; else kill -9 "$pid" 2>/dev/null; fi
  done
  for pid in $spared; do kill -STOP "$pid" 2>/dev/null; done
done
'''

#: Reads keys.tsv (node, classname, name) and the report's testcases, one a line; prints a
#: FAILED line per listed id not reported passed and exits 1 if there is one.
JUDGE = r'''
BEGIN { FS = "\t" }
FNR == NR { want[$2 "\t" $3] = $1; order[++n] = $2 "\t" $3; next }
{
  c = ""; m = ""
  if (match($0, /classname="[^"]*"/)) c = substr($0, RSTART + 11, RLENGTH - 12)
  if (match($0, / name="[^"]*"/)) m = substr($0, RSTART + 7, RLENGTH - 8)
  k = c "\t" m
  if (!(k in want)) next
  seen[k] = 1
  if ($0 ~ /<(failure|error|skipped)[ >\/]/) bad[k] = 1
}
END {
  ok = n > 0
  for (i = 1; i <= n; i++) {
    k = order[i]
    if (!(k in seen)) { print "FAILED " want[k] " - not in the test report"; ok = 0 }
    else if (k in bad) { print "FAILED " want[k] " - not passed"; ok = 0 }
  }
  exit ok ? 0 : 1
}
'''


#: The verifier; ``@@NAME@@`` marks what ``verifier_script`` fills in.
TEMPLATE = r"""@@HEAD@@
# Verifier for cligym task @@ID@@: restores the gold test files and pytest configuration,
# checks the interpreter, standard library and pytest against gold's hashes, runs the
# listed tests and writes reward 1 only if every one of them passed. It runs under the
# busybox shipped beside it, without errexit: a reward is always written.
T=@@TESTS@@
V=$T/verdict
MODE=@@MODE@@
LOGS=@@LOGS@@
REWARD=@@REWARD@@
JUNIT=$LOGS/junit.xml
@@STOP@@
umask 022
rm -rf "$REWARD" "$JUNIT"
mkdir -p "$LOGS"
verdict() {
  if [ "$MODE" = harbor ]; then rm -rf "$REWARD"; echo "$1" > "$REWARD"; fi
  [ -n "$2" ] && echo "cligym verifier: reward $1: $2"
  [ "$1" = 1 ] && exit 0
  [ "$MODE" = harbor ] && exit 0
  exit 1
}
refuse() {
  echo "=========================== short test summary info ============================"
  while IFS= read -r t; do echo "FAILED $t - $1"; done < "$V/tests.txt"
  verdict 0 "$1"
}
@@FUNCS@@
# -- restore gold's test files and pytest configuration ---------------------------------
while IFS= read -r p; do rm -rf "$p"; done < "$V/pristine.txt"
while IFS= read -r p; do rm -rf "$p"; done < "$V/foreign.txt"
tar -xf "$V/pristine.tar" -C / || refuse "cannot restore the test files"
find @@ROOTDIR@@ -name conftest.py 2>/dev/null | while IFS= read -r p; do
  grep -qxF "$p" "$V/conftests.txt" || rm -f "$p"
done
while IFS= read -r d; do rm -rf "$d/__pycache__"; done < "$V/pycache.txt"
grep '^T ' "$V/spec.txt" | while IFS=' ' read -r kind d; do
  [ -d "$d" ] && find "$d" -name __pycache__ -type d -prune -exec rm -rf {} +
done
# -- the manifest: interpreter, standard library, pytest and plugins, import hooks ------
m_listing "$V/spec.txt" > "$LOGS/manifest-found.txt"
if ! cmp -s "$V/manifest.txt" "$LOGS/manifest-found.txt"; then
  diff "$V/manifest.txt" "$LOGS/manifest-found.txt" > "$LOGS/manifest-diff.txt"
  refuse "gold's test tooling changed: $(grep '^[-+][^-+]' "$LOGS/manifest-diff.txt" | head -n 1)"
fi
found=$(cd @@WORKDIR@@ && command -v @@FIRST@@)
[ "$found" = @@COMMAND_PATH@@ ] || refuse "the test command's @@FIRST@@ is '$found', not gold's @@COMMAND_PATH@@"
shadow() {  # a folder on sys.path, and the file of its entries in gold (or nothing)
  [ -d "$1" ] || return 0
  for p in "$1"/* "$1"/.[!.]*; do
    [ -e "$p" ] || [ -L "$p" ] || continue
    n=${p##*/}
    case "$n" in *.py|*.pyc|*.pyw|*.so|*.zip) ;; *) [ -d "$p" ] || continue ;; esac
    [ -n "$2" ] && grep -qxF "$n" "$2" && continue
    grep -qxF "${n%%.*}" "$V/protected.txt" && refuse "$p shadows the module ${n%%.*}"
  done
}
i=0
while IFS= read -r d; do i=$((i + 1)); shadow "$d" "$V/shadow-$i.txt"; done < "$V/shadow-dirs.txt"
old_ifs=$IFS; IFS=:
for d in ${PYTHONPATH:-}; do IFS=$old_ifs; shadow "$d" ""; IFS=:; done
IFS=$old_ifs
# -- the tests, judged from the JUnit report alone -----------------------------------------
set --
while IFS= read -r t; do set -- "$@" "$t"; done < "$V/tests.txt"
unset PYTEST_ADDOPTS PYTEST_PLUGINS
export PYTEST_DISABLE_PLUGIN_AUTOLOAD=1
cd @@WORKDIR@@ || refuse "no workdir"
@@COMMAND@@ -p no:cacheprovider --continue-on-collection-errors @@PLUGINS@@ @@PIN@@ -o junit_family=xunit1 --junitxml="$JUNIT" -rA "$@" \
  > "$LOGS/pytest-output.txt" 2>&1
cat "$LOGS/pytest-output.txt"
[ -f "$JUNIT" ] || refuse "pytest wrote no report"
tr '\n' ' ' < "$JUNIT" | sed 's/<testcase /\n<testcase /g' | grep '^<testcase ' > "$LOGS/testcases.txt"
if awk -f "$V/judge.awk" "$V/keys.tsv" "$LOGS/testcases.txt" > "$LOGS/judge.txt"; then
  verdict 1 "all @@COUNT@@ listed tests passed"
fi
cat "$LOGS/judge.txt"
verdict 0 "$(grep -c . "$LOGS/judge.txt") of the @@COUNT@@ listed tests did not pass"
"""


def q(text: str) -> str:
    return shlex.quote(text)


def verifier_script(bundle, *, tests_dir: str, reward: str, logs: str, mode: str) -> str:
    """The busybox shell script judging ``bundle`` (a VerdictBundle) in ``mode`` "harbor"
    (writes ``reward``, always exits 0) or "tb" (prints -rA style ``FAILED`` lines for
    Terminal-Bench's parser and exits non-zero unless every listed test passed)."""
    first = bundle.test_command.split()[0]
    values = {
        "HEAD": f"#!{tests_dir}/bin/busybox sh" if mode == "harbor" else "# run with the busybox beside it",
        "ID": bundle.instance_id,
        "TESTS": q(tests_dir),
        "MODE": mode,
        "LOGS": q(logs),
        "REWARD": q(reward),
        "STOP": STOP_OTHERS.strip("\n"),
        "FUNCS": MANIFEST_FUNCS.strip("\n"),
        "ROOTDIR": q(bundle.rootdir),
        "WORKDIR": q(bundle.workdir),
        "FIRST": q(first),
        "COMMAND_PATH": q(bundle.command_path),
        "COMMAND": bundle.test_command,
        "PLUGINS": " ".join(f"-p {q(p)}" for p in bundle.plugins),
        "PIN": f"--rootdir={q(bundle.rootdir)}" + (f" -c {q(bundle.inifile)}" if bundle.inifile else ""),
        "COUNT": str(len(bundle.order)),
    }
    text = TEMPLATE
    for key, value in values.items():
        text = text.replace(f"@@{key}@@", value)
    return text
