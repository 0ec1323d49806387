"""The leak scanner catches planted leaks in a real broken image, and passes a clean one."""

from __future__ import annotations

import uuid

import pytest

from cligym.harness.images import build_broken
from cligym.harness.listing import take_listing
from cligym.verify.leaks import archive_member_hashes, name_findings, scan

PKG = "/opt/venv/lib/python3.11/site-packages/markupsafe"


@pytest.fixture(scope="module")
def gold_and_manifest(runtime, gold_envs):
    gold = gold_envs("markupsafe==3.0.2")
    return gold, take_listing(runtime, gold.image)


def _scan(runtime, gold, manifest, lines):
    tag = f"cligym/test-leak:{uuid.uuid4().hex[:8]}"
    build_broken(runtime, gold, lines, tag)
    try:
        return scan(runtime, gold.image, manifest, tag)
    finally:
        runtime.remove_image(tag)


def test_planted_leaks_are_found(runtime, gold_and_manifest):
    gold, manifest = gold_and_manifest
    lines = [
        # a copy of a file's original content, then the file changed
        f"RUN cp {PKG}/_native.py /var/tmp/.keep && echo '# changed' >> {PKG}/_native.py",
        # a backup file next to a changed file
        f"RUN cp {PKG}/__init__.py {PKG}/__init__.py.orig && echo '# changed' >> {PKG}/__init__.py",
        # the original of a deleted file inside an archive
        f"RUN tar czf /usr/share/doc-cache.tgz -C {PKG} py.typed _speedups.pyi && rm {PKG}/_speedups.pyi",
        "RUN echo 'ls /' > /root/.bash_history && mkdir -p /root/.cache/pip/http && echo x > /root/.cache/pip/http/a",
        "RUN mkdir -p /testbed/.git && echo ref > /testbed/.git/HEAD",
        "RUN mkdir -p /solution && echo 'exit 0' > /solution/solve.sh",
        "RUN mkdir -p /var/cache/apt/archives && echo deb > /var/cache/apt/archives/libfoo_1.0_amd64.deb",
    ]
    report = _scan(runtime, gold, manifest, lines)
    kinds = {(f.kind, f.path) for f in report.findings}
    assert ("copy", "/var/tmp/.keep") in kinds
    assert ("backup", f"{PKG}/__init__.py.orig") in kinds
    assert ("copy", "/usr/share/doc-cache.tgz") in kinds
    assert ("history", "/root/.bash_history") in kinds
    assert any(k == "pip-cache" for k, _ in kinds)
    assert any(k == "vcs" and p.startswith("/testbed/.git") for k, p in kinds)
    assert ("task-files", "/solution/solve.sh") in kinds or ("task-files", "/solution") in kinds
    assert any(k == "apt-cache" for k, _ in kinds)
    assert f"{PKG}/_speedups.pyi" in report.deleted
    assert f"{PKG}/_native.py" in report.changed
    assert not report.clean


def test_clean_breakage_passes(runtime, gold_and_manifest):
    gold, manifest = gold_and_manifest
    report = _scan(runtime, gold, manifest, [
        f"RUN echo 'raise ImportError(\"x\")' >> {PKG}/_native.py && rm {PKG}/py.typed",
        "ENV PYTHONDONTWRITEBYTECODE=1",
    ])
    assert report.clean, report.findings
    assert report.changed == [f"{PKG}/_native.py"]
    assert report.deleted == [f"{PKG}/py.typed"]


def test_name_rules_unit():
    found = {f.kind for f in name_findings([
        "/etc/passwd-", "/a/b.py~", "/x/.git/config", "/root/.python_history", "/usr/lib/x.so",
        "/tests/test.sh", "/var/lib/apt/lists/deb_dists_bookworm_InRelease",
    ])}
    assert found == {"backup", "vcs", "history", "task-files", "apt-cache"}


def test_archive_member_hashes_handles_junk():
    assert archive_member_hashes(b"not an archive") == []


def test_joined_run_lines_leave_the_files_separate_ones_leave(runtime, gold_and_manifest, tmp_path):
    """build_broken joins a ΔD's consecutive RUN lines into one RUN (one container, one
    commit): the image holds the same differences from gold as the lines built one by one
    (a line's own "false; ..." goes on, a comment ends with its line, an ENV line between
    still applies to the lines after it), and a failing line still fails the build."""
    from cligym.errors import BuildFailed
    from cligym.harness.images import dockerfile_text, joined_runs

    gold, manifest = gold_and_manifest
    lines = [f"RUN rm -f {PKG}/_native.py # a comment ends here",
             "RUN false; mkdir -p /etc/pip && echo one > /etc/pip/a.txt",
             "ENV CLIGYM_MARK=two",
             'RUN echo "$CLIGYM_MARK" > /etc/pip/b.txt',
             "RUN ln -sfn /nonexistent /usr/local/lib/libcligym.so"]
    assert len(joined_runs(lines)) == 3
    separate = f"cligym/test-leak:{uuid.uuid4().hex[:8]}"
    (tmp_path / "Dockerfile").write_text(dockerfile_text(gold.image, lines))
    runtime.build(tmp_path, separate, nocache=True)
    try:
        apart = scan(runtime, gold.image, manifest, separate)
    finally:
        runtime.remove_image(separate)
    tag = f"cligym/test-leak:{uuid.uuid4().hex[:8]}"
    build_broken(runtime, gold, lines, tag)
    try:
        joined = scan(runtime, gold.image, manifest, tag)
        written = runtime.run(tag, ["cat", "/etc/pip/a.txt", "/etc/pip/b.txt"]).output.split()
    finally:
        runtime.remove_image(tag)
    assert written == ["one", "two"]
    assert (sorted(joined.added), sorted(joined.changed), sorted(joined.deleted)) == \
        (sorted(apart.added), sorted(apart.changed), sorted(apart.deleted))
    assert {"/etc/pip/a.txt", "/etc/pip/b.txt"} <= set(joined.added) and f"{PKG}/_native.py" in joined.deleted
    with pytest.raises(BuildFailed):
        _scan(runtime, gold, manifest, ["RUN touch /etc/first", "RUN exit 3", "RUN touch /etc/third"])
