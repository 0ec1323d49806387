# Shared by every converter (busybox awk: awk -f common.awk -f RUNNER.awk STDOUT_FILE).
# A converter reads one autopkgtest test's stdout, calls record(id, status, message, seconds)
# for each inner result (status pass, fail or skip) and finish() in its END block, which
# prints the <testcase> elements: classname the autopkgtest test, name the inner id.
#
# Variables (-v): test=NAME rc=CODE (its exit status; "exit" is awk's keyword) stderr_ok=0|1
# stderr_bytes=N skippable=0|1; the first line of the test's stderr in the environment as
# DEBTEST_STDERR_TOP, and its last lines as DEBTEST_STDERR_TAIL (the error a failing test
# ends with; both read through ENVIRON: awk -v would interpret their backslashes).
#
# The whole test's verdict is autopkgtest's: exit 0 and, unless stderr_ok, nothing on
# stderr; skippable and exit 77 is a skip. No inner result at all: one testcase for the
# whole test (name = the test's name). Inner results that all pass while the whole test
# fails: an extra failing testcase named "exit" (a crash after the last test is no pass).
# A converter that sets partial=1 (it names only failures) gets the whole-test testcase too.

function xml(s) {
  gsub(/&/, "\\&amp;", s); gsub(/</, "\\&lt;", s); gsub(/>/, "\\&gt;", s); gsub(/"/, "\\&quot;", s)
  gsub(/[\001-\010\013\014\016-\037\177]/, "", s)
  return s
}

function first_line(s,   i) {
  i = index(s, "\n")
  return i ? substr(s, 1, i - 1) : s
}

# keep the end of a long message: the error is usually last
function trimmed(s) {
  return length(s) > 4000 ? substr(s, length(s) - 3999) : s
}

# an id without what changes from run to run: a memory address in a description
# (Perl's "HASH(0x5621426e55c0)") and the random part of a temporary path; every later stage
# selects tests by id, so an id must name the same test in every run
function stable_id(id) {
  gsub(/0x[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]*/, "0x_", id)
  gsub(/\/tmp\/[^ \/:'"]+/, "/tmp/_", id)
  return id
}

# one inner result; a repeated id (a suite run twice, for two interpreter versions) keeps
# its first place, fails if any run failed, and is skipped only if every run skipped
function record(id, status, message, seconds) {
  id = stable_id(id)
  if (!(id in r_status)) {
    r_order[++r_count] = id; r_status[id] = status; r_msg[id] = message; r_time[id] = seconds + 0
    return
  }
  r_time[id] += seconds
  if (status == "fail") {
    r_msg[id] = (r_status[id] == "fail" && r_msg[id] != "") ? r_msg[id] "\n" message : message
    r_status[id] = "fail"
  } else if (status == "pass" && r_status[id] == "skip") {
    r_status[id] = "pass"
  }
}

# append to a recorded result's message
function add_message(id, text) {
  id = stable_id(id)
  if (!(id in r_status) || text == "") return
  r_msg[id] = (r_msg[id] == "") ? text : r_msg[id] "\n" text
  if (length(r_msg[id]) > 8000) r_msg[id] = substr(r_msg[id], length(r_msg[id]) - 7999)
}

function testcase(name, status, message, seconds,   m) {
  printf "<testcase classname=\"%s\" name=\"%s\" time=\"%.3f\">", xml(test), xml(name), seconds + 0
  m = trimmed(message)
  if (status == "fail" && m == "") m = "failed"
  if (status == "fail")
    printf "<failure message=\"%s\">%s</failure>", xml(first_line(m)), xml(m)
  else if (status == "skip")
    printf "<skipped message=\"%s\"/>", xml(first_line(m))
  print "</testcase>"
}

# the whole test's own verdict: "pass", "skip" or "fail" (with its reason in whole_why)
function whole_status() {
  whole_why = ""
  if (skippable + 0 && rc + 0 == 77) { whole_why = "exit status 77 and marked as skippable"; return "skip" }
  if (rc + 0 != 0) {
    whole_why = "non-zero exit status " rc
    if (ENVIRON["DEBTEST_STDERR_TAIL"] != "") whole_why = whole_why "; its stderr ends:\n" ENVIRON["DEBTEST_STDERR_TAIL"]
    return "fail"
  }
  if (stderr_bytes + 0 > 0 && !(stderr_ok + 0)) {
    whole_why = "stderr: " ENVIRON["DEBTEST_STDERR_TOP"]; return "fail"
  }
  return "pass"
}

function finish(   i, id, failed, status) {
  status = whole_status()
  if (r_count == 0 || partial + 0) testcase(test, status, whole_why, 0)
  for (i = 1; i <= r_count; i++) {
    id = r_order[i]
    if (r_status[id] == "fail") failed = 1
    testcase(id, r_status[id], r_msg[id], r_time[id])
  }
  if (r_count > 0 && !partial && !failed && status == "fail") testcase("exit", "fail", whole_why, 0)
}
