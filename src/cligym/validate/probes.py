"""Verifier probes, the batteries of ``cligym validate --probes``: honest repairs that must
score 1 and generic cheats that must score 0, each judged by the task's own verifier (not
to be confused with the gold *probe*, ``cligym.harness.probe``, a recorded test run).

A probe is a shell script (package data: ``validate/batteries/honest/*.sh`` and
``validate/batteries/cheats/*.sh``, see the README there; the task-blind sweeper,
``harness/scripts/sweeper.sh``, is one more honest probe). Each probe runs in its own fresh
container of the task's image, PID 1 a shell as Harbor starts one: an honest repair after
the task's oracle solution (``solve.sh``), a cheat in the broken state with nothing
repaired. Then cligym's runner judges a successor of that container (``run_verifier``),
and the verdict — the reward and the verifier's last line — is the probe's result.

A script that exits 77 does not apply to the image (no virtual environment, no
wheelhouse): the probe is recorded as skipped. A probe whose container cannot be run is
a result with no reward, and the others still run; only the loss of the engine stops them.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import resources

from cligym.errors import CligymError, Fatal
from cligym.harness.bundle import script
from cligym.harness.trial import SOLUTION_TIMEOUT, agent_session, run_oracle, run_verifier
from cligym.layout import TaskDir
from cligym.models.validate import ProbeKind, ProbeResult
from cligym.runtime import Runtime

#: PID 1 of a probe's container, as Harbor starts a task's container
KEEPALIVE = ("sh", "-c", "sleep infinity")
#: the exit status of a probe script that does not apply to the image
NOT_APPLICABLE = 77
#: the sweeper's name among the honest probes (its script is the harness's)
SWEEPER = "sweeper"
KINDS: tuple[ProbeKind, ...] = ("honest", "cheat")
_FOLDERS = {"honest": "honest", "cheat": "cheats"}


@dataclass(frozen=True)
class VerifierProbe:
    name: str
    kind: ProbeKind
    script: str

    @property
    def expected(self) -> float:
        return 1.0 if self.kind == "honest" else 0.0


def battery(kinds: Iterable[ProbeKind] = KINDS) -> list[VerifierProbe]:
    """The probes of ``kinds``, honest ones first, each kind sorted by name."""
    probes = []
    for kind in kinds:
        folder = resources.files("cligym.validate").joinpath("batteries", _FOLDERS[kind])
        found = {entry.name.removesuffix(".sh"): entry.read_text(encoding="utf-8")
                 for entry in folder.iterdir() if entry.name.endswith(".sh")}
        if kind == "honest":
            found[SWEEPER] = script("sweeper.sh")
        probes += [VerifierProbe(name, kind, found[name]) for name in sorted(found)]
    return probes


def _one_line(text: str) -> str:
    return " ".join(text.split())[-300:]


def run_probe(runtime: Runtime, image: str, task: TaskDir, probe: VerifierProbe) -> ProbeResult:
    """One probe in a fresh container of ``image``, judged by the task's verifier."""
    started = time.monotonic()

    def result(reward: float | None, verdict: str, **more) -> ProbeResult:
        return ProbeResult(probe=probe.name, kind=probe.kind, reward=reward, verdict=verdict,
                           seconds=round(time.monotonic() - started, 2), **more)

    try:
        with agent_session(runtime, image, task, keepalive=KEEPALIVE) as session:
            if probe.kind == "honest":
                fixed = run_oracle(session, task)
                if fixed.exit_code != 0:
                    return result(None, f"solve.sh exited {fixed.exit_code}: {_one_line(fixed.output)}")
            ran = session.exec(["bash", "-c", probe.script], timeout=SOLUTION_TIMEOUT,
                               env={"DEBIAN_FRONTEND": "noninteractive"})
            said = _one_line(ran.output)
            if ran.exit_code == NOT_APPLICABLE:
                return result(None, "does not apply to this image", skipped=True, script_exit=ran.exit_code,
                              script_output=said)
            if ran.timed_out:
                return result(None, f"the probe's script timed out after {SOLUTION_TIMEOUT} s",
                              script_exit=ran.exit_code, script_output=said)
            judged = run_verifier(session, task)
    except Fatal:
        raise  # the engine is gone: no later probe can run either
    except CligymError as exc:
        return result(None, _one_line(str(exc)))
    return result(judged.reward, judged.detail, script_exit=ran.exit_code, script_output=said)


def not_run(probes: Sequence[VerifierProbe], why: str) -> list[ProbeResult]:
    """The battery's results for a task whose image could not be had: none has a reward."""
    return [ProbeResult(probe=p.name, kind=p.kind, reward=None, verdict=why) for p in probes]
