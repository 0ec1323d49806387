"""Several cligym processes on one engine. Gold images are a cache no run removes; a run
removes only the scratch images it named and the containers it made, and a reaper only
what a run of this host and pid namespace that has ended left (``cligym.runtime.names``,
``cligym.runtime.owner``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from cligym.config import DEFAULT_BASE_IMAGE
from cligym.layout import GoldDir
from cligym.models.gold import GoldEnv
from cligym.models.io import load
from cligym.runtime import ImageKind
from cligym.runtime.common import OWNER

BUILDER = "import sys; from cligym.runtime import Runtime; Runtime().build(sys.argv[1], sys.argv[2])"
SPEC = "markupsafe==3.0.2"

#: A cligym user in its own pid namespace: one long session on the gold image the whole
#: time, and meanwhile containers of it and scratch builds FROM it, until told to stop.
NEIGHBOUR = textwrap.dedent("""
    import json, os, sys, tempfile, time
    from pathlib import Path
    from cligym.runtime import ImageKind, Runtime
    gold, stop = sys.argv[1], Path(sys.argv[2])
    runtime, failures, rounds = Runtime(), [], 0
    with runtime.session(gold) as session:
        print(json.dumps({"pid": os.getpid()}), flush=True)
        while not stop.exists():
            rounds += 1
            try:
                assert runtime.run(gold, ["true"]).exit_code == 0
                with tempfile.TemporaryDirectory() as context:
                    Path(context, "Dockerfile").write_text(f"FROM {gold}\\nRUN echo {rounds} > /round\\n")
                    tag = ImageKind.BROKEN.tag("neighbour", str(rounds))
                    runtime.build(Path(context), tag, nocache=True)
                    assert runtime.run(tag, ["cat", "/round"]).output.strip() == str(rounds)
                    runtime.remove_image(tag)
                assert session.exec(["true"]).exit_code == 0
            except Exception as exc:
                failures.append(f"round {rounds}: {exc}")
            time.sleep(0.5)
        failures += [] if session.exec(["true"]).exit_code == 0 else ["the long session is gone"]
    print(json.dumps({"rounds": rounds, "failures": failures}), flush=True)
