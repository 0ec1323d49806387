# TAP (testanything.org's TAP 13/14; prove's and node-tap's output) into results.
# Ids: "<file>::<number> - <description>" where a prove header ("t/basic.t .. ") names the
# file, "<number> - <description>" otherwise; a subtest's number is its parents' numbers
# and its own, dot-joined ("3.2 - inner"). Subtests are indented by four spaces per level
# and come before their parent's line.
# ok / not ok (a TODO "not ok" passes; "# SKIP" skips); a plan whose tests did not all run
# fails the missing ones; "Bail out!" fails the file's remaining planned tests; prove's
# per-file verdicts (non-verbose "t/x.t .. ok", "Dubious", "Failed N/M subtests",
# "skipped: why") give one result per file when the file printed no test line.

function close_level(d,   k) {
  for (k = count[d] + 1; k <= plan[d] + 0; k++)
    record(prefix(d) k, "fail", bailed ? "not run: the test run bailed out" : "planned but not run")
  count[d] = 0; plan[d] = 0
}

function close_file(   d) {
  for (d = maxdepth; d >= 0; d--) close_level(d)
  maxdepth = 0; bailed = 0; last = ""
}

function prefix(d,   p, i) {
  p = ""
  for (i = 0; i < d; i++) p = p (count[i] + 1) "."
  return (file != "" ? file "::" : "") p
}

function file_verdict(status, message) {
  if (file != "" && !tests_in[file]) record(file, status, message)
  else if (status == "fail" && file != "" && !failed_in[file]) record(file "::exit", "fail", message)
}

function tap_line(line, d,   ok, rest, num, desc, i, directive, reason, secs, status, id) {
  ok = (line !~ /^not ok/)
  rest = line; sub(/^(not ok|ok)/, "", rest)
  num = ""
  if (match(rest, /^ +[0-9]+/)) { num = substr(rest, RSTART, RLENGTH); gsub(/ /, "", num); rest = substr(rest, RLENGTH + 1) }
  if (num == "") num = count[d] + 1
  # the first unescaped "#" starts the directive (SKIP, TODO, node-tap's "time=3ms")
  directive = ""; reason = ""; secs = 0
  for (i = 1; i <= length(rest); i++)
    if (substr(rest, i, 1) == "#" && (i == 1 || substr(rest, i - 1, 1) != "\\")) {
      reason = substr(rest, i); directive = tolower(reason); rest = substr(rest, 1, i - 1); break
    }
  if (match(directive, /time=[0-9.]+m?s/)) {
    secs = substr(directive, RSTART + 5, RLENGTH - 5)
    secs = (secs ~ /ms$/) ? (secs + 0) / 1000 : secs + 0
  }
  desc = rest; sub(/^[ \t]*-?[ \t]*/, "", desc); sub(/[ \t]+$/, "", desc)
  status = ok ? "pass" : "fail"
  if (directive ~ /^#[ \t]*skip/) status = "skip"
  if (directive ~ /^#[ \t]*todo/) status = "pass"
  if (d < maxdepth) close_level(d + 1)
  id = prefix(d) num (desc != "" ? " - " desc : "")
  count[d] = num + 0
  if (d > maxdepth) maxdepth = d
  record(id, status, status == "fail" ? line : status == "skip" ? reason : "", secs)
  tests_in[file] = 1
  if (status == "fail") { failed_in[file] = 1; last = id } else last = ""
}

BEGIN { file = ""; maxdepth = 0 }

{ sub(/\r$/, "") }

# a prove header: "t/basic.t .. " (verbose: the file's TAP follows)
/^[^ #]+ \.\.+ *$/ { close_file(); file = $1; next }

# prove non-verbose: "t/basic.t .... ok", "t/x.t .. skipped: no db", "t/y.t .. Dubious, ..."
/^[^ #]+ \.\.+ (ok|skipped:|Dubious|Failed|No subtests)/ {
  close_file(); file = $1
  rest = $0; sub(/^[^ ]+ \.\.+ /, "", rest)
  if (rest ~ /^ok/) file_verdict("pass", "")
  else if (rest ~ /^skipped/) file_verdict("skip", rest)
  else file_verdict("fail", rest)
  next
}

# prove verbose, after a file's TAP
/^(ok|All [0-9]+ subtests passed)[ \t]*$/ && file != "" { if (!tests_in[file]) file_verdict("pass", ""); next }
/^skipped: / && file != "" { file_verdict("skip", $0); next }
/^(Dubious, test returned|Failed [0-9]+\/[0-9]+ subtests|No subtests run)/ && file != "" { file_verdict("fail", $0); next }

/^ *(not ok|ok)([ \t]|$)/ {
  match($0, /^ */); tap_line(substr($0, RLENGTH + 1), int(RLENGTH / 4)); next
}

/^ *1\.\.[0-9]+/ {
  match($0, /^ */); d = int(RLENGTH / 4)
  n = $0; sub(/^ *1\.\./, "", n); n = n + 0
  if (n == 0 && tolower($0) ~ /#[ \t]*skip/ && d == 0) { record(file != "" ? file : "plan", "skip", $0); tests_in[file] = 1 }
  plan[d] = n; if (d > maxdepth) maxdepth = d
  next
}

/^ *Bail out!/ {
  bailed = 1
  record((file != "" ? file "::" : "") "Bail out!", "fail", $0); tests_in[file] = 1; failed_in[file] = 1
  next
}

# diagnostics of the last failed test ("#   Failed test ...", a YAML block)
last != "" && /^ *(#|---|\.\.\.|[a-z_]+:|  )/ { add_message(last, $0) }

END { close_file(); finish() }
