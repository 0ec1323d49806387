# Rust's libtest (cargo test's default "pretty" output, rustc's test harness) into results.
# Ids: the test's path as libtest prints it ("tests::parses_empty", doctests
# "src/lib.rs - Foo::new (line 12)"). "test X ... ok|FAILED|ignored[, reason]" lines (also
# when the test's own output came between "test X ... " and its verdict); a failure's
# message is its "---- X stdout ----" section. Several test binaries may share a name: the
# results merge (any failure fails it). Benchmarks ("... bench:") are not results.

function verdict(name, v,   status) {
  status = v ~ /^ok/ ? "pass" : v ~ /^ignored/ ? "skip" : "fail"
  record(name, status, status == "skip" ? v : "")
}

{ sub(/\r$/, "") }

/^test .+ \.\.\. (ok|FAILED|ignored)/ {
  line = $0; sub(/^test /, "", line)
  i = index(line, " ... ")
  name = substr(line, 1, i - 1); v = substr(line, i + 5)
  verdict(name, v); pending = ""; section = ""; next
}
/^test .+ \.\.\. $/ { pending = $0; sub(/^test /, "", pending); sub(/ \.\.\. $/, "", pending); next }
pending != "" && /^(ok|FAILED|ignored)/ { verdict(pending, $0); pending = ""; next }

/^---- .+ stdout ----$/ { section = $0; sub(/^---- /, "", section); sub(/ stdout ----$/, "", section); next }
/^(failures:|test result: |running [0-9]+ tests?)/ { section = ""; next }
section != "" { add_message(section, $0) }

END { finish() }
