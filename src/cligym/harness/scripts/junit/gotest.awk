# `go test -v` (cmd/go's test flag documentation; the testing package's output) into results.
# Ids: "<import path>::<test>" ("github.com/pkg/errors::TestFormat/sub_case"): the test
# function, its subtests slash-joined, qualified by its package because packages share test
# names. A package's results are known at its summary line ("ok  \tPKG\t0.01s",
# "FAIL\tPKG\t...", "FAIL\tPKG [build failed]"); a test that started ("=== RUN") and has no
# "--- PASS/FAIL/SKIP" line by then failed (the test binary panicked or exited); a package
# that failed with no test (build failure, TestMain or init panic) is one failing result
# "<import path>::[package]".

function flush(pkg, verdict,   i, t, any) {
  for (i = 1; i <= n_run; i++) {
    t = run_order[i]
    if (t in result) record(pkg "::" t, result[t], tlog[t], secs[t])
    else record(pkg "::" t, "fail", "no result: the test binary stopped before this test finished\n" tlog[t])
    any = 1
  }
  if (!any && verdict == "fail") record(pkg "::[package]", "fail", pkg_log)
  for (t in result) delete result[t]
  for (t in started) delete started[t]
  for (t in tlog) delete tlog[t]
  n_run = 0; current = ""; after = ""; pkg_log = ""
}

function note(t, text) {
  if (t == "") { if (length(pkg_log) < 4000) pkg_log = pkg_log text "\n"; return }
  if (length(tlog[t]) < 4000) tlog[t] = tlog[t] text "\n"
}

{ sub(/\r$/, "") }

/^=== RUN +[^ ]/ {
  t = $3
  if (!(t in started)) { started[t] = 1; run_order[++n_run] = t }
  current = t; after = ""; next
}
/^=== (PAUSE|CONT|NAME) / { current = $3; next }

/^ *--- (PASS|FAIL|SKIP): / {
  t = $3; v = $2; sub(/:$/, "", v)
  if (!(t in started)) { started[t] = 1; run_order[++n_run] = t }
  result[t] = v == "PASS" ? "pass" : v == "SKIP" ? "skip" : "fail"
  s = $4; gsub(/[()s]/, "", s); secs[t] = s + 0
  after = t; next
}

# the package's summary line
/^(ok|FAIL|\?)[ \t]+[^ \t]+/ && $0 !~ /^FAIL$/ {
  pkg = $2; verdict = $1 == "FAIL" ? "fail" : "pass"
  if ($1 == "?") { flush(pkg, "pass"); next }
  flush(pkg, verdict); next
}

/^(PASS|FAIL)$/ { next }

# a result's own output follows it indented; other output belongs to the running test
after != "" && /^    / { note(after, $0); next }
{ after = ""; note(current, $0) }

END { if (n_run > 0) flush("", "fail"); finish() }
