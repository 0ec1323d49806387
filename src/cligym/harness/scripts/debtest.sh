#!/bin/sh
# cligym's runner of a Debian source package's autopkgtest tests (docs/debian.md).
#
#   debtest.sh [--junitxml=PATH] [ID ...]        (run in the source tree)
#
# Reads the tests list cligym wrote at gold time (cligym.debian.control.tests_tsv:
# a "#" header line, then one test a line: name, restrictions, inner runner, verbose
# settings, kind "path" or "command", then the script's path or the command). With ids
# (NAME or NAME::INNER), runs each test an id names, whole; without, every test. Each runs
# in the source tree with autopkgtest's environment, stdin from /dev/null, its stdout,
# stderr and exit status kept in the results folder (NAME.stdout, NAME.stderr, NAME.exit);
# its inner runner's converter (junit/RUNNER.awk) turns them into <testcase> elements, and
# the JUnit report goes to PATH. Never apt, never a build, never the network: apt-get, apt
# and aptitude are shadowed on PATH by stubs that refuse.
#
# Environment: DEBTEST_TESTS (the tests list; /opt/cligym/debian/tests.tsv),
# DEBTEST_CONVERTERS (the converters' folder; junit/ beside this script), DEBTEST_AWK (awk),
# DEBTEST_RESULTS (the results folder; a new temporary one).
# Exit: 0 no testcase failed, 1 some did, 2 a usage error, 3 no tests list,
# 5 no test selected.

set -u

me=debtest.sh
tests_list=${DEBTEST_TESTS:-/opt/cligym/debian/tests.tsv}
converters=${DEBTEST_CONVERTERS:-$(dirname "$0")/junit}
awk_cmd=${DEBTEST_AWK:-awk}
junit=""

# options anywhere among the ids; the ids stay in "$@"
count=$#
while [ "$count" -gt 0 ]; do
  arg=$1; shift; count=$((count - 1))
  case $arg in
    --junitxml=*) junit=${arg#--junitxml=} ;;
    -*) echo "$me: unknown option $arg (usage: $me [--junitxml=PATH] [ID ...])" >&2; exit 2 ;;
    *) set -- "$@" "$arg" ;;
  esac
done
[ -r "$tests_list" ] || { echo "$me: no tests list at $tests_list" >&2; exit 3; }

results=${DEBTEST_RESULTS:-$(mktemp -d "${TMPDIR:-/tmp}/debtest.XXXXXX")}
mkdir -p "$results/.nobin" || exit 3
for tool in apt-get apt aptitude; do
  printf '#!/bin/sh\necho "%s: %s is not run during a test run" >&2\nexit 100\n' "$me" "$tool" \
    > "$results/.nobin/$tool"
  chmod +x "$results/.nobin/$tool"
done

# selected NAME: true when no ids were given or an id is NAME or starts with NAME::
selected() {
  [ "$#" -gt 1 ] || return 0
  want=$1; shift
  for id in "$@"; do
    case $id in "$want"|"$want"::*) return 0 ;; esac
  done
  return 1
}

# apply_verbose SETTINGS: NAME=VALUE sets, NAME+=VALUE appends, @testthat-location
# points R at a profile choosing testthat's location reporter
apply_verbose() {
  for setting in $1; do
    case $setting in
      -) ;;
      @testthat-location)
        printf '%s\n' 'options(testthat.default_reporter = "location", testthat.default_check_reporter = "location")' \
          > "$results/testthat.Rprofile"
        R_PROFILE_USER=$results/testthat.Rprofile; export R_PROFILE_USER ;;
      *+=*)
        var=${setting%%+=*}
        # shellcheck disable=SC2034  # val is read by the eval below
        val=${setting#*+=}
        case $var in *[!A-Za-z0-9_]*|"") continue ;; esac
        eval "old=\${$var:-}"
        # shellcheck disable=SC2154  # old is set by the eval above
        eval "$var=\${old:+\$old }\$val; export $var" ;;
      *=*)
        var=${setting%%=*}
        case $var in *[!A-Za-z0-9_]*|"") continue ;; esac
        eval "$var=\${setting#*=}; export $var" ;;
    esac
  done
}

