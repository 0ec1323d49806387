"""A solution derived from the filesystem difference turns a real broken image back into
gold: added paths go, changed and deleted ones (files, a symlink, a directory's mode, a
file replaced by a directory) come back."""

from __future__ import annotations

import uuid

from cligym.harness.images import build_broken
from cligym.harness.listing import diff_listings, read_listing, take_listing
from cligym.verify.leaks import scan
from cligym.verify.solution import derive_solution, topmost

PKG = "/opt/venv/lib/python3.11/site-packages/markupsafe"


def test_topmost_keeps_outermost_paths():
    assert topmost(["/a/b", "/a", "/ab", "/c/d/e", "/c/d"]) == ["/a", "/ab", "/c/d"]


def test_derived_solution_restores_gold(runtime, gold_envs):
    gold = gold_envs("markupsafe==3.0.2")
    manifest = take_listing(runtime, gold.image)
    lines = [
        f"RUN printf 'JUNK' | dd of={PKG}/_speedups.cpython-311-x86_64-linux-gnu.so bs=1 count=4 conv=notrunc",
        f"RUN rm -f {PKG}/_native.py {PKG}/py.typed && rm -rf /usr/share/zoneinfo/Europe",
        f"RUN mkdir -p /opt/venv/lib/python3.11/site-packages/zz_added/sub && echo x > {PKG}/zz_added.txt",
        "RUN echo 'import os' > /opt/venv/lib/python3.11/site-packages/zz_added/sub/m.py",
        f"RUN chmod 700 {PKG} && rm {PKG}/__init__.py && mkdir {PKG}/__init__.py",
        "RUN ln -sfn /nowhere /usr/share/zoneinfo/UTC",
        f"RUN chmod 600 {PKG}/_speedups.pyi",  # a mode-only change: chmod back, nothing archived
        # a directory turned into a symlink to another one, which must stay as it is
        "RUN rm -rf /usr/share/zoneinfo/Asia && ln -s /usr/share/zoneinfo/America /usr/share/zoneinfo/Asia",
        "RUN chmod 2755 /usr/share/zoneinfo/Africa",  # a set-gid bit on a directory
    ]
    tag = f"cligym/test-solution:{uuid.uuid4().hex[:8]}"
    build_broken(runtime, gold, lines, tag)
    try:
        report = scan(runtime, gold.image, manifest, tag)
        assert f"{PKG}/_native.py" in report.deleted and f"{PKG}/zz_added.txt" in report.added
        with runtime.session(gold.image) as gold_session:
            script = derive_solution(gold_session, manifest, report)
        assert "zz_added/sub" not in script  # only the topmost added path is removed
        assert f"chmod 00644 -- {PKG}/_speedups.pyi" in script and "chmod 00755 -- /usr/share/zoneinfo/Africa" in script
        with runtime.session(tag) as session:
            session.put_files({"/tmp/solve.sh": (script, 0o755)})
            result = session.exec(["sh", "/tmp/solve.sh"], timeout=300)
            assert result.exit_code == 0, result.output[-500:]
            session.exec(["rm", "-f", "/tmp/solve.sh"], timeout=60)
            after = read_listing(lambda argv: session.exec(argv, timeout=300), "the repaired container")
            imported = session.exec([gold.python, "-c", "import markupsafe._speedups, markupsafe._native"])
        left = diff_listings(manifest, after)
        # the whole filesystem is back as in gold (directory mtimes aside): nothing was written
        # through the symlink into the directory it points to
        assert left["added"] == [] and left["deleted"] == [], (left["added"][:5], left["deleted"][:5])
        assert [p for p in left["changed"] if after[p].type != "d" or after[p].mode != manifest[p].mode] == []
        assert imported.exit_code == 0, imported.output
    finally:
        runtime.remove_image(tag)
