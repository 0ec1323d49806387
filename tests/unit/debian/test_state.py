"""The Debian gold's state spec (no engine): what the verifier's listing covers."""

from __future__ import annotations

from cligym.debian.state import SYSTEM, objects, state_spec
from cligym.models.debian_probe import DebianProbe, DebianTouch, Program


def test_the_spec_covers_what_the_tests_touched_and_where_searches_look():
    probe = DebianProbe(gold_image_id="sha256:x", workdir="/usr/src/pkg", tests={
        "a": DebianTouch(files=["/usr/share/perl5/X.pm", "/usr/src/pkg/t/1.t"],
                         objects=["/usr/lib/x86_64-linux-gnu/libyaml-0.so.2.0.9"],
                         programs=[Program(path="/usr/bin/awk", real="/usr/bin/mawk")],
                         missing=["/usr/lib/x86_64-linux-gnu/tls/libyaml-0.so.2"],
                         shadows={"/usr/local/share/perl/5.36.0/X.pm": "/usr/share/perl5/X.pm"},
                         lookups=["/etc/perl"])})
    spec = state_spec(probe)
    assert spec == sorted(set(spec))
    assert {f"{kind} {path}" for kind, path in SYSTEM} <= set(spec)
    for path in ("/usr/share/perl5/X.pm", "/usr/lib/x86_64-linux-gnu/libyaml-0.so.2.0.9",
                 "/usr/lib/x86_64-linux-gnu/tls/libyaml-0.so.2", "/usr/local/share/perl/5.36.0/X.pm", "/etc/perl"):
        assert f"F {path}" in spec, path
    for path in ("/usr/bin/awk", "/usr/bin/mawk"):  # a program: its bytes and whether it may run
        assert f"X {path}" in spec, path
    assert "L /usr/lib/x86_64-linux-gnu" in spec
    assert not any(line.split(" ", 1)[1].startswith("/usr/src/pkg") for line in spec)  # the work tree: the verifier's
    assert objects(probe) == ["/usr/bin/mawk", "/usr/lib/x86_64-linux-gnu/libyaml-0.so.2.0.9"]
