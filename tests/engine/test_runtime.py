"""The runtime against the real Docker engine: limits, labels, timeouts, copies, cleanup."""

from __future__ import annotations

import os
import re
import uuid

import pytest

from cligym.config import LABEL
from cligym.errors import BuildFailed, EngineUnavailable
from cligym.harness.busybox import BB, lines_of, put_functions
from cligym.runtime import Runtime
from cligym.runtime.common import OWNER


def test_run_captures_output_and_exit_code(runtime, base_image):
    result = runtime.run(base_image, "echo hello; echo oops >&2; exit 3", timeout=60)
    assert result.exit_code == 3
    assert "hello" in result.output and "oops" in result.output
    assert not result.timed_out


def test_run_has_no_network_and_limits(runtime, base_image):
    script = (
        "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ,;"
        "python3 -c 'import socket; s=socket.socket(); s.settimeout(2);"
        " print(s.connect_ex((\"127.0.0.1\", 9)))'"
    )
    result = runtime.run(base_image, script, timeout=60)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("lo,"), result.output  # loopback only


def test_session_container_has_limits_and_label(base_image):
    runtime = Runtime(mem_limit="300m", pids_limit=77)
    limits = (
        "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\\n' ,; echo;"
        " cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes;"
        " cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max"
    )
    with runtime.session(base_image) as session:
        result = session.exec(limits, timeout=60)
        assert result.ok, result.output
        assert result.output.split() == ["lo,", str(300 * 1024 * 1024), "77"]
        cid = session.id
        assert cid in runtime.labelled_containers(mine=True)
    assert cid not in runtime.labelled_containers()
    runtime.close()


def test_run_times_out_and_removes_container(runtime, base_image):
    before = set(runtime.labelled_containers(mine=True))
    result = runtime.run(base_image, "sleep 60", timeout=2)
    assert result.timed_out and not result.ok
    assert result.seconds < 30
    assert set(runtime.labelled_containers(mine=True)) == before


def test_exec_timeout_kills_command(runtime, base_image):
    with runtime.session(base_image) as session:
        result = session.exec("sleep 30", timeout=2)
        assert result.timed_out
        again = session.exec("echo alive")
        assert again.ok and again.output.strip() == "alive"


def test_exec_then_read_reads_the_file_as_get_file_does_with_or_without_the_containers_cat(runtime, base_image):
    """The command's output (stdout and stderr in the order written) and exit code, and the
    file as ``get_file`` reads it: bytes, None for no file, a link or a folder; when the
    container cannot print it (no cat, a timeout) it is still read, through the engine."""
    body = b"line one\n\x00\xff binary\nno newline at the end"
    with runtime.session(base_image) as session:
        session.exec(["sh", "-c", "printf 'line one\\n\\000\\377 binary\\nno newline at the end' > /tmp/f.bin"])
        expected = session.get_file("/tmp/f.bin")
        assert expected == body
        result, data = session.exec_then_read(["sh", "-c", "echo made; echo on stderr >&2; exit 3"], "/tmp/f.bin",
                                              timeout=60)
        assert (result.exit_code, data) == (3, body) and result.output.split() == ["made", "on", "stderr"]
        for _ in range(10):  # what the command writes last to stderr stays before the mark, in order
            result, data = session.exec_then_read(["sh", "-c", "echo made; seq 1 3000 >&2"], "/tmp/f.bin", timeout=60)
            assert data == body and result.output.split() == ["made", *map(str, range(1, 3001))]
        session.exec(["sh", "-c", "ln -s /tmp/f.bin /tmp/link; mkdir /tmp/dir"])
        for absent in ("/tmp/none", "/tmp/link", "/tmp/dir"):
            assert session.get_file(absent) is None
            assert session.exec_then_read(["true"], absent, timeout=60)[1] is None, absent
        # the container's cat gone: the file is read through the engine, the output has no mark
        cat = session.exec(["sh", "-c", "command -v cat"]).output.strip()
        session.exec(["mv", cat, "/tmp/cat.away"])
        result, data = session.exec_then_read(["echo", "still"], "/tmp/f.bin", timeout=60)
        assert data == body and result.output.strip() == "still" and result.exit_code == 0
        # a busybox of one's own as the shell and cat: printed in the one call, no cat of the image's
        put_functions(session)
        session.get_file = lambda path: pytest.fail(f"{path} read through the engine")  # type: ignore[method-assign]
        result, data = session.exec_then_read(["echo", "own"], "/tmp/f.bin", timeout=60, shell=(BB, "sh"),
                                              cat=(BB, "cat"))
        assert data == body and result.output.strip() == "own"
        assert lines_of(session, "cannot", "printf 'one\\ntwo\\n'") == ["one", "two"]
        del session.get_file
        # killed at its timeout: no mark either, and the file is still read
        session.exec(["mv", "/tmp/cat.away", cat])
        result, data = session.exec_then_read(["sleep", "30"], "/tmp/f.bin", timeout=2)
        assert result.timed_out and data == body


def test_files_in_and_out(runtime, base_image):
    result = runtime.run(
        base_image,
        "tr a-z A-Z < /tmp/in.txt > /tmp/out.txt; stat -c %a /tmp/run.sh",
        files={"/tmp/in.txt": "hello", "/tmp/run.sh": ("echo", 0o755)},
        fetch=["/tmp/out.txt", "/tmp/absent.txt"],
        timeout=60,
    )
    assert result.ok, result.output
    assert result.output.strip() == "755"
    assert result.files == {"/tmp/out.txt": b"HELLO"}


