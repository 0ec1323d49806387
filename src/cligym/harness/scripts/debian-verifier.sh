# shellcheck shell=sh disable=SC1090,SC1091,SC2153
# The verifier of a cligym task on a Debian gold (a source package's autopkgtest tests),
# run under the static busybox shipped in the task's tests/ (usage: busybox sh verifier.sh
# MODE TESTS_DIR LOGS_DIR). task.env, beside it, holds the task's values and the path of
# every file of its reference. Without errexit: a reward is always written.
#
#  1. stops every process but PID 1's keep-alive, its ancestors and itself (sweep.sh), and
#     empties the log folder (verdict.sh's begin);
#  2. restores gold's source tree and cligym's runner (its script, converters and tests
#     list) from pristine.tar, whatever the agent did to them;
#  3. compares the system's state with gold's, line by line (fingerprint.sh's m_listing of
#     the task's spec: every file the tests opened, ran, mapped or looked up, by content;
#     every search miss, and a program's name in the PATH folders before its own, absent;
#     /usr/local, alternatives, diversions, the loader's and apt's configuration, dpkg's
#     journal); only then does a program of the image run: gold's loader, shown to be
#     gold's, says how it resolves every object and program the tests mapped or ran;
#  4. runs the listed tests with gold's runner (under this busybox: its applets, the
#     task's awk), the image's apt tools refused, and judges the JUnit report by the keys;
#  5. stops every process again and writes the verdict (reward 1 only if the judge says
#     "N of N passed", N the task's count).
# shellcheck disable=SC2034  # the paths task.env gives start at it
T=$2
. "${0%/*}/task.env"
. "$R_VERDICT"  # MODE and LOGS from the arguments; the listing, sweeping and verdict functions

# -- 1. nothing the agent left running survives; a clean log folder -----------------------
begin

# -- 2. gold's source tree and runner -----------------------------------------------------
while IFS= read -r p; do rm -rf "$p"; done < "$R_PRISTINE"
tar -xf "$R_TAR" -C / || refuse "cannot restore gold's source tree and test runner"

# -- 3. the system is gold's --------------------------------------------------------------
m_listing "$R_SPEC" | LC_ALL=C sort -u > "$LOGS/state-found.txt"
same_as_gold "$R_FINGERPRINT" "$LOGS/state-found.txt" "the system differs"
if [ -s "$R_ELF" ]; then
  set --
  while IFS= read -r f; do set -- "$@" "$f"; done < "$R_ELF"
  m_resolved "$LOADER" "$@" > "$LOGS/resolved-found.txt"
  same_as_gold "$R_RESOLVED" "$LOGS/resolved-found.txt" "shared libraries resolve differently"
fi

# -- 4. the tests, judged from the JUnit report alone -------------------------------------
load_judge
set -- --junitxml="$JUNIT"
while IFS= read -r t; do set -- "$@" "$t"; done < "$R_TESTS"
RESULTS=$(mktemp -d /tmp/cligym-debtest.XXXXXXXX) || refuse "no fresh results folder"
cd "$WORKDIR" || refuse "no workdir"
DEBTEST_AWK="$R_BUSYBOX awk" DEBTEST_RESULTS=$RESULTS "$R_BUSYBOX" sh "$COMMAND" "$@" > "$LOGS/test-output.txt" 2>&1
cd /
sweep || refuse "a process the tests left kept coming back"
rm -rf "$RESULTS"
cat "$LOGS/test-output.txt"
judge "the test runner"
