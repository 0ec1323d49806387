"""Engine failures surface as cligym errors, never as the SDK's own types.

Against the real engine: missing images, containers removed behind a session's back,
failing builds, a socket where nothing listens, an engine that never answers, and an
engine lost after connecting (a unix-socket relay to the real engine, then cut).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker.models.containers
import pytest

from cligym.agents.tools import ToolExecutor
from cligym.config import LABEL
from cligym.errors import BuildFailed, CligymError, EngineError, EngineUnavailable
from cligym.runtime import Runtime

MISSING = "cligym/no-such-image:never-built"


def engine_socket() -> str | None:
    """The real engine's unix socket path, or None when it is reached another way."""
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        return None
    path = host[len("unix://"):]
    return path if os.path.exists(path) else None


class EngineRelay:
    """A unix socket that relays every connection to the real engine until ``cut``.

    ``cut`` closes the listener and every relayed connection and removes the socket file,
    as if the engine had gone; ``restore`` listens again on the same path. ``stall`` holds
    every byte back, as if the engine had hung; ``flow`` lets them through again.
    """

    def __init__(self, path: Path, target: str) -> None:
        self.path, self.target = path, target
        self.url = f"unix://{path}"
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._flowing = threading.Event()
        self._flowing.set()
        self.restore()

    def stall(self) -> None:
        self._flowing.clear()

    def flow(self) -> None:
        self._flowing.set()

    def restore(self) -> None:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.path))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def cut(self) -> None:
        assert self._listener is not None
        _close(self._listener)
        self._listener = None
        self.path.unlink(missing_ok=True)
        with self._lock:
            for sock in self._open:
                _close(sock)
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # cut
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(self.target)
            with self._lock:
                self._open += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(src, dst, self._flowing), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket, flowing: threading.Event) -> None:
    try:
        while data := src.recv(1 << 16):
            flowing.wait()
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in accept or recv
    except OSError:
        pass
    sock.close()


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    # unix socket paths are limited to about 100 bytes: a short directory, not tmp_path
    with tempfile.TemporaryDirectory(prefix="cg-", dir="/tmp") as tmp:
        yield Path(tmp)


@pytest.fixture
def relay(socket_dir) -> Iterator[EngineRelay]:
    target = engine_socket()
    if target is None:
        pytest.skip("the engine is not on a local unix socket")
    relay = EngineRelay(socket_dir / "engine.sock", target)
    yield relay
    if relay._listener is not None:
        relay.cut()


def assert_cligym(exc: BaseException) -> None:
    """A cligym error, one line, with no SDK type anywhere in its class."""
    assert isinstance(exc, CligymError)
    assert type(exc).__module__ == "cligym.errors", type(exc)
    assert str(exc) and "\n" not in str(exc), str(exc)


# --------------------------------------------------------------------------- the engine refuses


def test_missing_image_is_an_engine_error(runtime):
    with pytest.raises(EngineError, match="not present") as info:
        runtime.run(MISSING, "true", timeout=30)
    assert_cligym(info.value)
    with pytest.raises(EngineError, match="not present"):
        with runtime.session(MISSING):
            pass
    with pytest.raises(EngineError, match="not present"):
        runtime.image_id(MISSING)
    with pytest.raises(EngineError, match="not present"):
        runtime.image_config(MISSING)
    # "not found" answers keep their meaning
    assert runtime.image_exists(MISSING) is False
    assert runtime.remove_image(MISSING) is None


def test_session_whose_container_was_removed_behind_its_back(runtime, base_image):
    with runtime.session(base_image) as session:
        assert session.exec("true").ok
        # another runtime (think: a clean-up elsewhere in this process) removes it
        other = Runtime()
        assert other.remove_labelled_containers(mine=True) >= 1
        other.close()
        for call in (
            lambda: session.exec("true"),
            lambda: session.put_files({"/tmp/x": "x"}),
            lambda: session.get_file("/etc/hostname"),  # an error, not "no such file"
            lambda: session.get_archive("/etc"),
            lambda: session.diff(),
            lambda: session.commit("cligym/test-gone", "t1"),
        ):
            with pytest.raises(EngineError, match="No such container") as info:
                call()
            assert_cligym(info.value)
    # leaving the block removed nothing and raised nothing


def test_an_interrupt_while_a_container_is_created_leaves_no_container(base_image, monkeypatch):
    """A signal's KeyboardInterrupt that lands after the engine made the container but before
    its id came back (here: in the SDK's look-up right after the create request) must not
    leave the container behind: nothing else knows it."""
    runtime = Runtime()
    try:
        def interrupted(*args, **kwargs):
            raise KeyboardInterrupt("SIGTERM")

        monkeypatch.setattr(docker.models.containers.ContainerCollection, "get", interrupted)
        with pytest.raises(KeyboardInterrupt):
            with runtime.session(base_image):
                pass
        monkeypatch.undo()
        assert runtime.labelled_containers(mine=True) == []
    finally:
        runtime.close()


def test_paths_that_do_not_exist_are_none_and_refusals_are_errors(runtime, base_image):
    with runtime.session(base_image) as session:
        assert session.get_file("/nope") is None
        assert session.get_archive("/nope") is None
        assert session.get_file("/etc") is None  # a directory is not a regular file
        with pytest.raises(EngineError, match="not a directory") as info:
            session.put_archive(b"", "/etc/passwd/x")
        assert "overlay2" not in str(info.value)  # the engine's storage paths are left out
        with pytest.raises(EngineError, match="/nope/dir"):
            session.put_archive(b"", "/nope/dir")


