# Emacs's ERT in batch mode (ert-run-tests-batch, as dh_elpa_test runs it) into results.
# Ids: the test's symbol. Result lines "   passed  3/12  name (0.0001 sec)" (Emacs 28 and
# later add the time and " at FILE:LINE"; older ones print the bare name): lower case is an
# expected result ("passed", "failed" for an expected failure: both pass; "skipped" skips),
# upper case an unexpected one (FAILED, PASSED, ABORTED, QUIT: fail). A failure's message:
# the "Test NAME condition:" block printed before its line.

{ sub(/\r$/, "") }

/^Test [^ ]+ (backtrace|condition):$/ { block = $2; collecting = ($3 == "condition:"); next }
/^ +(passed|failed|skipped|PASSED|FAILED|ABORTED|QUIT|aborted|quit) +[0-9]+\/[0-9]+ +[^ ]+/ {
  v = $1; name = $3
  secs = 0
  if (match($0, /\([0-9.e-]+ sec\)/)) { secs = substr($0, RSTART + 1, RLENGTH - 6) + 0 }
  status = (v == "passed" || v == "failed") ? "pass" : v == "skipped" ? "skip" : "fail"
  record(name, status, status == "fail" ? cond[name] $0 : "", secs)
  block = ""; collecting = 0; next
}
collecting && block != "" { if (length(cond[block]) < 4000) cond[block] = cond[block] $0 "\n"; next }

END { finish() }
