# R's testthat into results. Per test from its location reporter (testthat's
# LocationReporter, which cligym selects through an R profile: "Start test: NAME", one
# "  'test-file.R:LINE:COL' [success|failure|error|skip|warning]" line per expectation,
# "End test: NAME"). Ids: "<file>::<test>" (the file of the test's first located
# expectation, "?" if none). A test with a failure or error fails; with only skips, skips.
# Without location lines, the failures the check, progress or summary reporters name
# ("── Failure ('test-x.R:5:3'): name ──", "── Error (test-x.R:5:3): name", older
# "1. Failure: name (@test-x.R#5)") are failing results and, as those reporters never name a
# passing test, the whole test's one result is given too (partial=1).

function located(loc,   f) {
  f = loc; gsub(/['"‘’]/, "", f); sub(/:.*/, "", f); sub(/#.*/, "", f); sub(/^@/, "", f)
  return f
}

function end_test() {
  if (cur == "") return
  record((cur_file != "" ? cur_file : "?") "::" cur, cur_status, cur_msg)
  named = 1; cur = ""
}

{ sub(/\r$/, "") }

/^Start test: / { end_test(); cur = substr($0, 13); cur_file = ""; cur_status = "pass"; cur_msg = ""; next }
cur != "" && /^  .* \[[a-z_]+\]$/ {
  status = $NF; gsub(/\[|\]/, "", status)
  loc = $0; sub(/^  /, "", loc); sub(/ \[[a-z_]+\]$/, "", loc)
  if (cur_file == "" && loc != "") cur_file = located(loc)
  if (status == "failure" || status == "error") { cur_status = "fail"; cur_msg = cur_msg status " at " loc "\n" }
  else if (status == "skip" && cur_status == "pass" && !had_result) cur_status = "skip"
  if (status == "success") had_result = 1
  next
}
/^End test: / { end_test(); had_result = 0; next }

# the other reporters: a failure's or an error's header
/^(── |[0-9]+\. )?(Failure|Error) / && /[(@].*[)]?:? / {
  line = $0; sub(/^(── |[0-9]+\. )/, "", line); sub(/ (─)+$/, "", line)
  loc = ""; name = line
  if (match(line, /\([^)]*\): /)) { loc = substr(line, RSTART + 1, RLENGTH - 4); name = substr(line, RSTART + RLENGTH) }
  else if (match(line, / \(@[^)]*\)/)) { loc = substr(line, RSTART + 2, RLENGTH - 3); name = substr(line, 1, RSTART - 1); sub(/^(Failure|Error): /, "", name) }
  else next
  hid = located(loc) "::" name
  if (!(hid in header_seen)) { header_seen[hid] = 1; headers[++n_headers] = hid; hmsg[hid] = $0 }
  last_header = hid; next
}
last_header != "" && /^(── |══ |\[ FAIL )/ { last_header = ""; next }
last_header != "" { if (length(hmsg[last_header]) < 4000) hmsg[last_header] = hmsg[last_header] "\n" $0 }

END {
  end_test()
  if (!named) {
    for (i = 1; i <= n_headers; i++) record(headers[i], "fail", hmsg[headers[i]])
    partial = n_headers > 0
  }
  finish()
}
