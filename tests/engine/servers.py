"""Real servers on this machine for the registry tests: an OCI registry (the distribution
project's, Debian's ``docker-registry``) and a second, empty Docker engine, each on
127.0.0.1 or a socket of its own, each stopped and its files removed afterwards."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

REGISTRY = shutil.which("docker-registry") or "/usr/bin/docker-registry"
DOCKERD = shutil.which("dockerd") or "/usr/bin/dockerd"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _stop(proc: subprocess.Popen, seconds: float = 30) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@contextmanager
def registry_server(folder: Path, *, readonly: bool = False, port: int | None = None) -> Iterator[str]:
    """A registry on 127.0.0.1 storing into ``folder``; yields ``127.0.0.1:PORT``.
    ``readonly``: it serves what it has and refuses every push (its maintenance mode)."""
    assert os.access(REGISTRY, os.X_OK), "no docker-registry (scripts/setup.sh installs Debian's)"
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yml"
    maintenance = "  maintenance:\n    readonly:\n      enabled: true\n" if readonly else ""
    config.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {folder}/data\n"
                      f"  delete:\n    enabled: true\n{maintenance}http:\n  addr: 127.0.0.1:{port}\n", encoding="utf-8")
    log = open(folder / "registry.log", "wb")
    proc = subprocess.Popen([REGISTRY, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            assert proc.poll() is None, (folder / "registry.log").read_text()[-2000:]
            try:
                if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=2).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.2)
        else:
            raise AssertionError("the registry did not answer within 30 s")
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()


def stored_bytes(folder: Path) -> int:
    """What a registry started on ``folder`` holds: its blobs, each stored once."""
    return sum(p.stat().st_size for p in (folder / "data").rglob("data") if p.is_file())


@contextmanager
def empty_engine(folder: Path) -> Iterator[str]:
    """A second Docker engine with nothing in it (its own data, exec root and socket, no
    bridge); yields its ``unix://`` address. Stopped and its data removed afterwards."""
    folder.mkdir(parents=True, exist_ok=True)
    sock = folder / "docker.sock"
    log = open(folder / "dockerd.log", "wb")
    proc = subprocess.Popen([DOCKERD, "--data-root", str(folder / "data"), "--exec-root", str(folder / "exec"),
                             "--pidfile", str(folder / "dockerd.pid"), "--host", f"unix://{sock}", "--bridge=none",
                             "--iptables=false", "--ip-masq=false"], stdout=log, stderr=subprocess.STDOUT)
    address = f"unix://{sock}"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "-H", address, "info"], capture_output=True).returncode != 0:
            assert proc.poll() is None, (folder / "dockerd.log").read_text()[-2000:]
            assert time.monotonic() < deadline, "the second engine did not start within 60 s"
            time.sleep(0.3)
        yield address
    finally:
        _stop(proc, 60)
        log.close()
        shutil.rmtree(folder / "data", ignore_errors=True)
        shutil.rmtree(folder / "exec", ignore_errors=True)
