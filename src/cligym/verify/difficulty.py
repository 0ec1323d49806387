"""How hard a verified broken state is, measured without an LLM (validity rule 10).

Every measure runs in containers of the broken image, with the task's own F2P tests:

- ``k``: the changes that are each necessary (leave-one-repair-out, ``cligym.invert.minimal``)
  plus the blockers that passed the blocker check;
- reveal depth: a reader that repairs exactly the changes whose injected paths the failing
  output names, reruns the tests, and goes on while something is named. The number of
  rounds to green; ``changes + 1`` when the output stops naming what is left (such a
  state cannot be solved by following the traceback);
- culprit named: the first failing output, or the image's environment (ΔD's ``ENV``
  lines), names an injected path verbatim;
- the sweeper (``harness/scripts/sweeper.sh``): a fixed, task-blind battery of generic
  repairs, then the F2P tests. It solves a state when what the reward needs holds after
  it: every F2P test passes, and pip's configuration is gold's (the verifier's
  ``m_pipconf``; a reinstall that ignored a blocker left in it has not repaired the
  machine). A state whose pip configuration holds a line gold's lacks that no sweep
  removes is known unsolved without a sweep (``sweep_keeps``). A Debian-world task's
  sweeper is ``debian-sweeper.sh``, and what must be gold's after it is the system state
  its verifier compares. A state it solves teaches little;
- breadth: distinct paths the oracle repair touches, and distinct subsystems (categories).

``Difficulty.grade`` turns them into the easy / medium / hard label.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from cligym.errors import CligymError
from cligym.harness.busybox import busybox_sh
from cligym.harness.debian_reference import gather_debian, same_system
from cligym.harness.images import run_script, side_by_side
from cligym.harness.bundle import script
from cligym.harness.reference import gold_pip_config, pip_config
from cligym.harness.repair import repair_script
from cligym.harness.testrun import hang_timeout, run_tests_in_session
from cligym.models.gold import GoldEnv
from cligym.models.reference import SystemState
from cligym.models.task import AppliedChange, Difficulty, RepairStep
from cligym.models.testrun import TestRun
from cligym.models.timing import PhaseSeconds
from cligym.runtime import Runtime, Session

def output_text(run: TestRun) -> str:
    """What a reader of a test run sees: every test's message and the output's tail."""
    return "\n".join([*(r.message for r in run.results.values()), run.output_tail])


def named(places: Sequence[str], text: str) -> bool:
    return any(place and place in text for place in places)


def env_text(dockerfile: Sequence[str]) -> str:
    """The environment ΔD sets (what ``env`` shows in the broken image beyond gold's)."""
    return "\n".join(line for line in dockerfile if line.lstrip().upper().startswith("ENV "))


def reveal_depth(runtime: Runtime, gold: GoldEnv, image: str, changes: Sequence[AppliedChange],
                 steps: Sequence[RepairStep], f2p: list[str], first: str) -> int:
    """Rounds of "repair what the output names, rerun" until the F2P tests pass."""
    left = list(range(len(changes)))
    chosen = [i for i in left if named(changes[i].places, first)]
    if not chosen:
        return len(changes) + 1  # nothing named: no container needed to know
    with runtime.session(image) as session:
        for round_ in range(1, len(changes) + 1):
            if not chosen:
                break
            left = [i for i in left if i not in chosen]
            run_script(session, repair_script([steps[i] for i in chosen]))
            run = run_tests_in_session(session, gold.workdir, gold.test_command, f2p,
                                       timeout=hang_timeout(gold.test_seconds))
            if run.report_found and set(f2p) <= run.passed():
                return round_
            text = output_text(run)
            chosen = [i for i in left if named(changes[i].places, text)]
    return len(changes) + 1


#: Whether a Python state keeps, whatever the repair does, something of pip's configuration
#: that the reward refuses (given the container, gold's prefix and gold's configuration).
Kept = Callable[[Session, str, tuple[str, ...]], bool]


def repair_solves(runtime: Runtime, gold: GoldEnv, image: str, f2p: list[str], solution: str,
                  state: SystemState | None = None, before: Callable[[Session], None] | None = None,
                  kept: Kept | None = None) -> bool:
    """Does ``solution`` (a repair script) leave the state in ``image`` as the reward needs
    it: every F2P test passing and, for a Python gold, pip's configuration gold's (read once
    per gold image), for a Debian-world task (``state``) the system gold's as its verifier
    compares it. The state is read first, as the verifier does: the tests run only when it
    is gold's. ``before``: done in a Python task's container before ``solution``; ``kept``:
    asked first, when true the answer is known (no) and nothing runs."""
    if state is not None:
        reference, _ = gather_debian(runtime, gold.image, instance_id="", workdir=gold.workdir,
                                     test_command=gold.test_command, f2p=f2p, p2p=[], order=f2p, state=state)
        with runtime.session(image) as session:
            run_script(session, solution)
            if not same_system(session, reference):
                return False
            run = run_tests_in_session(session, gold.workdir, gold.test_command, f2p,
                                       timeout=hang_timeout(gold.test_seconds))
            return run.report_found and set(f2p) <= run.passed()
    prefix, want = gold_pip_config(runtime, gold.image, gold.python)
    with runtime.session(image) as session:
        if kept is not None and kept(session, prefix, want):
            return False
        if before is not None:
            before(session)
        run_script(session, solution)
        if tuple(pip_config(session, prefix)) != want:
            return False  # known before the tests: nothing of them changes pip's configuration
        run = run_tests_in_session(session, gold.workdir, gold.test_command, f2p,
                                   timeout=hang_timeout(gold.test_seconds))
        return run.report_found and set(f2p) <= run.passed()


#: The task-blind battery of each world (``harness/scripts``).
SWEEPERS = {"python": "sweeper.sh", "debian": "debian-sweeper.sh"}


#: Where the Python sweeper runs the bundled pip unpacked (``sweeper.sh``, step 5) and finds
#: what a sweep is given (``_Preparation``), and the last line it prints when its pip was
#: such a copy; the line it prints when it left the certificates as they were (step 6).
SWEEPER_PIP = "/tmp/cligym-sweeper-pip"
PIP_FROM_COPY = "sweeper: pip from the copy"
CERTS_KEPT = "sweeper: 6 the certificates are as a refresh leaves them"


class _Preparation:
    """What a sweep of a gold image's states is given, made in a container of that image
    (``sweeper.sh --prepare``; a tar of ``SWEEPER_PIP``) once for the last gold asked for:

    - the bundled pip, compiled, in one zip: it spares the sweep compiling pip (about a
      second), and copying it in is one file's write, not a thousand's; the sweeper uses it
      only when it was made from a wheel with the sha256 of the image's own;
    - the state of the certificates after a refresh (``certs.sha256``): a sweep finding them
      so, with no hook to run, skips the refresh, which would write the same bytes again
      (about 1.6 s of CPU; a state whose certificates differ is refreshed as before).

    It is never taken back from a broken image."""

    def __init__(self) -> None:
        self.image = ""
        self.tar: bytes | None = None
        self.lock = threading.Lock()

    def of(self, runtime: Runtime, gold: GoldEnv) -> bytes | None:
        with self.lock:
            if self.image == gold.image:
                return self.tar
        tar = None
        with runtime.session(gold.image) as session:
            session.put_files({SWEEPER_PREPARE_SCRIPT: script(SWEEPERS["python"])})
            if session.exec(["sh", SWEEPER_PREPARE_SCRIPT, "--prepare"], timeout=300).ok:
                tar = session.get_archive(SWEEPER_PIP)
        with self.lock:
            self.image, self.tar = gold.image, tar
        return tar


#: Where the sweeper is put to make the preparation (in a gold container).
SWEEPER_PREPARE_SCRIPT = "/tmp/cligym-sweeper.sh"
_PREPARATION = _Preparation()


def sweeper_solves(runtime: Runtime, gold: GoldEnv, image: str, f2p: list[str],
                   state: SystemState | None = None) -> bool:
    """Does the world's task-blind battery solve the state (``repair_solves``)? The Python
    sweep is given gold's preparation where there is one (``_Preparation``)."""
    if state is not None:
        return repair_solves(runtime, gold, image, f2p, script(SWEEPERS["debian"]), state)

    def offer(session: Session) -> None:  # (a folder the image has is not used; the sweeper removes ours)
        prepared = _PREPARATION.of(runtime, gold)  # (only for a sweep that runs)
        session.exec(["rm", "-rf", SWEEPER_PIP], timeout=60)
        if prepared is not None:
            session.put_archive(prepared, SWEEPER_PIP.rsplit("/", 1)[0])

    return repair_solves(runtime, gold, image, f2p, script(SWEEPERS["python"]), before=offer, kept=sweep_keeps)


#: pip's machine-wide configuration files (``m_pipconf``'s global ones, XDG_CONFIG_DIRS
#: unset): the sweeper ignores them and writes nothing there.
MACHINE_PIP_CONFIGS = ("/etc/pip.conf", "/etc/xdg/pip/pip.conf")


def sweep_keeps(session: Session, prefix: str, want: tuple[str, ...]) -> bool:
    """Whether pip's configuration in the state holds a line gold's lacks that the sweep
    leaves whatever it does, so that it cannot solve the state: a PIP_ variable of the
    container's environment (the sweep changes its own environment only), or a setting in a
    machine-wide file (``MACHINE_PIP_CONFIGS``) that only a write to its own path can change
    (``untouched-file.sh``: one name, no link on its way, in no install record that pip's
    uninstall would follow). A configuration that cannot be read here says nothing (the
    sweep then runs)."""
    try:
        extra = set(pip_config(session, prefix)) - set(want)
    except CligymError:
        return False
    if any(line.startswith("env PIP_") for line in extra):
        return True
    files = sorted({f for line in extra for f in MACHINE_PIP_CONFIGS if line.startswith(f"{f} [")})
    return bool(files) and busybox_sh(session, script("untouched-file.sh"), *files).ok


def measure(runtime: Runtime, gold: GoldEnv, image: str, changes: Sequence[AppliedChange],
            steps: Sequence[RepairStep], f2p: list[str], first: TestRun, dockerfile: Sequence[str],
            seconds: PhaseSeconds, state: SystemState | None = None) -> Difficulty:
    """The difficulty of the state in ``image``: ``changes[i]`` is undone by ``steps[i]``
    (both in repair order); ``first`` is the run that recorded the F2P failures."""
    started = time.monotonic()
    text = output_text(first)
    k = sum(1 for c in changes if c.necessary is not False or c.blocks)
    solves, depth = side_by_side(runtime, lambda: sweeper_solves(runtime, gold, image, f2p, state),
                                 lambda: reveal_depth(runtime, gold, image, changes, steps, f2p, text))
    culprit = any(named(c.places, text + "\n" + env_text(dockerfile)) for c in changes)
    places = {p for c in changes for p in c.places}
    breadth = max(len(places), len(changes))
    subsystems = len({c.category for c in changes})
    seconds.add("difficulty", time.monotonic() - started)
    return Difficulty(k=k, reveal_depth=depth, culprit_named=culprit, sweeper_solves=solves, breadth=breadth,
                      subsystems=subsystems,
                      label=Difficulty.grade(k, depth, culprit, solves, breadth, subsystems))
