"""Push images to an OCI registry and pull them back by digest.

A push tags the image ``REGISTRY/<repository>:<tag>`` for as long as the push takes, sends
it (layers the registry has are skipped, so a push that failed halfway goes on where it
stopped when tried again), then asks the registry which digest it now serves for that tag:
a registry that stores other bytes than were sent is an error, not a record. A pull asks
the same before it pulls, pulls by digest (the engine refuses other bytes), checks the
image id and tags the image with its local name, so tasks that build ``FROM`` it work as
with a locally built gold image.

Transient failures (a refused or reset connection, a 5xx answer) are retried with
exponential back-off; what is left is a ``RegistryError`` with the registry's own words.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import docker
import docker.errors
import requests
import tenacity
from docker.utils import parse_repository_tag

from cligym.errors import CligymError
from cligym.models.registry import RegistryImage, is_digest
from cligym.runtime.translate import detail, engine_errors

#: Attempts of one push or pull, and the longest wait between two (seconds).
ATTEMPTS = 4
MAX_WAIT = 8.0
_TRANSIENT = re.compile(r"connection refused|connection reset|broken pipe|EOF|i/o timeout|timeout|"
                        r"unexpected HTTP status: 5\d\d|50[0-9] |too many requests|toomanyrequests", re.IGNORECASE)
_REFUSED = re.compile(r"HTTP (?P<code>4\d\d)|(?P<word>denied|unauthorized|forbidden)", re.IGNORECASE)
_MANIFEST_TYPES = ", ".join((
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
))

#: ``on_progress(layer, status)``: one call per layer state the engine reports.
Progress = Callable[[str, str], None]


class RegistryError(CligymError):
    """A registry is unreachable, refused a push or pull, or serves other bytes than recorded."""


class _Transient(Exception):
    """A failure worth another attempt (carries the RegistryError to raise after the last)."""

    def __init__(self, error: RegistryError) -> None:
        super().__init__(str(error))
        self.error = error


def _stream(chunks: Iterable[dict], what: str, on_progress: Progress | None) -> dict:
    """The ``aux`` of an engine push/pull stream; its error as a RegistryError (or _Transient)."""
    aux: dict = {}
    for chunk in chunks:
        if not isinstance(chunk, dict):
            continue
        if chunk.get("error"):
            message = " ".join(str(chunk["error"]).split())
            refused = _REFUSED.search(message)
            if refused:  # the engine's wording hides the answer: say it plainly, keep its words
                why = f"HTTP {refused['code']}" if refused["code"] else refused["word"].lower()
                message = f"the registry refused it ({why}): {message}"
            error = RegistryError(f"{what}: {message}")
            raise _Transient(error) if _TRANSIENT.search(message) else error
        if chunk.get("aux"):
            aux = chunk["aux"]
        if on_progress and chunk.get("id") and chunk.get("status"):
            on_progress(str(chunk["id"]), str(chunk["status"]))
    return aux


def _retrying(call: Callable[[], object]) -> object:
    """``call`` until it succeeds, raises a final error, or the last attempt fails."""
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(_Transient), stop=tenacity.stop_after_attempt(ATTEMPTS),
        wait=tenacity.wait_exponential_jitter(initial=1, max=MAX_WAIT), reraise=True)
    try:
        return retrying(call)
    except _Transient as exc:
        raise exc.error from None


def _loopback(registry: str) -> bool:
    host = registry.split("/", 1)[0].rsplit(":", 1)[0] if not registry.startswith("[") else registry
    return host in ("localhost", "[::1]") or host.startswith("127.")


class Registries:
    """The registry half of ``Runtime`` (which provides the engine client)."""

    _api: docker.APIClient

    def push_image(self, image: str, registry: str, on_progress: Progress | None = None) -> RegistryImage:
        """Push local ``image`` to ``registry``; the record of what the registry now serves."""
        with engine_errors(f"cannot read image {image}"):
            image_id = self._api.inspect_image(image)["Id"]
        local, tag = parse_repository_tag(image)
        repository = f"{registry}/{local}"
        what = f"cannot push {image} to {registry}"

        def push() -> dict:
            with engine_errors(what):
                self._api.tag(image, repository, tag or "latest")
                try:
                    return _stream(self._api.push(repository, tag or "latest", stream=True, decode=True), what,
                                   on_progress)
                finally:
                    self._untag(f"{repository}:{tag or 'latest'}")

        aux = _retrying(push)
        digest = str(aux.get("Digest", ""))
        if not is_digest(digest):
            raise RegistryError(f"{what}: the engine reported no digest for the push")
        self._untag(f"{repository}@{digest}")  # the engine's note of the push: no name of ours stays
        served = self.served_digest(f"{repository}:{tag or 'latest'}")
        if served != digest:
            raise RegistryError(f"{registry} serves {served} for {repository}:{tag}, not the {digest} just pushed")
        return RegistryImage(image=image, image_id=image_id, registry=registry, repository=repository,
                             tag=tag or "latest", digest=digest, bytes=self._stored_bytes(registry, repository, digest))

    def served_digest(self, reference: str) -> str:
        """The digest ``reference`` (``repository:tag``) resolves to in its registry now."""
        what = f"cannot ask the registry for {reference}"

        def ask() -> str:
            try:
                answer = self._api.inspect_distribution(reference)
            except docker.errors.APIError as exc:
                message = detail(exc)
                error = RegistryError(f"{what}: {message}")
                raise _Transient(error) if _TRANSIENT.search(message) else error from None
            return str(answer.get("Descriptor", {}).get("digest", ""))

        with engine_errors(what):
            return _retrying(ask)

    def pull_image(self, record: RegistryImage, on_progress: Progress | None = None) -> bool:
        """Make ``record.image`` present from its registry, pinned by digest; False when the
        engine already had it. Refuses a registry that now serves another digest for the tag."""
        if self._has(record.image, record.image_id):
            return False
        served = self.served_digest(record.reference)
        if served != record.digest:
            raise RegistryError(f"{record.registry} serves {served or 'nothing'} for {record.reference}; "
                                f"the record says {record.digest}: refusing to pull")
        what = f"cannot pull {record.pinned}"

        def pull() -> None:
            with engine_errors(what):
                _stream(self._api.pull(record.pinned, stream=True, decode=True), what, on_progress)

        _retrying(pull)
        with engine_errors(what):
            pulled = self._api.inspect_image(record.pinned)["Id"]
            if pulled != record.image_id:
                self._untag(record.pinned)
                raise RegistryError(f"{record.pinned} is image {pulled[:19]}, the record says {record.image_id[:19]}")
            local, tag = parse_repository_tag(record.image)
            self._api.tag(pulled, local, tag)
        return True

    def _has(self, image: str, image_id: str) -> bool:
        try:
            return self._api.inspect_image(image)["Id"] == image_id
        except docker.errors.NotFound:
            return False

    def _untag(self, reference: str) -> None:
        """Remove a name this process added (the image stays: it has its own)."""
        try:
            self._api.remove_image(reference, noprune=True)
        except docker.errors.APIError:
            pass  # already gone, or another process's push still uses the name

    @staticmethod
    def _stored_bytes(registry: str, repository: str, digest: str) -> int:
        """The bytes of the layers and config the manifest lists (0 when the registry does
        not answer the distribution API directly, e.g. behind a token service)."""
        scheme = "http" if _loopback(registry) else "https"
        host, _, _ = registry.partition("/")
        name = repository[len(host) + 1:]
        try:
            answer = requests.get(f"{scheme}://{host}/v2/{name}/manifests/{digest}", timeout=10,
                                  headers={"Accept": _MANIFEST_TYPES})
            manifest = answer.json() if answer.ok else {}
        except (requests.RequestException, ValueError):
            return 0
        parts = [*manifest.get("layers", []), manifest.get("config") or {}]
        return sum(int(p.get("size", 0)) for p in parts)
