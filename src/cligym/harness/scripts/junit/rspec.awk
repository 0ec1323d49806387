# RSpec's documentation formatter (rspec-core's DocumentationFormatter, `--format
# documentation`, which cligym asks for through SPEC_OPTS) into results.
# Ids: the example's full description, as rspec builds it: the group descriptions and the
# example's, space-joined except before a part that starts with "#", "." or "::"
# ("Hashie::Mash#initialize accepts a hash"). The formatter indents two spaces a level; a
# line whose next line is deeper is a group, else an example; " (FAILED - N)" fails it
# (its message: the N) entry of "Failures:"), " (PENDING: why)" skips it. Lines outside the
# tree (gem2deb-test-runner's banners and commands, warnings, "Randomized with seed") are
# left out: an example needs a group at the top level above it. The "Pending:" and
# "Failures:" sections up to "Finished in" are not examples.

function joined(a, b) {
  if (a == "") return b
  return (b ~ /^(#|\.|::)/) ? a b : a " " b
}

function level_of(line) {
  match(line, /^ */)
  return RLENGTH % 2 ? -1 : RLENGTH / 2
}

{ sub(/\r$/, "") }

/^Pending: / { aside = 1; in_failures = 0; next }
/^Failures:$/ { aside = 1; in_failures = 1; next }
/^Finished in / { aside = 0; in_failures = 0; number = ""; next }
in_failures && /^  [0-9]+\) / { number = $1; sub(/\)$/, "", number); fmsg[number] = ""; next }
in_failures && number != "" { if ($0 != "") fmsg[number] = fmsg[number] $0 "\n"; next }
aside { next }
/^[^ ]/ && /(: warning: |^Randomized with seed|^Run options:|^All examples were filtered)/ { next }
/^[ \t]*$/ { next }
{ lines[++n] = $0 }

END {
  depth = -1
  for (i = 1; i <= n; i++) {
    lvl = level_of(lines[i])
    text = lines[i]; sub(/^ +/, "", text)
    if (lvl < 0 || lvl > depth + 1) continue  # not part of the tree
    next_lvl = (i < n) ? level_of(lines[i + 1]) : -1
    part[lvl] = text; depth = lvl
    if (next_lvl > lvl) continue  # a group
    if (lvl == 0) { depth = -1; continue }  # a top-level line with nothing below: not rspec's
    status = "pass"; message = ""
    if (match(text, / \(FAILED - [0-9]+\)$/)) {
      num = substr(text, RSTART + 11, RLENGTH - 12); text = substr(text, 1, RSTART - 1)
      status = "fail"; message = fmsg[num]
    } else if (match(text, / \(PENDING: .*\)$/)) {
      message = substr(text, RSTART + 2, RLENGTH - 3); text = substr(text, 1, RSTART - 1)
      status = "skip"
    }
    full = ""
    for (k = 0; k < lvl; k++) full = joined(full, part[k])
    record(joined(full, text), status, message)
  }
  finish()
}
