"""A failing gold build leaves other processes' images alone, and an engine that never
answers is a clear error in seconds (the CLI's real connect timeout: about 10 s)."""

from __future__ import annotations

import socket
import threading
import time
import uuid
from pathlib import Path

from cligym.config import DEFAULT_BASE_IMAGE, LABEL
from tests.unit.test_safety import cli


def test_a_failing_gold_leaves_other_processes_images(tmp_path, runtime, base_image):
    """A gold run that fails removes only what its own process built."""
    context = tmp_path / "ctx"
    context.mkdir()
    other = f"cligym/test-other-process:{uuid.uuid4().hex[:8]}"
    # steps of its own: a gold build's install stage starts FROM the base with this LABEL, and
    # removes that step when it ends, so a build taking it as cache could lose its parent
    (context / "Dockerfile").write_text(f"FROM {DEFAULT_BASE_IMAGE}\nLABEL {LABEL}=1 test={other}\n"
                                        "RUN echo other > /other\n")
    runtime.build(context, other)  # this test process plays the other process
    try:
        project = tmp_path / "p"
        (project / "tests").mkdir(parents=True)
        (project / "pyproject.toml").write_text(
            '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n'
            '[project]\nname = "cligym-sample-allfail"\nversion = "0.1"\n'
            '[project.optional-dependencies]\ntest = ["pytest"]\n[tool.setuptools]\npy-modules = ["allfail"]\n')
        (project / "allfail.py").write_text("VALUE = 1\n")
        (project / "tests" / "test_it.py").write_text("def test_no():\n    assert False\n")
        proc = cli("gold", str(project), "-o", str(tmp_path / "out"), "-q")
        assert proc.returncode != 0 and "no test passed" in proc.stderr, proc.stderr
        assert runtime.image_exists(other)
    finally:
        runtime.remove_image(other)


class SilentEngine:
    """A unix socket that accepts connections and never says a word."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(path))
        self.listener.listen(16)
        self.held: list[socket.socket] = []
        self.open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self.open:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.open = False
        self.listener.close()
        for conn in self.held:
            conn.close()


def test_an_engine_that_never_answers_is_a_clear_error_in_seconds(tmp_path):
    engine = SilentEngine(tmp_path / "silent.sock")
    try:
        started = time.monotonic()
        proc = cli("clean", env={"DOCKER_HOST": f"unix://{engine.path}"}, timeout=120)
        took = time.monotonic() - started
    finally:
        engine.close()
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 3, proc.stderr
    assert len(lines) == 1 and "Docker engine" in lines[0] and "Traceback" not in proc.stderr
    assert took < 30
