"""Images: inspect, build, pull, import, save and load, and remove what cligym made.

Every image cligym builds or imports carries the ``cligym`` label; builds also carry the
labels of the run that built them (``cligym.runtime.owner``), and so do their step images
(``labelled``): an interrupted build removes them itself, a killed one's are a dead run's
untagged images, a live build's never are. Which images a run may remove at all is said
by their names (``cligym.runtime.names``).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import docker
import docker.errors
from docker.utils import parse_bytes, parse_repository_tag

from cligym.config import LABEL
from cligym.errors import BuildFailed, EngineError
from cligym.runtime.common import OWNER
from cligym.runtime.owner import RUN, owner_labels, run_id
from cligym.runtime.translate import (
    detail,
    engine_call,
    engine_errors,
    is_host_file_error,
    translated,
)

#: How many of a failed build's last log lines BuildFailed carries.
BUILD_LOG_LINES = 15
#: A (classic) build step's result in the log, its image's short id: `` ---> 149a9b55fa6c``.
_STEP_IMAGE = re.compile(r"^ ---> ([0-9a-f]{12})$")
#: A parser directive (``# escape=`` and the like): only before the first instruction.
_DIRECTIVE = re.compile(r"#\s*([A-Za-z]+)\s*=\s*(\S+)\s*$")
FROM_LINE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)


def labelled(dockerfile: str, labels: Mapping[str, str]) -> str:
    """``dockerfile`` with ``labels`` set by one LABEL instruction right after each FROM, so
    every step image names this run: set at the end, the steps carry their base's maker's
    labels, and once that run ended a reaper took a live build's newest step (untagged, no
    child yet) for its leftover ("failed to get digest"). Follows an ``# escape=`` directive."""
    label = "LABEL " + " ".join(f"{key}={json.dumps(value)}" for key, value in sorted(labels.items()))
    escape = _escape_char(dockerfile)
    lines: list[str] = []
    continued = is_from = False
    for line in dockerfile.rstrip().splitlines():
        lines.append(line)
        text = line.strip()
        if not text or text.startswith("#"):
            continue  # a blank line, a comment or a parser directive (also inside an instruction)
        if not continued:
            is_from = FROM_LINE.match(text) is not None
        continued = text.endswith(escape)
        if is_from and not continued:
            lines.append(label)
            is_from = False
    return "\n".join(lines) + "\n"


def _escape_char(dockerfile: str) -> str:
    """The line-continuation character: ``\\``, or what a leading ``# escape=`` names."""
    for line in dockerfile.splitlines():
        directive = _DIRECTIVE.match(line.strip())
        if directive is None:
            break
        if directive.group(1).lower() == "escape":
            return directive.group(2)
    return "\\"


