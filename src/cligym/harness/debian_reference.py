"""The gold reference of a Debian-world task: what its verifier (``scripts/debian-verifier.sh``)
trusts, read from a container of the gold image with the verifier's own busybox and
``fingerprint.sh``.

The tests of a Debian gold are the source package's autopkgtest tests, run by cligym's
runner in the source tree; what they exercise is the installed system. So the verifier

- restores gold's source tree and runner (``pristine.tar`` of both: a test script or a
  converter the agent edited is gold's again before anything runs);
- compares the system's state with gold's (``SystemState``: every file the tests opened,
  ran, mapped or looked up, every search miss, /usr/local, alternatives, diversions, the
  loader's and apt's configuration, dpkg's journal), then how the loader resolves the
  mapped objects and programs;
- runs the listed tests with gold's runner and judges its JUnit report by keys: in it the
  autopkgtest test is the ``classname`` and the inner id the ``name`` (the test's own name
  for its one-result form), XML-escaped as the runner's converters write them.
"""

from __future__ import annotations

import functools
import shlex

from cligym.errors import CligymError
from cligym.harness.busybox import LOADERS, busybox_sh, lines_of, put_functions
from cligym.models.reference import GoldReference, JunitKey, SystemState
from cligym.runtime import Runtime, Session

#: Where the gold image keeps cligym's runner (its script, converters, tests list, busybox).
RUNNER_DIR = "/opt/cligym/debian"
#: The largest source tree and runner a task's tests/ carries as gold's copy.
MAX_PRISTINE_BYTES = 64 * 1024 * 1024
#: The programs PID 1 may run: shells, sleep and the usual inits (by their bytes).
KEEPALIVE = ("sh", "dash", "bash", "sleep", "busybox", "tini", "docker-init", "dumb-init", "catatonit")
_TAR, _SPEC = "/tmp/cligym-pristine.tar", "/tmp/cligym-spec.txt"


def xml_attribute(text: str) -> str:
    """``text`` escaped as the converters' ``xml()`` writes an attribute."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def junit_key(test_id: str) -> JunitKey:
    """How the runner's report names ``test_id`` (``<autopkgtest>::<inner>``, or the
    autopkgtest test alone)."""
    test, _, inner = test_id.partition("::")
    return JunitKey(node=test_id, classname=xml_attribute(test), name=xml_attribute(inner or test))


def _keepalive(session: Session) -> list[str]:
    names = " ".join(KEEPALIVE)
    run = busybox_sh(session, f'for n in {names}; do p=$(which "$n") || continue; '
                              'sha256sum "$(realpath "$p")" | cut -c1-64; done')
    return sorted({line for line in run.output.split() if len(line) == 64})


def _loader(session: Session) -> str:
    run = busybox_sh(session, 'for l in "$@"; do [ -x "$l" ] && echo "$l" && break; done', *LOADERS)
    return run.output.strip().splitlines()[-1] if run.output.strip() else ""


def full_spec(state: SystemState) -> list[str]:
    """The task's spec: the state's, and the program loaders (every program runs through one)."""
    return sorted({*state.spec, *(f"F {loader}" for loader in LOADERS)})


def system_listing(session: Session, spec: list[str], objects: list[str]) -> tuple[list[str], list[str], list[str]]:
    """(the listing of ``spec`` in ``session``'s container, sorted as the verifier sorts it;
    the objects whose resolution is compared, the loader first; how the loader resolves
    them): what the verifier compares, read by its own code."""
    put_functions(session)
    session.put_files({_SPEC: "".join(f"{line}\n" for line in spec)})
    listing = sorted(set(lines_of(session, "could not list the system's state", f"m_listing {_SPEC}")))
    loader = _loader(session)
    present = [o for o in objects if o.startswith("/")]
    if not loader or not present:
        return listing, [], []
    resolved = lines_of(session, "could not read how the loader resolves the tests' objects",
                        "m_resolved " + " ".join(shlex.quote(p) for p in [loader, *present]), empty=True)
    return listing, ([loader, *present] if resolved else []), resolved


@functools.lru_cache(maxsize=8)
def _read_gold(runtime: Runtime, image: str, workdir: str, spec: tuple[str, ...],
               objects: tuple[str, ...]) -> tuple[list[str], list[str], list[str], bytes, list[str]]:
    """(``system_listing``'s three answers, the pristine tar, the keep-alive programs'
    hashes) of a gold image (whose tag names its content)."""
    with runtime.session(image) as session:
        listing, elf, resolved = system_listing(session, list(spec), list(objects))
        roots = [workdir.lstrip("/"), RUNNER_DIR.lstrip("/")]
        packed = busybox_sh(session, f'tar -cf {_TAR} -C / "$@"', *roots, timeout=600)
        size = busybox_sh(session, f"wc -c < {_TAR}")
        if not packed.ok or int(size.output.strip() or 0) > MAX_PRISTINE_BYTES:
            raise CligymError(f"could not copy gold's source tree and runner (at most {MAX_PRISTINE_BYTES} bytes): "
                              f"{packed.output.strip()[-200:]}")
        tar = session.get_file(_TAR)
        keepalive = _keepalive(session)
    if tar is None:
        raise CligymError("gold's source tree vanished from the container")
    return listing, elf, resolved, tar, keepalive


def gather_debian(runtime: Runtime, image: str, *, instance_id: str, workdir: str, test_command: str,
                  f2p: list[str], p2p: list[str], order: list[str],
                  state: SystemState) -> tuple[GoldReference, bytes]:
    """The gold reference of a Debian-world task and its pristine tar (the source tree and
    the runner), read once per gold image and state."""
    spec = full_spec(state)
    listing, elf, resolved, tar, keepalive = _read_gold(runtime, image, workdir, tuple(spec), tuple(state.objects))
    reference = GoldReference(
        instance_id=instance_id, workdir=workdir, test_command=test_command, interpreter="",
        command_path=test_command, rootdir=workdir, fail_to_pass=list(f2p), pass_to_pass=list(p2p),
        order=list(order), keys=[junit_key(t) for t in order], pristine=[workdir, RUNNER_DIR], foreign=[],
        conftests=[], shadow_dirs={}, protected_modules=[], spec=spec, fingerprint=listing,
        loader=elf[0] if elf else "", elf=elf[1:], resolved=resolved, keepalive=keepalive, world="debian",
    )
    return reference, tar


def same_system(session: Session, reference: GoldReference) -> bool:
    """Is the system in ``session``'s container gold's as the task's verifier compares it
    (its state's listing, then how the loader resolves the tests' objects)?"""
    listing, _, resolved = system_listing(session, reference.spec, reference.elf)
    return listing == reference.fingerprint and resolved == reference.resolved
