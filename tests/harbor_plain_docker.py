"""A Harbor environment over the plain ``docker`` CLI, for running Harbor's own CLI on
exported tasks here (imported by Harbor, in its Python 3.12 venv; never by cligym).

Harbor's ``docker`` environment drives ``docker compose`` v2 and starts an egress
sidecar, neither of which this engine has. Its Apple ``container`` environment runs one
container through a CLI whose verbs (build, run -d, exec, stop, rm, image rm) are
docker's, so this class reuses it and only translates the command line: every container
runs with ``--network none``, a pids limit and a label the test removes by, and a build
runs without network too.
"""

from __future__ import annotations

import asyncio
import io
import shutil
import tarfile
from pathlib import Path

from harbor.environments.apple_container import AppleContainerEnvironment
from harbor.environments.base import ExecResult, transfer_tar_filter
from harbor.environments.capabilities import EnvironmentCapabilities

LABEL = "cligym.test=harbor-cli"


def docker_args(args: list[str]) -> list[str]:
    """``container`` CLI arguments as docker's."""
    verb, rest = args[0], list(args[1:])
    if verb == "run":  # -c CPUS, but not the -c of the command's "sh -c"
        rest = ["--cpus" if a == "-c" and i + 1 < len(rest) and rest[i + 1].replace(".", "").isdigit() else a
                for i, a in enumerate(rest)]
        return ["run", "--network", "none", "--pids-limit", "512", "--label", LABEL, *rest]
    if verb == "build":
        return ["build", "--network", "none", "--label", LABEL, *rest]
    if verb == "exec":
        return ["exec", *({"--uid": "--user"}.get(a, a) for a in rest)]
    if verb == "stop":
        return ["stop", "-t", "1", *rest]
    return [verb, *rest]


class PlainDockerEnvironment(AppleContainerEnvironment):
    @classmethod
    def preflight(cls) -> None:
        if not shutil.which("docker"):
            raise SystemExit("the docker CLI is not on PATH")

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(mounted=True, disable_internet=True)

    async def _run_container_command(
        self, args: list[str], check: bool = True, timeout_sec: int | None = None, stdin_data: bytes | None = None,
    ) -> ExecResult:
        out, err, code = await _docker(docker_args(args), stdin_data, timeout_sec)
        result = ExecResult(stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"), return_code=code)
        if check and code != 0:
            raise RuntimeError(f"docker {' '.join(args[:2])} failed ({code}): {result.stderr}")
        return result

    async def _download_tar(self, tar_args: list[str], target_path: Path, description: str) -> None:
        out, err, code = await _docker(["exec", self._container_name, "tar", "cf", "-", *tar_args], None, 600)
        if code != 0:
            raise RuntimeError(f"could not download {description}: {err.decode(errors='replace')}")
        target_path.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(out)) as tar:
            tar.extractall(path=target_path, filter=transfer_tar_filter)


async def _docker(args: list[str], stdin: bytes | None, timeout: float | None) -> tuple[bytes, bytes, int]:
    proc = await asyncio.create_subprocess_exec(
        "docker", *args, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout=timeout)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        proc.kill()
        await proc.wait()
        raise
    return out, err, proc.returncode or 0
