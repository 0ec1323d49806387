"""Two cligym processes on one engine: a shared (gold) image another live process holds is
not removed by its maker's clean-up; a killed holder's hold is reaped; clean-ups remove
tags, so images built FROM another process's image survive it."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
import uuid

from cligym.config import DEFAULT_BASE_IMAGE
from cligym.runtime.common import OWNER
from cligym.runtime.holds import GIVEN_UP_REPOSITORY, HOLD_REPOSITORY, made_tags

HOLDER = textwrap.dedent("""
    import sys
    from cligym.runtime import Runtime
    runtime = Runtime()
    with runtime.session(sys.argv[1]) as session:
        if sys.argv[2:] == ["keep"]:
            runtime.keep(sys.argv[1])  # as a gold record naming the image would
        print("held", flush=True)
        sys.stdin.readline()
""")

BUILDER = "import sys; from cligym.runtime import Runtime; Runtime().build(sys.argv[1], sys.argv[2])"


def _shared_image(runtime, context) -> str:
    """A gold-like image (shared by tag) this process builds in ``context``, with no build
    cache as gold images are (its steps are its own: none is a step of another image)."""
    tag = f"cligym/gold-sharing-test:{uuid.uuid4().hex[:12]}"
    context.mkdir(exist_ok=True)
    (context / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo {tag} > /marker\n")
    runtime.build(context, tag, nocache=True)
    return tag


def _holder(tag: str, *extra: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, tag, *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def _holds(runtime, tag: str) -> list[str]:
    return [t for t in runtime._api.inspect_image(tag).get("RepoTags") or [] if t.startswith(HOLD_REPOSITORY)]


def _given_up(runtime, tag: str) -> list[str]:
    return [t for t in runtime._api.inspect_image(tag).get("RepoTags") or [] if t.startswith(GIVEN_UP_REPOSITORY)]


def _finish(holder: subprocess.Popen) -> None:
    holder.stdin.write("done\n")
    holder.stdin.flush()
    assert holder.wait(60) == 0


def test_a_held_shared_image_outlives_its_makers_clean_up_and_goes_with_its_last_holder(runtime, base_image,
                                                                                      tmp_path):
    """Two runs that fail on the same gold: the maker's clean-up finds the other's hold and
    hands the removal over; the holder removes the image when it lets go."""
    before = len(made_tags())
    tag = _shared_image(runtime, tmp_path)
    image_id = runtime.image_id(tag)
    step = runtime._api.inspect_image(image_id)["Parent"]  # its build's RUN step
    assert made_tags()[before:] == [tag]
    holder = _holder(tag)
    try:
        runtime.remove_made(before)  # the maker's clean-up of what it made here, as a test session's
        assert runtime.image_exists(tag) and len(_holds(runtime, tag)) == 1 and len(_given_up(runtime, tag)) == 1
        _finish(holder)
        # its hold, its tag and the give-up: gone at its exit, and its build step with it
        assert not runtime.image_exists(image_id) and not runtime.image_exists(step)
    finally:
        if holder.poll() is None:
            holder.kill()
        runtime.remove_image(tag)


def test_a_holder_that_keeps_a_given_up_image_keeps_it(runtime, base_image, tmp_path):
    """A process whose record names the image (a gold record) takes the give-up back,
    whether the maker gave up before or after: its exit removes only its hold."""
    before = len(made_tags())
    tag = _shared_image(runtime, tmp_path)
    try:
        for given_up_first in (True, False):
            if given_up_first:
                early = _holder(tag)
                runtime.remove_made(before)  # given up while another process holds it
                assert _given_up(runtime, tag)
            holder = _holder(tag, "keep")
            assert not _given_up(runtime, tag)
            if given_up_first:
                _finish(early)
            else:
                runtime.remove_image(tag)
                assert _given_up(runtime, tag)
            _finish(holder)
            assert runtime.image_exists(tag) and not _given_up(runtime, tag) and not _holds(runtime, tag)
    finally:
        runtime.remove_image(tag)
    assert not runtime.image_exists(tag)


def test_a_holder_that_lets_go_as_the_maker_gives_up_leaves_nothing_behind(runtime, base_image, tmp_path,
                                                                           monkeypatch):
    """The last holder exits between the maker's look at the holds and its give-up: the
    holder found nothing given up to remove, so the maker removes the image itself."""
    tag = _shared_image(runtime, tmp_path)
    image_id = runtime.image_id(tag)
    holder = _holder(tag)
    give_up = runtime._give_up

    def late(image: str) -> None:
        _finish(holder)  # its exit settles what it holds: nothing is given up yet
        give_up(image)

    monkeypatch.setattr(runtime, "_give_up", late)
    try:
        runtime.remove_image(tag)
        assert not runtime.image_exists(image_id)
    finally:
        if holder.poll() is None:
            holder.kill()
        for left in _given_up(runtime, image_id) if runtime.image_exists(image_id) else []:
            runtime._api.remove_image(left)
        runtime.remove_image(tag)


def test_a_given_up_image_whose_last_holder_was_killed_is_reaped(runtime, base_image, tmp_path):
    tag = _shared_image(runtime, tmp_path)
    image_id = runtime.image_id(tag)
    step = runtime._api.inspect_image(image_id)["Parent"]
    holder = _holder(tag)
    try:
        runtime.remove_image(tag)  # held: handed over
        assert runtime.image_exists(tag)
        holder.kill()
        holder.wait(30)
        runtime.reap_dead_runs()
        assert not runtime.image_exists(image_id) and not runtime.image_exists(step)
    finally:
        if holder.poll() is None:
            holder.kill()
        runtime.remove_image(tag)


def test_a_killed_holders_hold_is_reaped(runtime, base_image, tmp_path):
    """A dead process's hold protects nothing, and the next run's reaper removes it: the
    image is gone once its maker removed its tag."""
    tag = _shared_image(runtime, tmp_path)
    image_id = runtime.image_id(tag)
    holder = _holder(tag)
    try:
        holder.kill()
        holder.wait(30)
        assert len(_holds(runtime, tag)) == 1
        runtime.remove_image(tag)
        assert not runtime.image_exists(tag) and runtime.image_exists(image_id)  # only the dead hold is left
        runtime.reap_dead_runs()
        assert not runtime.image_exists(image_id)
    finally:
        runtime.remove_image(tag)


def test_a_shared_tag_removed_under_a_holder_comes_back(runtime, base_image, tmp_path):
    """A process that holds an image and finds its tag gone (removed before its hold was
    seen) puts the tag back when it uses the image again."""
    tag = _shared_image(runtime, tmp_path)
    try:
        with runtime.session(tag):
            pass
        runtime._api.remove_image(tag, force=False)  # as a maker that did not see the hold
        assert not runtime.image_exists(tag)
        with runtime.session(tag):
            assert runtime.image_exists(tag)
    finally:
        runtime.remove_image(tag)


def test_an_image_built_from_anothers_image_survives_its_clean_up(runtime, base_image, tmp_path):
    """Process B builds FROM A's shared image; A cleans up: B's image and its steps stay."""
    before = len(made_tags())
    tag = _shared_image(runtime, tmp_path / "a")
    child = tmp_path / "b"
    child.mkdir()
    (child / "Dockerfile").write_text(f"FROM {tag}\nRUN echo child > /child\n")
    child_tag = f"cligym/broken-child:{uuid.uuid4().hex[:12]}"
    built = subprocess.run([sys.executable, "-c", BUILDER, str(child), child_tag],
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    try:
        runtime.remove_made(before)
        assert runtime.run(child_tag, ["cat", "/child"]).output.strip() == "child"
    finally:
        runtime.remove_image(child_tag)
        runtime.remove_image(tag)


def test_a_build_from_a_dead_runs_image_leaves_no_step_to_a_reaper(runtime, base_image, tmp_path):
    """Every step image of a build FROM an image a run that has ended made names the
    building run, so no reaper takes one for that dead run's leftover (the newest step of a
    live build has no child yet: a reaper removing it fails the build, "failed to get
    digest")."""
    tag = f"cligym/gold-sharing-test:{uuid.uuid4().hex[:12]}"
    (tmp_path / "dead").mkdir()
    (tmp_path / "dead" / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo dead > /dead\n")
    made = subprocess.run([sys.executable, "-c", BUILDER, str(tmp_path / "dead"), tag],
                          capture_output=True, text=True, timeout=300)  # a run that ends once it built
    assert made.returncode == 0, made.stderr
    (tmp_path / "live").mkdir()
    (tmp_path / "live" / "Dockerfile").write_text(f"FROM {tag}\nRUN echo a > /a\nRUN echo b > /b\n")
    live = f"cligym/broken-sharing-test:{uuid.uuid4().hex[:12]}"
    try:
        runtime.build(tmp_path / "live", live)
        steps = _steps(runtime, live, runtime.image_id(tag))
        assert len(steps) == 3  # the label's step, two RUNs' (the last is the image)
        owners = {runtime._api.inspect_image(step)["Config"]["Labels"].get(OWNER) for step in steps}
        assert owners == {str(os.getpid())}
        assert not set(steps) & set(runtime.dead_images())
        runtime.reap_dead_runs(image_prefixes=("cligym/broken-",))
        assert all(runtime.image_exists(step) for step in steps) and runtime.image_exists(tag)
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
    (tmp_path / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nRUN echo 1 > /1\nRUN echo 2 > /2\nRUN sleep 300\n")
    tag = f"cligym/broken-sharing-test:{uuid.uuid4().hex[:12]}"
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
