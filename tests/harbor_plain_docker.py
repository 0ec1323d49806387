"""A Harbor environment over the plain ``docker`` CLI, for running Harbor's own CLI on
exported tasks here (imported by Harbor, in its Python 3.12 venv; never by cligym).

Harbor's ``docker`` environment drives ``docker compose`` v2 and starts an egress
sidecar, neither of which this engine has. Its Apple ``container`` environment runs one
container through a CLI whose verbs (build, run -d, exec, stop, rm, image rm) are
docker's, so this class reuses it and only translates the command line: every container
runs with ``--network none``, a pids limit and a label the test removes by, and a build
runs without network too. As Harbor's docker environment does, it honours the task's
``environment/docker-compose.yaml`` (the keys cligym's tasks use: the main service's
volumes and environment; any other is refused, so a test notices) and copies files in and
out with ``docker cp``, which starts no process in the container.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import yaml

from harbor.environments.apple_container import AppleContainerEnvironment
from harbor.environments.base import ExecResult
from harbor.environments.capabilities import EnvironmentCapabilities

LABEL = "cligym.test=harbor-cli"


def compose_args(environment_dir: Path) -> list[str]:
    """The task's compose file's main service as ``docker run`` options."""
    path = environment_dir / "docker-compose.yaml"
    if not path.is_file():
        return []
    main = yaml.safe_load(path.read_text())["services"]["main"]
    unknown = set(main) - {"volumes", "environment"}
    if unknown:
        raise RuntimeError(f"this test environment does not honour compose keys {sorted(unknown)}")
    args = []
    for volume in main.get("volumes", []):
        src, dest, *mode = volume.split(":")
        args += ["-v", f"{(environment_dir / src).resolve()}:{dest}:{mode[0] if mode else 'rw'}"]
    for key, value in (main.get("environment") or {}).items():
        args += ["-e", f"{key}={value}"]
    return args


def docker_args(args: list[str], compose: list[str]) -> list[str]:
    """``container`` CLI arguments as docker's (``compose``: the task's run options)."""
    verb, rest = args[0], list(args[1:])
    if verb == "run":  # -c CPUS, but not the -c of the command's "sh -c"
        rest = ["--cpus" if a == "-c" and i + 1 < len(rest) and rest[i + 1].replace(".", "").isdigit() else a
                for i, a in enumerate(rest)]
        return ["run", "--network", "none", "--pids-limit", "512", "--label", LABEL, *compose, *rest]
    if verb == "build":
        return ["build", "--network", "none", "--label", LABEL, *rest]
    if verb == "exec":
        return ["exec", *({"--uid": "--user"}.get(a, a) for a in rest)]
    if verb == "stop":
        return ["stop", "-t", "1", *rest]
    return [verb, *rest]


class PlainDockerEnvironment(AppleContainerEnvironment):
    @classmethod
    def preflight(cls, kwargs=None) -> None:  # Harbor's options check, not Apple's arm64 one
        super(AppleContainerEnvironment, cls).preflight(kwargs)
        if not shutil.which("docker"):
            raise SystemExit("the docker CLI is not on PATH")

    @property
    def capabilities(self) -> EnvironmentCapabilities:
        return EnvironmentCapabilities(mounted=True, disable_internet=True)

    async def _run_container_command(
        self, args: list[str], check: bool = True, timeout_sec: int | None = None, stdin_data: bytes | None = None,
    ) -> ExecResult:
        out, err, code = await _docker(docker_args(args, compose_args(self.environment_dir)), stdin_data, timeout_sec)
        result = ExecResult(stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"), return_code=code)
        if check and code != 0:
            raise RuntimeError(f"docker {' '.join(args[:2])} failed ({code}): {result.stderr}")
        return result

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        await self._cp(f"{Path(source_dir).resolve()}/.", f"{self._container_name}:{target_dir}")

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        await self._cp(str(Path(source_path).resolve()), f"{self._container_name}:{target_path}")

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        Path(target_dir).mkdir(parents=True, exist_ok=True)
        await self._cp(f"{self._container_name}:{source_dir}/.", str(target_dir))

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        await self._cp(f"{self._container_name}:{source_path}", str(target_path))

    async def _cp(self, source: str, target: str) -> None:
        out, err, code = await _docker(["cp", source, target], None, 600)
        if code != 0:
            raise RuntimeError(f"docker cp {source} {target} failed: {err.decode(errors='replace')}")


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