# run_test NAME VERBOSE KIND TARGET FILE: runs one test in a subshell, with autopkgtest's
# environment; FILE is the results' base name
run_test() {
  scratch=$(mktemp -d "$results/.tmp.XXXXXX")
  [ -d "$results/$5-artifacts" ] || mkdir -m 1777 "$results/$5-artifacts"
  (
    AUTOPKGTEST_TMP=$scratch; ADTTMP=$scratch
    AUTOPKGTEST_ARTIFACTS=$results/$5-artifacts; ADT_ARTIFACTS=$AUTOPKGTEST_ARTIFACTS
    DEBIAN_FRONTEND=noninteractive; LANG=C.UTF-8
    export AUTOPKGTEST_TMP ADTTMP AUTOPKGTEST_ARTIFACTS ADT_ARTIFACTS DEBIAN_FRONTEND LANG
    unset LANGUAGE LC_CTYPE LC_NUMERIC LC_TIME LC_COLLATE LC_MONETARY LC_MESSAGES LC_PAPER \
      LC_NAME LC_ADDRESS LC_TELEPHONE LC_MEASUREMENT LC_IDENTIFICATION LC_ALL
    PATH=$results/.nobin:$PATH; export PATH
    apply_verbose "$2"
    if [ "$3" = path ]; then
      [ -x "$4" ] || chmod +x "$4" 2>/dev/null  # autopkgtest makes the script executable too
      exec "./$4"
    fi
    if command -v bash >/dev/null 2>&1; then exec bash -ec "$4"; fi
    exec sh -ec "$4"
  ) < /dev/null > "$results/$5.stdout" 2> "$results/$5.stderr"
  echo "$?" > "$results/$5.exit"
  rm -rf "$scratch"
}

# convert NAME RESTRICTIONS RUNNER FILE: the test's testcases, appended to cases.xml
convert() {
  code=$(cat "$results/$4.exit")
  skippable=0; stderr_ok=0
  case ",$2," in *,skippable,*) skippable=1 ;; esac
  case ",$2," in *,allow-stderr,*) stderr_ok=1 ;; esac
  bytes=$(wc -c < "$results/$4.stderr" | tr -d ' ')
  converter=$converters/$3.awk
  [ -r "$converter" ] || converter=$converters/none.awk
  DEBTEST_STDERR_TOP=$(head -n 1 "$results/$4.stderr" | tr -d '\r') \
    DEBTEST_STDERR_TAIL=$(tail -n 20 "$results/$4.stderr" | tr -d '\r') \
    $awk_cmd -v test="$1" -v rc="$code" -v stderr_ok="$stderr_ok" -v stderr_bytes="$bytes" \
    -v skippable="$skippable" -f "$converters/common.awk" -f "$converter" "$results/$4.stdout" \
    >> "$results/cases.xml"
}

: > "$results/cases.xml"
ran=0
tab=$(printf '\t')
while IFS=$tab read -r name restrictions runner verbose kind target; do
  case $name in "#"*|"") continue ;; esac
  selected "$name" "$@" || continue
  file=$(printf '%s' "$name" | tr -c 'A-Za-z0-9._+@:-' '_')
  run_test "$name" "$verbose" "$kind" "$target" "$file"
  convert "$name" "$restrictions" "$runner" "$file"
  ran=$((ran + 1))
  echo "$me: $name: exit status $(cat "$results/$file.exit")"
done < "$tests_list"

cases=$(grep -c '^<testcase ' "$results/cases.xml")
failures=$(grep -c '<failure ' "$results/cases.xml")
skipped=$(grep -c '<skipped' "$results/cases.xml")
if [ -n "$junit" ]; then
  {
    echo '<?xml version="1.0" encoding="utf-8"?>'
    echo "<testsuites><testsuite name=\"autopkgtest\" tests=\"$cases\" failures=\"$failures\" errors=\"0\" skipped=\"$skipped\">"
    cat "$results/cases.xml"
    echo '</testsuite></testsuites>'
  } > "$junit"
fi
echo "$me: $ran tests, $cases results, $failures failed, $skipped skipped (results in $results)"
[ "$ran" -gt 0 ] || exit 5
[ "$failures" -eq 0 ] || exit 1
exit 0