def test_session_diff_and_commit(runtime, base_image):
    with runtime.session(base_image) as session:
        session.put_files({"/tmp/new.txt": "x"})
        assert session.exec("rm /etc/hostname.bak 2>/dev/null; echo changed >> /etc/issue; rm /etc/debian_version").ok
        changes = {(c.kind, c.path) for c in session.diff()}
        assert ("A", "/tmp/new.txt") in changes
        assert ("C", "/etc/issue") in changes
        assert ("D", "/etc/debian_version") in changes
        assert session.get_file("/tmp/new.txt") == b"x"
        assert session.get_file("/nope") is None
        suffix = uuid.uuid4().hex[:12]  # a tag of this test run's own (another may share the engine)
        image_id = session.commit("cligym/test-commit", suffix)
    try:
        assert runtime.image_config(image_id)["Labels"].get(LABEL) == "1"
        check = runtime.run(f"cligym/test-commit:{suffix}", "test ! -e /etc/debian_version && cat /tmp/new.txt",
                            timeout=60)
        assert check.ok and check.output.strip() == "x"
    finally:
        runtime.remove_image(f"cligym/test-commit:{suffix}")


def test_session_removed_when_body_raises(runtime, base_image):
    with pytest.raises(RuntimeError):
        with runtime.session(base_image) as session:
            cid = session.id
            raise RuntimeError("boom")
    assert cid not in runtime.labelled_containers()


def test_build_and_failed_build_cleanup(runtime, base_image, tmp_path):
    ok = tmp_path / "ok"
    ok.mkdir()
    # a tag and steps of this test run's own: another test run on the engine builds the same
    tag = f"cligym/test-build:ok-{uuid.uuid4().hex[:12]}"
    (ok / "Dockerfile").write_text(f"FROM {base_image}\nRUN echo built > /built && echo {tag} > /tag\n")
    image_id = runtime.build(ok, tag)
    try:
        assert runtime.image_config(image_id)["Labels"].get(LABEL) == "1"
        assert runtime.run(tag, "cat /built", timeout=60).output.strip() == "built"
    finally:
        runtime.remove_image(tag)

    bad = tmp_path / "bad"
    bad.mkdir()
    # a step of this test run's own: another test run's identical build would share it as cache
    (bad / "Dockerfile").write_text(f"FROM {base_image}\nRUN echo step1 {uuid.uuid4().hex} > /s1\n"
                                    "RUN echo failing && exit 7\n")
    before = set(runtime.labelled_containers(mine=True))
    dangling_before = runtime.dangling_images()
    with pytest.raises(BuildFailed) as info:
        runtime.build(bad, "cligym/test-build:bad")
    assert "failing" in info.value.log
    assert set(runtime.labelled_containers(mine=True)) == before
    assert not runtime.image_exists("cligym/test-build:bad")
    # the step images this build left are gone (others may be building on the same engine)
    steps = set(re.findall(r"^ ---> ([0-9a-f]{12})$", info.value.log, re.M))
    assert len(steps) >= 2  # the base image and the first RUN step
    left = {i.removeprefix("sha256:")[:12] for i in runtime.dangling_images() - dangling_before}
    assert not steps & left


def test_a_multi_stage_build_leaves_no_stage_behind(runtime, base_image, tmp_path):
    """The last image of an earlier stage is no ancestor of the result: the build removes it
    (a gold image is built in two stages; each build left one such image before)."""
    tag = f"cligym/test-build:stages-{uuid.uuid4().hex[:12]}"
    (tmp_path / "Dockerfile").write_text(f"FROM {base_image} AS first\nRUN echo made > /made && echo {tag} > /tag\n"
                                         f"FROM {base_image}\nCOPY --from=first /made /made\n")
    log: list[str] = []
    runtime.build(tmp_path, tag, on_log=log.append)
    try:
        first = "\n".join(log).split(f"FROM {base_image}\n")[0]  # the log up to the second stage
        first_stage = re.findall(r"^ ---> ([0-9a-f]{12})$", first, re.M)[-1]  # its RUN's image
        assert runtime.run(tag, "cat /made", timeout=60).output.strip() == "made"
        assert not runtime.image_exists(first_stage)
    finally:
        runtime.remove_image(tag)


def test_build_has_no_network(runtime, base_image, tmp_path):
    tag = f"cligym/test-build:nonet-{uuid.uuid4().hex[:12]}"
    (tmp_path / "Dockerfile").write_text(
        f"FROM {base_image}\nRUN test \"$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ')\" = lo && echo {tag}\n"
    )
    runtime.build(tmp_path, tag)
    runtime.remove_image(tag)


def test_engine_unreachable_says_how_to_start(monkeypatch):
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(EngineUnavailable) as info:
        Runtime()
    assert "setup.sh" in str(info.value) and "dockerd" in str(info.value)


def test_a_build_sets_its_labels_in_one_step(runtime, base_image, tmp_path):
    """The owner's labels and the caller's go on the image in one LABEL step after its FROM
    (the engine's labels option would add a step, a container and a commit, per label)."""
    tag = f"cligym/test-build:labels-{uuid.uuid4().hex[:12]}"
    (tmp_path / "Dockerfile").write_text(f"FROM {base_image}\nRUN echo {tag} > /tag\n")
    log: list[str] = []
    image_id = runtime.build(tmp_path, tag, labels={f"{LABEL}.test": 'two words "quoted"'}, on_log=log.append)
    try:
        assert ([line.split(":", 1)[0].strip() for line in log if line.startswith("Step ")]
                == ["Step 1/3", "Step 2/3", "Step 3/3"])
        labels = runtime.image_config(image_id)["Labels"]
        assert labels[f"{LABEL}.test"] == 'two words "quoted"' and labels[LABEL] == "1"
        assert labels[OWNER] == str(os.getpid())
    finally:
        runtime.remove_image(tag)
    assert not (tmp_path / ".dockerfile").exists() and [p.name for p in tmp_path.iterdir()] == ["Dockerfile"]
