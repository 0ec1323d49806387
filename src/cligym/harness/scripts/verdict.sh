# shellcheck shell=sh disable=SC1090,SC1091,SC2153
# What every cligym verifier shares, sourced once the verifier has read task.env, with its
# own arguments (MODE TESTS_DIR LOGS_DIR): fingerprint.sh and sweep.sh loaded; then the
# start (no process of the agent's left, the keep-alive programs recorded, a clean log
# folder), the verdict (reward written only after a last sweep), the comparison with a
# gold listing, and the judge of a JUnit report by the task's keys.
MODE=$1
LOGS=$3
. "$R_FUNCS"
. "$R_SWEEP"
REWARD=$LOGS/reward.txt
# shellcheck disable=SC2034  # the verifier's test command writes it
JUNIT=$LOGS/junit.xml
umask 022

write_reward() {  # the verdict's last act: each file renamed into place
  [ "$MODE" = harbor ] || return 0
  echo "$1" > "$LOGS/.reward.txt.$$" && mv -f "$LOGS/.reward.txt.$$" "$REWARD"
  echo "{\"reward\": $1.0}" > "$LOGS/.reward.json.$$" && mv -f "$LOGS/.reward.json.$$" "$LOGS/reward.json"
}

verdict() {  # every path here comes after a sweep and starts nothing that outlives it
  sweep  # and once more, so that nothing is left to act between the verdict and its reading
  if ! pid1_ok "$KEEPALIVE"; then
    set -- 0 "PID 1 is no longer the container's keep-alive"
  fi
  write_reward "$1"
  [ -n "$2" ] && echo "cligym verifier: reward $1: $2"
  [ "$1" = 1 ] && exit 0
  [ "$MODE" = harbor ] && exit 0
  exit 1
}

refuse() {
  echo "=========================== short test summary info ============================"
  while IFS= read -r t; do echo "FAILED $t - $1"; done < "$R_TESTS"
  verdict 0 "$1"
}

begin() {  # nothing the agent left running survives; PID 1 runs a keep-alive; a clean log folder
  sweep
  swept=$?
  KEEPALIVE=$(mktemp /tmp/cligym-keepalive.XXXXXXXX)
  { cat "$R_KEEPALIVE"; sha256sum "$R_BUSYBOX" | cut -c1-64; } > "$KEEPALIVE"
  if [ -L "$LOGS" ] || [ ! -d "$LOGS" ]; then rm -rf "$LOGS"; fi
  mkdir -p "$LOGS"
  for p in "$LOGS"/* "$LOGS"/.[!.]* "$LOGS"/..?*; do  # all but the harness's own output file
    [ "$p" = "$LOGS/test-stdout.txt" ] && [ -f "$p" ] && [ ! -L "$p" ] && continue
    rm -rf "$p"
  done
  [ "$swept" = 0 ] || refuse "a process left running kept coming back"
  pid1_ok "$KEEPALIVE" || refuse "PID 1 is no longer the container's keep-alive"
}

same_as_gold() {  # GOLD FOUND WHAT: refuses with the first difference, "-" gold's line or "+"
  # this one's (diff prints gold's side first), kept in FOUND's -diff file
  cmp -s "$1" "$2" && return 0
  diff "$1" "$2" > "${2%-found.txt}-diff.txt"
  refuse "$3 from gold: $(grep '^[-+][^-+]' "${2%-found.txt}-diff.txt" | head -n 1)"
}

load_judge() {  # the judge and the keys, read before any test runs
  JUDGE=$(cat "$R_JUDGE")  # kept in memory: nothing the tests start can change how they are judged
  KEYS=$(cat "$R_KEYS")
  # nothing to judge is no pass: busybox's awk runs an empty program and exits 0
  [ -n "$(printf '%s' "$JUDGE" | tr -d ' \t\n')" ] || refuse "the judge (${R_JUDGE##*/}) is empty"
  [ "$COUNT" -gt 0 ] 2>/dev/null || refuse "the task lists no tests"
  [ "$(grep -c . "$R_TESTS")" = "$COUNT" ] || refuse "the task's test list does not hold its $COUNT tests"
  [ "$(printf '%s\n' "$KEYS" | grep -c .)" = "$COUNT" ] || refuse "the task's report keys do not name its $COUNT tests"
}

judge() {  # RUNNER: the verdict from the JUnit report RUNNER wrote, by the keys alone
  if [ ! -f "$JUNIT" ] || [ -L "$JUNIT" ]; then refuse "$1 wrote no report"; fi
  tr '\n' ' ' < "$JUNIT" | sed 's/<testcase /\n<testcase /g' | grep '^<testcase ' > "$LOGS/testcases.txt"
  printf '%s\n' "$KEYS" > "$LOGS/keys.tsv"
  # a pass is the judge's exit status 0 and its last line "N of N passed", N the task's count
  judged=0
  awk "$JUDGE" "$LOGS/keys.tsv" "$LOGS/testcases.txt" > "$LOGS/judge.txt" && judged=1
  cat "$LOGS/judge.txt"
  if [ "$judged" = 1 ] && [ "$(tail -n 1 "$LOGS/judge.txt")" = "$COUNT of $COUNT passed" ]; then
    verdict 1 "all $COUNT listed tests passed"
  fi
  failed=$(grep -c '^FAILED ' "$LOGS/judge.txt")
  [ "$failed" -gt 0 ] || verdict 0 "the judge did not report $COUNT of $COUNT listed tests passed"
  verdict 0 "$failed of the $COUNT listed tests did not pass"
}
