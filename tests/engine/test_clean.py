"""Ownership labels and ``cligym clean``: what a run that ended left is removed, what a live
run (this test process) holds is not, and gold images stay.

A "dead run" here is real: the pid of a process the test started and waited for, with a
start time that cannot be its own (so even a reused pid does not make it look alive).
Nothing runs ``clean --all``: other runs share the engine.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import tempfile
import uuid
from contextlib import ExitStack
from pathlib import Path

import pytest

from cligym.errors import EngineError
from cligym.runtime.owner import (
    BOOT,
    HOST,
    PIDNS,
    RUN,
    STARTED,
    boot_id,
    owned,
    owner_alive,
    owner_labels,
    start_time,
)


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def _dead_labels() -> dict[str, str]:
    return {**owner_labels(), "cligym.pid": str(_dead_pid()), STARTED: "1", RUN: uuid.uuid4().hex}


def _clean(*args: str) -> dict:
    proc = subprocess.run([sys.executable, "-m", "cligym", "clean", "--json", *args], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_owner_labels_tell_a_live_run_from_a_dead_one():
    mine = owner_labels()
    assert mine["cligym.pid"] == str(os.getpid()) and mine[STARTED] == start_time(os.getpid())
    assert mine[BOOT] == boot_id() and mine[HOST] == socket.gethostname() and len(mine[RUN]) == 32
    assert owner_alive(mine)
    assert not owner_alive({**mine, STARTED: "1"})  # same pid, another process: pid reuse
    assert not owner_alive({**mine, "cligym.pid": str(_dead_pid())})
    assert not owner_alive({**mine, BOOT: "another-boot"})  # made before a reboot
    assert owner_alive({**mine, "cligym.pid": str(_dead_pid()), HOST: "another-host"})  # cannot tell: kept
    assert owner_alive({**mine, "cligym.pid": str(_dead_pid()), PIDNS: "pid:[1]"})  # another pid namespace: kept
    assert owner_alive({"cligym": "1"})  # no owner (the base image): never a dead run's
    assert owner_alive({**mine, STARTED: ""})  # an owner without a start time: the pid decides


def test_clean_removes_dead_runs_containers_only(runtime, base_image):
    # Every cligym command reaps dead runs: another one on the engine (a test run beside
    # this one starts many) may remove the dead container before clean does. Then clean
    # counts nothing of it, and the case runs again; ten times in a row would be no race.
    # The other run may even take it between its creation and its start ("marked for
    # removal"), or before it is listed: that round counts nothing either.
    report = {"containers": 0}
    for _ in range(10):
        with runtime.session(base_image) as live, ExitStack() as stack:
            try:
                dead = stack.enter_context(runtime.session(base_image, labels=_dead_labels()))
            except EngineError:
                continue
            if dead.id not in runtime.dead_containers():
                continue
            assert live.id not in runtime.dead_containers()
            report = _clean()
            remaining = set(runtime.labelled_containers())
            assert dead.id not in remaining, "the dead run's container was kept"
            assert live.id in remaining, "clean removed a container of a live run"
            assert report["all"] is False and runtime.image_exists(base_image)
            assert live.exec("true").ok  # still running
        if report["containers"] >= 1:
            break
    assert report["containers"] >= 1, report


def _tiny_image(runtime, base_image: str, tag: str, labels: dict[str, str] | None = None) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "Dockerfile").write_text(f"FROM {base_image}\nRUN echo {uuid.uuid4().hex} > /marker\n")
        return runtime.build(Path(tmp), tag, labels=labels)


def test_clean_images_removes_dead_runs_scratch_images_only(runtime, base_image):
    suffix = uuid.uuid4().hex[:10]
    dead = _dead_labels()
    tags = {
        "dead scratch": (f"cligym/broken-cleantest:{suffix}", dead),
        "dead gold": (f"cligym/gold-cleantest:{suffix}", dead),
        "live scratch": (f"cligym/validate-cleantest:{suffix}", None),
    }
    try:
        ids = {name: _tiny_image(runtime, base_image, tag, labels) for name, (tag, labels) in tags.items()}
        # another cligym process on the engine may reap the dead scratch image first: it looks
        # like a dead run's to every process, which is the point
        assert ids["dead gold"] in runtime.dead_images() and ids["live scratch"] not in runtime.dead_images()
        report = _clean("--images")
        assert not runtime.image_exists(tags["dead scratch"][0])
        assert runtime.image_exists(tags["dead gold"][0]), "a gold image went without --cache"
        assert runtime.image_exists(tags["live scratch"][0]), "a live run's image went"
        assert isinstance(report["images"], int)
    finally:
        for tag, _ in tags.values():
            runtime.remove_image(tag)


def test_clean_leaves_containers_others_run_from_cligym_images(runtime, base_image):
    """An exported task's image is built FROM a gold image, whose labels name a run that
    has ended; Harbor's containers of that task inherit them. Neither clean (--all removes
    what ``labelled_containers`` lists) nor a run's own clean-up may take them."""
    tag = f"cligym/gold-cleantest:{uuid.uuid4().hex[:10]}"
    _tiny_image(runtime, base_image, tag, _dead_labels())
    derived = runtime._client.containers.create(tag, ["sleep", "600"], name=f"hb-{uuid.uuid4().hex[:8]}",
                                                network_mode="none")
    try:
        assert owned(derived.labels) and not owner_alive(derived.labels)  # inherited: looks like a dead run's
        derived.start()
        assert derived.id not in runtime.dead_containers()
        assert derived.id not in runtime.labelled_containers()
        _clean()
        derived.reload()
        assert derived.status == "running"
    finally:
        derived.remove(force=True)
        runtime.remove_image(tag)