class Images:
    """The image half of ``Runtime`` (which provides the engine client and limits)."""

    _client: docker.DockerClient
    _api: docker.APIClient
    mem_limit: str

    # ---- inspect ---------------------------------------------------------------------

    @engine_call("cannot inspect image {ref}")
    def image_exists(self, ref: str) -> bool:
        try:
            self._api.inspect_image(ref)
        except docker.errors.NotFound:
            return False
        return True

    def image_id(self, ref: str) -> str:
        return self._inspect(ref)["Id"]

    def image_config(self, ref: str) -> dict:
        """The image's run configuration (WorkingDir, Env, Cmd, Labels, ...)."""
        return self._inspect(ref).get("Config") or {}

    def image_size(self, ref: str) -> int:
        return int(self._inspect(ref).get("Size", 0))

    @engine_call("cannot inspect image {ref}")
    def _inspect(self, ref: str) -> dict:
        try:
            return self._api.inspect_image(ref)
        except docker.errors.NotFound as exc:
            raise EngineError(f"image {ref} is not present in the Docker engine") from exc

    @engine_call("cannot list images")
    def dangling_images(self) -> set[str]:
        """Ids of untagged images carrying the cligym label (build leftovers and caches)."""
        return set(self._api.images(filters={"dangling": True, "label": LABEL}, quiet=True))

    @engine_call("cannot list images")
    def labelled_images(self, *, mine: bool = False, pid: int | None = None) -> set[str]:
        """Ids of every image, intermediate ones included, that carries the cligym label;
        with ``mine``, only the images this process built, with ``pid`` those process
        ``pid`` built or committed."""
        label = f"{RUN}={run_id()}" if mine else f"{OWNER}={pid}" if pid is not None else LABEL
        return set(self._api.images(all=True, filters={"label": label}, quiet=True))

    # ---- make ------------------------------------------------------------------------

    @engine_call("cannot pull image {ref}")
    def pull(self, ref: str) -> None:
        self._client.images.pull(ref)

    @engine_call("cannot build image {tag}")
    def build(
        self,
        context: Path,
        tag: str,
        *,
        nocache: bool = False,
        labels: Mapping[str, str] | None = None,
        on_log: Callable[[str], None] | None = None,
    ) -> str:
        """Build ``context`` into ``tag`` offline (build network none); returns the image id.

        A build the engine fails (a failing step, a bad Dockerfile, an unreadable context)
        raises BuildFailed with the last lines of the log, after the intermediate images
        its steps left (untagged) are removed; a build that succeeds removes them too (the
        last image of each earlier stage of a multi-stage build). Losing the engine is
        EngineUnavailable.
        """
        if not Path(context).is_dir():
            raise BuildFailed(f"image build of {tag} failed: the build context {context} is not a directory")
        dockerfile = "Dockerfile"
        try:
            text = (Path(context) / dockerfile).read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = None  # the build says what is wrong with the context
        log: list[str] = []
        dangling_before = self.dangling_images()
        build_labels = {**owner_labels(), **(labels or {})}
        with tempfile.TemporaryDirectory(prefix="cligym-dockerfile-") as tmp:
            if text is not None and not text.rstrip().endswith("\\"):
                # the labels as an instruction of a copy outside the context: the engine's
                # labels option adds a build step (a container and a commit) per label
                dockerfile = str(Path(tmp) / "Dockerfile")
                Path(dockerfile).write_text(labelled(text, build_labels), encoding="utf-8")
                build_labels = {}
            try:
                error = self._stream_build(context, tag, dockerfile, nocache, build_labels, log, on_log)
            except KeyboardInterrupt:
                self._remove_steps(log, dangling_before)
                raise
        if error is not None:
            self._remove_steps(log, dangling_before)
            tail = "\n".join(log[-BUILD_LOG_LINES:])
            raise BuildFailed(f"image build of {tag} failed: {error}", log=tail)
        self._remove_steps(log, dangling_before)  # a multi-stage build's earlier stages
        return self.image_id(tag)

    def _remove_steps(self, log: list[str], dangling_before: set[str]) -> None:
        """Remove the untagged step images a failed or interrupted build left: only this
        build's (named in its log), since other processes build on the same engine."""
        steps = {m.group(1) for line in log if (m := _STEP_IMAGE.match(line))}
        new = self.dangling_images() - dangling_before
        self.remove_images({image_id for image_id in new if image_id.removeprefix("sha256:")[:12] in steps})

    def _stream_build(
        self,
        context: Path,
        tag: str,
        dockerfile: str,
        nocache: bool,
        labels: dict[str, str],
        log: list[str],
        on_log: Callable[[str], None] | None,
    ) -> str | None:
        """Run the build, appending its log lines to ``log``; the build's error, or None.

        Connection failures are raised (``build`` translates them). An interruption closes
        the stream, and the engine cancels the build when its connection goes."""
        error: str | None = None
        stream = None
        try:
            stream = self._api.build(
                path=str(context),
                dockerfile=dockerfile,
                tag=tag,
                rm=True,
                forcerm=True,
                nocache=nocache,
                decode=True,
                network_mode="none",
                labels=labels,
                container_limits={"memory": parse_bytes(self.mem_limit)},
            )
            for chunk in stream:
                if "stream" in chunk:
                    line = chunk["stream"].rstrip("\n")
                    if line:
                        log.append(line)
                        if on_log:
                            on_log(line)
                elif "error" in chunk:
                    error = chunk["error"].strip()
        except docker.errors.APIError as exc:  # e.g. no Dockerfile, a Dockerfile that does not parse
            return detail(exc)
        except OSError as exc:
            if not is_host_file_error(exc):
                raise
            return f"cannot read the build context: {exc}"
        except KeyboardInterrupt:
            if stream is not None:
                stream.close()
            raise
        return error

    @engine_call("cannot import {tarball} as {ref}")
    def import_rootfs(self, tarball: Path, ref: str, changes: list[str]) -> str:
        """``docker import`` a root filesystem tarball as ``ref``; returns the image id."""
        repository, tag = parse_repository_tag(ref)
        with open(tarball, "rb") as handle:
            answer = self._api.import_image_from_data(
                handle, repository=repository, tag=tag or "latest", changes=[f"LABEL {LABEL}=1", *changes]
            )
        error = _stream_error(answer)
        if error:
            raise EngineError(f"docker import of {tarball} as {ref} failed: {error}")
        return self.image_id(ref)

    # ---- save and load ---------------------------------------------------------------

    def save_images(self, refs: list[str], path: Path) -> int:
        """``docker save`` several images into one tar (shared layers stored once); bytes written.

        Only the engine's side is translated: a failure to write ``path`` is the OSError it is.
        """
        what = f"cannot save images to {path}"
        with engine_errors(what):
            response = self._api._get(self._api._url("/images/get"), params={"names": refs}, stream=True)
            self._api._raise_for_status(response)
        written = 0
        try:
            with open(path, "wb") as handle:
                for chunk in translated(response.iter_content(chunk_size=1 << 20), what):
                    handle.write(chunk)
                    written += len(chunk)
        finally:
            response.close()
        return written

    @engine_call("cannot load images from {path}")
    def load_images(self, path: Path) -> list[str]:
        """``docker load`` a tar made by save_images; returns the loaded image names."""
        with open(path, "rb") as handle:
            loaded = []
            for chunk in self._api.load_image(handle):
                text = chunk.get("stream", "") if isinstance(chunk, dict) else ""
                if "Loaded image" in text:
                    loaded.append(text.split(":", 1)[1].strip())
                if isinstance(chunk, dict) and chunk.get("error"):
                    raise EngineError(f"docker load failed: {chunk['error']}")
        return loaded

    # ---- remove ----------------------------------------------------------------------

    @engine_call("cannot remove image {ref}")
    def remove_image(self, ref: str) -> None:
        """Remove an image tag (forced: this process's own stopped containers do not keep
        it); one that is not there is fine. Only for the scratch images this process named
        (``cligym.runtime.names``): a cache image (base, gold) another run may use any time."""
        try:
            self._api.remove_image(ref, force=True, noprune=False)
        except docker.errors.NotFound:
            pass
        except docker.errors.APIError:
            # the engine removes the tag, then its parents no one else uses; another process
            # removing one of those parents at that moment fails the call ("unrecognized
            # image ID") after the tag is gone: what was asked is done
            if self.image_exists(ref):
                raise

    @engine_call("cannot remove images")
    def remove_images(self, image_ids: set[str]) -> int:
        """Remove images by id, children before parents (newest first), without force:
        images already gone, or still used by a container or a child image (another
        process's, maybe), are skipped. Only for images no other process can hold: ones
        this process made, or a dead run's scratch images. Returns how many it removed."""
        created: dict[str, str] = {}
        for image_id in image_ids:
            try:
                created[image_id] = self._api.inspect_image(image_id).get("Created", "")
            except docker.errors.NotFound:
                pass
        removed = 0
        for image_id in sorted(created, key=created.__getitem__, reverse=True):
            try:
                self._api.remove_image(image_id, force=False)
                removed += 1
            except docker.errors.APIError:
                pass
        return removed


def _stream_error(answer: str | bytes | None) -> str | None:
    """The error in an engine answer made of JSON lines (``{"error": ...}``), if any."""
    text = answer.decode("utf-8", errors="replace") if isinstance(answer, bytes) else answer or ""
    for line in text.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if isinstance(message, dict) and message.get("error"):
            return str(message["error"]).strip()
    return None
