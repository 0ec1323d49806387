# The verdict from a JUnit report: keys.tsv (node, classname, name) and the report's
# testcases, one a line; prints a PASSED or FAILED line per listed id (as pytest's -rA
# summary does: Terminal-Bench reads them), then "P of N passed" (N the listed ids); exits
# 0 only if N is positive and P is N. The verifier
# requires that last line too: an empty judge prints nothing (and busybox's awk exits 0).
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
  passed = 0
  for (i = 1; i <= n; i++) {
    k = order[i]
    if (!(k in seen)) print "FAILED " want[k] " - not in the test report"
    else if (k in bad) print "FAILED " want[k] " - not passed"
    else { passed++; print "PASSED " want[k] }
  }
  print passed " of " n " passed"
  exit (n > 0 && passed == n) ? 0 : 1
}