@pytest.mark.parametrize("spec, needle", [("--bogus", "No such option"), ("--all=3", "does not take a value")])
def test_clean_usage_errors_exit_2(spec, needle):
    proc = subprocess.run([sys.executable, "-m", "cligym", "clean", spec], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and needle in proc.stderr and "Traceback" not in proc.stderr


def _aged(runtime, image: str, tag: str, folder: Path) -> str:
    """A copy of ``image`` tagged ``tag`` whose configuration says it was built in 2020 (a
    ``docker save`` with its creation date changed, loaded back): a cache entry of old."""
    import hashlib
    import tarfile

    runtime.save_images([image], folder / "image.tar")
    with tarfile.open(folder / "image.tar") as tar:
        tar.extractall(folder / "x", filter="tar")
    root = folder / "x"
    manifest = json.loads((root / "manifest.json").read_text())
    config = json.loads((root / manifest[0]["Config"]).read_text())
    config["created"] = "2020-01-01T00:00:00Z"
    data = json.dumps(config).encode()
    name = hashlib.sha256(data).hexdigest() + ".json"
    (root / name).write_bytes(data)
    manifest[0].update(Config=name, RepoTags=[tag])
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "repositories").unlink(missing_ok=True)
    with tarfile.open(folder / "aged.tar", "w") as tar:
        for entry in sorted(root.iterdir()):
            tar.add(entry, arcname=entry.name)
    runtime.load_images(folder / "aged.tar")
    return runtime.image_id(tag)


def test_clean_images_cache_prunes_old_gold_images_nothing_uses(runtime, base_image, tmp_path):
    """``--cache DAYS`` removes gold images built more than DAYS days ago (2000 here: none
    but the ones this test made in 2020), but not one a
    container uses now; without it, and for new ones, the cache stays."""
    suffix = uuid.uuid4().hex[:10]
    fresh = _tiny_image(runtime, base_image, f"cligym/gold-cachetest:{suffix}-fresh")
    tags = {name: f"cligym/gold-cachetest:{suffix}-{name}" for name in ("unused", "used")}
    try:
        for name, tag in tags.items():
            (tmp_path / name).mkdir()
            _aged(runtime, fresh, tag, tmp_path / name)
        _clean("--images")
        assert all(runtime.image_exists(tag) for tag in tags.values()), "the cache went without --cache"
        with runtime.session(tags["used"]) as session:
            _clean("--images", "--cache", "2000")  # older than 2020 + 2000 days: none but the test's
            assert not runtime.image_exists(tags["unused"])
            assert runtime.image_exists(tags["used"]) and session.exec("true").ok
        assert runtime.image_exists(f"cligym/gold-cachetest:{suffix}-fresh") and runtime.image_exists(base_image)
    finally:
        for tag in [*tags.values(), f"cligym/gold-cachetest:{suffix}-fresh"]:
            runtime.remove_image(tag)


def test_clean_cache_needs_images():
    proc = subprocess.run([sys.executable, "-m", "cligym", "clean", "--cache", "3"], capture_output=True, text=True)
    assert proc.returncode == 2 and "give --images" in proc.stderr


def test_an_interrupted_run_removes_what_the_engine_finished_after_it_let_go(runtime, base_image):
    """``remove_own`` (what ``main`` runs after an interruption): this process's containers,
    scratch images and a commit that lands while it sweeps go; its cache image stays."""
    suffix = uuid.uuid4().hex[:10]
    gold = f"cligym/gold-owntest:{suffix}"
    late = f"cligym/successor:late{suffix}"
    with ExitStack() as stack:
        stack.callback(runtime.remove_image, gold)
        stack.callback(runtime.remove_image, late)
        session = stack.enter_context(runtime.session(base_image))
        session.commit(*gold.split(":"))
        session.commit("cligym/successor", f"own{suffix}")
        kept = runtime.labelled_containers(mine=True)
        assert session.id in kept
        landing = threading.Timer(0.5, _tiny_image, args=(runtime, base_image, late))
        landing.start()  # a build whose call was abandoned: the engine finishes it later
        try:
            removed = runtime.remove_own(settle=3)
        finally:
            landing.join()
        assert removed >= 2 and not runtime.labelled_containers(mine=True) and not runtime.own_images()
        assert not runtime.image_exists(f"cligym/successor:own{suffix}") and not runtime.image_exists(late)
        assert runtime.image_exists(gold), "a cache image went"
