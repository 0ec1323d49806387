# shellcheck shell=sh disable=SC1091,SC2086
# cligym's guard: one command of a harness's verifier phase (usage: busybox sh phase.sh CMD),
# started by the guard's launcher (bin/bash, guard-launcher.c) under the guard's static
# busybox, from the guard folder the task's docker-compose.yaml mounts read-only. CMD is
# one of the forms the launcher lets through:
#
#   rm -f -- /logs/verifier/F ...        remove those files (the stale rewards)
#   chmod +x /tests/F                    make the test script executable
#   (/tests/F) > /logs/verifier/F 2>&1   run it, its output in that file
#
# Before any of them every other process is stopped (sweep.sh), so nothing the agent left
# running acts after the phase has begun. Before the run, the log folder is emptied (a link
# planted there would otherwise take the output's redirection elsewhere) and the uploaded
# tests must be, file for file and byte for byte, the ones the task was exported with
# (tests.files, tests.dirs and tests.sha256 beside this file): no extra file, no link, no
# folder swapped. Only busybox's applets run here.
G=${0%/*}
CMD=$1
. "$G/sweep.sh"
sweep
swept=$?

case "$CMD" in
  "rm -f -- "*)
    set -- ${CMD#rm -f -- }
    rm -f -- "$@"
    exit 0 ;;
  "chmod +x "*)
    p=${CMD#chmod +x }
    [ -f "$p" ] && [ ! -L "$p" ] && chmod +x "$p"
    exit 0 ;;
esac

script=${CMD%% > *}
script=${script#(}
script=${script%)}
out=${CMD#* > }
out=${out% 2>&1}
logs=${out%/*}
rest=${script#/}
tests=/${rest%%/*}

if [ -L "$logs" ] || { [ -e "$logs" ] && [ ! -d "$logs" ]; }; then rm -rf "$logs"; fi
mkdir -p "$logs"
for p in "$logs"/* "$logs"/.[!.]* "$logs"/..?*; do
  if [ -e "$p" ] || [ -L "$p" ]; then rm -rf "$p"; fi
done

refuse() {  # the verdict without running anything: reward 0, and why
  echo "cligym verifier: reward 0: $1" > "$out"
  echo 0 > "$logs/reward.txt"
  echo '{"reward": 0.0}' > "$logs/reward.json"
  exit 0
}

[ "$swept" = 0 ] || refuse "a process left running kept coming back"
if [ -L "$tests" ] || [ ! -d "$tests" ]; then refuse "$tests is not the uploaded tests folder"; fi
odd=$(find "$tests" ! -type f ! -type d | head -n 1)
[ -z "$odd" ] || refuse "$odd in the uploaded tests is a link or a special file"
(cd "$tests" && find . -type d | LC_ALL=C sort) | cmp -s - "$G/tests.dirs" \
  || refuse "the uploaded tests' folders are not the task's"
(cd "$tests" && find . -type f | LC_ALL=C sort) | cmp -s - "$G/tests.files" \
  || refuse "the uploaded tests' files are not the task's"
(cd "$tests" && sha256sum -c -s "$G/tests.sha256") || refuse "an uploaded test file differs from the task's"

"$G/busybox" sh "$script" > "$out" 2>&1
exit 0