def test_failing_builds_are_build_failed(runtime, base_image, tmp_path):
    syntax = tmp_path / "syntax"
    syntax.mkdir()
    (syntax / "Dockerfile").write_text(f"FROM {base_image}\nNOT-AN-INSTRUCTION x\n")
    with pytest.raises(BuildFailed, match="unknown instruction") as info:
        runtime.build(syntax, "cligym/test-build:syntax")
    assert_cligym(info.value)

    with pytest.raises(BuildFailed):
        runtime.build(tmp_path / "no-such-context", "cligym/test-build:nocontext")

    from_missing = tmp_path / "from-missing"
    from_missing.mkdir()
    (from_missing / "Dockerfile").write_text(f"FROM {MISSING}\n")
    with pytest.raises(BuildFailed):
        runtime.build(from_missing, "cligym/test-build:frommissing")
    for tag in ("syntax", "nocontext", "frommissing"):
        assert not runtime.image_exists(f"cligym/test-build:{tag}")


def test_save_and_load_failures(runtime, tmp_path):
    with pytest.raises(EngineError) as info:
        runtime.save_images([MISSING], tmp_path / "images.tar")
    assert_cligym(info.value)
    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"this is not a tar archive" * 100)
    with pytest.raises(EngineError) as info:
        runtime.load_images(garbage)
    assert_cligym(info.value)
    # a host file the caller named is the caller's problem, not the engine's
    with pytest.raises(FileNotFoundError):
        runtime.load_images(tmp_path / "absent.tar")


# --------------------------------------------------------------------------- the engine is not there


def test_socket_where_nothing_listens(socket_dir):
    path = socket_dir / "engine.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))  # bound, never listening: connections are refused
        started = time.monotonic()
        with pytest.raises(EngineUnavailable) as info:
            Runtime(f"unix://{path}")
        assert time.monotonic() - started < 5
    assert_cligym(info.value)
    assert str(path) in str(info.value) and "setup.sh" in str(info.value)


def test_engine_that_never_answers(socket_dir):
    path = socket_dir / "engine.sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
        sock.listen(8)  # connections are queued and never answered
        started = time.monotonic()
        with pytest.raises(EngineUnavailable) as info:
            Runtime(f"unix://{path}", ping_timeout=1)
        assert time.monotonic() - started < 10
    assert_cligym(info.value)


def test_engine_lost_after_connecting(relay, base_image, tmp_path):
    runtime = Runtime(relay.url)
    assert runtime.image_exists(base_image)
    assert runtime.run(base_image, "echo relayed", timeout=60).output.strip() == "relayed"
    (tmp_path / "Dockerfile").write_text(f"FROM {base_image}\nRUN true\n")
    relay.cut()
    calls = {
        "image_exists": lambda: runtime.image_exists(base_image),
        "image_config": lambda: runtime.image_config(base_image),
        "labelled_images": lambda: runtime.labelled_images(),
        "labelled_containers": lambda: runtime.labelled_containers(mine=True),
        "remove_image": lambda: runtime.remove_image(MISSING),
        "run": lambda: runtime.run(base_image, "true", timeout=30),
        "session": lambda: runtime.session(base_image).__enter__(),
        "build": lambda: runtime.build(tmp_path, "cligym/test-build:lost"),  # not BuildFailed
        "save_images": lambda: runtime.save_images([base_image], tmp_path / "out.tar"),
    }
    for name, call in calls.items():
        started = time.monotonic()
        with pytest.raises(EngineUnavailable) as info:
            call()
        assert time.monotonic() - started < 5, name
        assert_cligym(info.value)
        assert "not reachable" in str(info.value), name
    relay.restore()
    assert runtime.image_exists(base_image)  # and back once it is there again
    runtime.close()


def test_engine_that_stops_answering(relay, base_image):
    runtime = Runtime(relay.url, timeout=1)
    assert runtime.image_exists(base_image)
    relay.stall()
    for call in (lambda: runtime.image_exists(base_image), lambda: runtime.labelled_images()):
        started = time.monotonic()
        with pytest.raises(EngineError, match="no answer in time") as info:
            call()
        assert time.monotonic() - started < 5
        assert not isinstance(info.value, EngineUnavailable)  # the engine is there, but slow
        assert_cligym(info.value)
    relay.flow()
    assert runtime.image_exists(base_image)
    runtime.close()


def test_session_and_agent_tools_when_the_engine_goes(relay, base_image):
    runtime = Runtime(relay.url)
    with runtime.session(base_image) as session:
        tools = ToolExecutor(session)
        assert tools.run("execute_bash", {"command": "echo up"}).strip() == "up"
        relay.cut()
        with pytest.raises(EngineUnavailable):
            session.exec("true")
        with pytest.raises(EngineUnavailable):
            session.get_file("/etc/hostname")
        # the agent's tools do not turn a lost engine into an observation for the model
        with pytest.raises(EngineUnavailable):
            tools.run("execute_bash", {"command": "true"})
        relay.restore()  # so that leaving the block can remove the container
        assert session.exec("echo back").output.strip() == "back"
    assert session.id not in runtime.labelled_containers()
    runtime.close()


def test_commit_labels_survive_the_split(runtime, base_image):
    """The session's commit and the image inspection go through public methods only."""
    with runtime.session(base_image) as session:
        suffix = uuid.uuid4().hex[:12]  # a tag of this test run's own (another may share the engine)
        image_id = session.commit("cligym/test-errors", suffix)
    try:
        assert runtime.image_config(image_id)["Labels"][LABEL] == "1"
        assert runtime.image_size(image_id) > 0
    finally:
        runtime.remove_image(f"cligym/test-errors:{suffix}")
