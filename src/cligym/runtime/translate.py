"""Engine failures as cligym errors, in one place.

The Docker SDK fails in several unrelated ways: its own ``docker.errors`` types, the
``requests`` and ``urllib3`` exceptions of the HTTP layer under it, and plain socket
``OSError``. Every public method of the runtime runs under ``engine_call`` (or the
``engine_errors`` block), which turns them into:

- ``EngineUnavailable``: the engine cannot be reached, or the connection to it broke;
- ``EngineError``: the engine refused or failed a request, or gave no answer in time;
- ``BuildFailed``: the SDK's own build error (the runtime's ``build`` raises its own).

``CligymError`` passes through untouched, and so does an ``OSError`` that names a file
(a host file the caller gave, not the engine's socket).
"""

from __future__ import annotations

import functools
import http.client
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import docker.errors
import requests.exceptions
import urllib3.exceptions

from cligym.errors import BuildFailed, CligymError, EngineError, EngineUnavailable

ENGINE_HINT = (
    "start it with 'bash scripts/setup.sh' from the cligym checkout "
    "(or: dockerd --bridge=none --iptables=false --ip-masq=false &)"
)

#: Everything an engine call can raise that is the engine's (or its transport's) doing.
ENGINE_EXCEPTIONS = (
    docker.errors.DockerException,
    requests.exceptions.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)

#: A broken or refused connection (a socket error that is not a timeout counts too).
_UNREACHABLE = (
    requests.exceptions.ConnectionError,
    requests.exceptions.ChunkedEncodingError,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.NewConnectionError,
    http.client.HTTPException,
    ConnectionError,
)
_TIMEOUTS = (urllib3.exceptions.ReadTimeoutError, requests.exceptions.ReadTimeout, TimeoutError)
_CONNECT_TIMEOUTS = (urllib3.exceptions.ConnectTimeoutError, requests.exceptions.ConnectTimeout)

#: The engine's own storage paths say nothing to the user (``.../overlay2/<id>/merged/etc``).
_STORAGE_PATH = re.compile(r"\S*/overlay2/[0-9a-f]{64}/merged")
MAX_DETAIL = 300

T = TypeVar("T")


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it wraps (causes, contexts, exception arguments)."""
    seen: set[int] = set()
    todo = [exc]
    while todo and len(seen) < 20:
        item = todo.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        yield item
        todo += [e for e in (item.__cause__, item.__context__) if e is not None]
        todo += [a for a in getattr(item, "args", ()) if isinstance(a, BaseException)]
        reason = getattr(item, "reason", None)  # urllib3's MaxRetryError keeps its cause here
        if isinstance(reason, BaseException):
            todo.append(reason)


def is_timeout(exc: BaseException) -> bool:
    """The engine took longer than the client waits (a read timeout, not a refused connect).

    On a unix socket the SDK reports a read timeout as a ``ConnectionError``, hence the walk.
    """
    chain = list(_chain(exc))
    if any(isinstance(e, _CONNECT_TIMEOUTS) for e in chain):
        return False
    return any(isinstance(e, _TIMEOUTS) for e in chain)


def _plain_os_error(exc: BaseException) -> bool:
    """An OSError of a socket or file, not one of the HTTP layer (those subclass OSError too)."""
    return isinstance(exc, OSError) and not isinstance(exc, requests.exceptions.RequestException)


def is_host_file_error(exc: BaseException) -> bool:
    """An OSError about a named host file (a build context, a tarball), not the engine socket."""
    return _plain_os_error(exc) and getattr(exc, "filename", None) is not None


def is_missing_container(exc: BaseException) -> bool:
    """A 404 about the container itself (removed), not about a path inside it."""
    return isinstance(exc, docker.errors.NotFound) and "no such container" in str(exc).lower()


def detail(exc: BaseException) -> str:
    """One short line saying what the engine (or the connection) reported."""
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    text = " ".join(_STORAGE_PATH.sub("", str(text)).split())
    return text if len(text) <= MAX_DETAIL else text[: MAX_DETAIL - 3] + "..."


def translate(exc: BaseException, what: str) -> CligymError:
    """The cligym error for engine failure ``exc`` during ``what`` (e.g. "cannot pull x")."""
    if isinstance(exc, docker.errors.BuildError):
        log = "\n".join(str(c.get("stream", "")).rstrip() for c in exc.build_log or [] if isinstance(c, dict))
        return BuildFailed(f"{what}: {detail(exc)}", log=log)
    if isinstance(exc, docker.errors.APIError):
        return EngineError(f"{what}: {detail(exc)}")
    if is_timeout(exc):
        return EngineError(f"{what}: the Docker engine gave no answer in time ({detail(exc)})")
    if _plain_os_error(exc) or any(isinstance(e, _UNREACHABLE) for e in _chain(exc)):
        return EngineUnavailable(f"{what}: the Docker engine is not reachable ({detail(exc)}); {ENGINE_HINT}")
    return EngineError(f"{what}: {detail(exc)}")


@contextmanager
def engine_errors(what: str) -> Iterator[None]:
    """Run the block with engine failures raised as cligym errors (see ``translate``)."""
    try:
        yield
    except ENGINE_EXCEPTIONS as exc:
        if is_host_file_error(exc):
            raise
        raise translate(exc, what) from exc


def translated(chunks: Iterable[T], what: str) -> Iterator[T]:
    """``chunks`` (an engine stream) with the failures of reading it translated; what the
    consumer does with each chunk (say, writes it to a full disk) is left alone."""
    with engine_errors(what):
        yield from chunks


def engine_call(what: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorate a runtime method so engine failures surface as cligym errors.

    ``what`` is formatted with the method's arguments, e.g. ``"cannot inspect image {ref}"``
    or ``"cannot exec in container {self.id:.12}"``.
    """

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            try:
                return func(*args, **kwargs)
            except ENGINE_EXCEPTIONS as exc:
                if is_host_file_error(exc):
                    raise
                raise translate(exc, _describe(what, signature, args, kwargs)) from exc

        return wrapper

    return decorate


def _describe(what: str, signature: inspect.Signature, args: tuple, kwargs: dict) -> str:
    try:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return what.format(**bound.arguments)
    except Exception:  # noqa: BLE001 - a message must never hide the failure it describes
        return what
