"""The verifier's own code in a container: the host's static busybox and ``fingerprint.sh``
put into a container (of gold, or of a state under measure), so that what cligym reads
there is read the way a task's verifier reads it, by the same shell functions, with nothing
of the image's shell or tools."""

from __future__ import annotations

from cligym.errors import CligymError
from cligym.harness.bundle import busybox_bytes, script
from cligym.runtime import RunResult, Session

# in-container scratch places (never in a task image)
BB, FUNCS, OUT = "/tmp/busybox", "/tmp/cligym-fingerprint.sh", "/tmp/cligym-out.txt"

#: The dynamic loader of each architecture a gold may have, where the system puts it.
LOADERS = ("/lib64/ld-linux-x86-64.so.2", "/lib/ld-linux-aarch64.so.1")


def busybox_sh(session: Session, command: str, *args: str, timeout: float = 300) -> RunResult:
    """``command`` (with ``args`` as $1...) run by the busybox ``put_functions`` put there."""
    return session.exec([BB, "sh", "-c", command, "cligym", *args], timeout=timeout)


def put_functions(session: Session) -> None:
    """The host's static busybox and fingerprint.sh, the verifier's own code, into the container."""
    session.put_files({BB: (busybox_bytes(), 0o755), FUNCS: script("fingerprint.sh")})


def lines_of(session: Session, failure: str, command: str, *args: str, empty: bool = False) -> list[str]:
    """The lines ``command`` (fingerprint.sh's functions loaded) prints (none only when
    ``empty`` allows it), or CligymError starting with ``failure``: written to a file and
    printed by the same busybox in the same engine call (``Session.exec_then_read``)."""
    run, data = session.exec_then_read([BB, "sh", "-c", f". {FUNCS}; {command} > {OUT}", "cligym", *args], OUT,
                                       timeout=900, shell=(BB, "sh"), cat=(BB, "cat"))
    lines = (data or b"").decode("utf-8", "replace").splitlines()
    if not run.ok or not (lines or empty):
        raise CligymError(f"{failure}: {run.output.strip()[-200:]}")
    return lines