""")


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cligym", *args], capture_output=True, text=True, timeout=900)


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0, reason="needs unshare and root")
def test_a_run_in_another_pid_namespace_keeps_what_it_uses(runtime, gold_dirs, tmp_path):
    """While a cligym process in a pid namespace of its own (its pid is small, and some host
    process has it) uses the gold image, the host runs gold, invert and clean --images on
    the same project: every container and image the other process uses stays. (Judged by
    its pid alone, the host's reaper would take the neighbour for a dead run.)"""
    gold_dir = gold_dirs(SPEC)
    gold = load(GoldEnv, GoldDir(gold_dir).gold)
    stop = tmp_path / "stop"
    neighbour = subprocess.Popen(
        ["unshare", "--uts", "--pid", "--fork", "--mount-proc", sys.executable, "-c", NEIGHBOUR, gold.image, str(stop)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2],
    )
    try:
        assert json.loads(neighbour.stdout.readline())["pid"] < 100, neighbour.stderr.read()
        again = _cli("gold", SPEC, "-o", str(tmp_path / "gold"), "-q")
        assert again.returncode == 0, again.stderr
        assert load(GoldEnv, GoldDir(tmp_path / "gold").gold).image == gold.image  # the cache
        inverted = _cli("invert", str(gold_dir), "-n", "1", "--seed", "3", "-o", str(tmp_path / "run"), "-q")
        assert inverted.returncode == 0, inverted.stderr
        cleaned = _cli("clean", "--images")
        assert cleaned.returncode == 0, cleaned.stderr
    finally:
        stop.touch()
        out, err = neighbour.communicate(timeout=300)
    lines = out.strip().splitlines()  # its first line (its pid) was read above
    assert len(lines) == 1, f"the neighbour did not finish: {err[-2000:]}"
    report = json.loads(lines[0])
    assert report["rounds"] >= 2 and report["failures"] == [], (report, err[-2000:])
    assert runtime.image_exists(gold.image)


def test_an_image_built_from_anothers_scratch_image_survives_its_removal(runtime, base_image, tmp_path):
    """Process B builds FROM A's scratch image; A removes its image: B's image and its steps stay."""
    context = tmp_path / "a"
    context.mkdir()
    (context / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo a > /a\n")
    tag = ImageKind.BROKEN.tag("sharing-test", uuid.uuid4().hex[:12])
    runtime.build(context, tag, nocache=True)
    child = tmp_path / "b"
    child.mkdir()
    (child / "Dockerfile").write_text(f"FROM {tag}\nRUN echo child > /child\n")
    child_tag = f"cligym/broken-child:{uuid.uuid4().hex[:12]}"
    built = subprocess.run([sys.executable, "-c", BUILDER, str(child), child_tag],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    try:
        runtime.remove_image(tag)
        assert runtime.run(child_tag, ["cat", "/child"]).output.strip() == "child"
    finally:
        runtime.remove_image(child_tag)


def test_a_build_from_a_dead_runs_image_leaves_no_step_to_a_reaper(runtime, base_image, tmp_path):
    """Every step image of a build FROM an image a run that has ended made names the
    building run, so no reaper takes one for that dead run's leftover (the newest step of a
    live build has no child yet: a reaper removing it fails the build, "failed to get
    digest")."""
    tag = ImageKind.BROKEN.tag("sharing-dead", uuid.uuid4().hex[:12])
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo dead > /dead\n")
    made = subprocess.run([sys.executable, "-c", BUILDER, str(tmp_path / "dead"), tag],
                          capture_output=True, text=True, timeout=300)  # a run that ends once it built
    assert made.returncode == 0, made.stderr
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "Dockerfile").write_text(f"FROM {tag}\nRUN echo a > /a\nRUN echo b > /b\n")
    live = ImageKind.BROKEN.tag("sharing-live", uuid.uuid4().hex[:12])
    dead_base = runtime.image_id(tag)
    try:
        runtime.build(tmp_path / "live", live)
        steps = _steps(runtime, live, dead_base)
        assert len(steps) == 3  # the label's step, two RUNs' (the last is the image)
        owners = {runtime._api.inspect_image(step)["Config"]["Labels"].get(OWNER) for step in steps}
        assert owners == {str(os.getpid())}
        assert not set(steps) & set(runtime.dead_images())
        runtime.reap_dead_runs()  # the dead run's scratch tag goes; the live image and its steps stay
        assert all(runtime.image_exists(step) for step in steps)
    finally:
        runtime.remove_image(live)
        runtime.remove_image(tag)


def _steps(runtime, image: str, base: str) -> list[str]:
    """The image and its build's steps, newest first, down to (not including) ``base``."""
    chain = [runtime.image_id(image)]
    while (parent := runtime._api.inspect_image(chain[-1])["Parent"]) and parent != base:
        chain.append(parent)
    return chain


def test_the_steps_of_a_build_killed_outright_are_reaped_all_of_them(runtime, base_image, tmp_path):
    (tmp_path / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo 1 > /1\nRUN echo 2 > /2\n"
                                         "RUN sleep 300\n")
    tag = ImageKind.BROKEN.tag("sharing-killed", uuid.uuid4().hex[:12])
    proc = subprocess.Popen([sys.executable, "-c", BUILDER, str(tmp_path), tag],
                            env={**os.environ, "TMPDIR": str(tmp_path)})  # its Dockerfile copy stays in here
    try:
        deadline = time.monotonic() + 120
        while len(runtime.labelled_images(pid=proc.pid)) < 3:  # the label's step and two RUNs'
            assert proc.poll() is None and time.monotonic() < deadline, "the build did not get to its last step"
            time.sleep(0.2)
        proc.kill()
        proc.wait(30)
        steps = runtime.labelled_images(pid=proc.pid)
        assert len(steps) == 3 and steps <= set(runtime.dead_images())
        deadline = time.monotonic() + 60
        while left := {step for step in steps if runtime.image_exists(step)}:  # the engine ends the
            assert time.monotonic() < deadline, f"not reaped: {left}"  # killed build's step first
            runtime.reap_dead_runs()
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        runtime.remove_images(runtime.labelled_images(pid=proc.pid))
