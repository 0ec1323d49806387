"""A fake engine for the unit tier: the attempt pipeline's builds, test runs, minimality
runs, verification and measures answered from a script, with no Docker.

What a ΔD line does is scripted by its text (``Line``): the tests it breaks, whether it
fails the build or hangs every run, whether it blocks the naive repair. A repair step
undoes the lines it names as ``undo <line>``. A line the script does not name does what a
seeded draw says (``drawn``: the chance it breaks each test; 0 makes it harmless), so a
long run of the real degraders on a real probe gives many kinds of outcome, the same ones
on every run. ``install`` puts the fake in place of the harness and verify functions the
pipeline calls (``cligym.invert.pipeline`` and ``cligym.invert.minimal``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from cligym.errors import BuildFailed
from cligym.models.gold import GoldEnv, Source
from cligym.models.task import Difficulty, RepairStep
from cligym.models.testrun import TestResult, TestRun
from cligym.models.verify import Verification


def draw(*parts: object) -> float:
    """A number in [0, 1) decided by ``parts`` alone."""
    digest = hashlib.sha256("\0".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


@dataclass
class Line:
    """What one ΔD line does in the fake."""

    breaks: set[str] = field(default_factory=set)
    build_fails: bool = False
    hangs: bool = False
    blocks: bool = False  # a blocker: the naive repair fails while this line stands
    with_: set[str] = field(default_factory=set)  # it breaks its tests only while these lines stand too


def undo(line: str) -> RepairStep:
    """The repair step that undoes ``line`` in the fake."""
    return RepairStep(label="fake", lines=[f"undo {line}"])


def gold_env(tests: list[str]) -> GoldEnv:
    return GoldEnv(source=Source(kind="pypi", spec="fake==1.0", name="fake", version="1.0"), image="cligym/gold:fake",
                   image_id="sha256:fake", python="/opt/venv/bin/python", python_version="3.11", workdir="/testbed",
                   test_command="python -m pytest", runs=1, tests=tests, test_seconds=[1.0], image_bytes=1000)


class FakeEngine:
    """Scripted answers for the pipeline's engine work, and a log of what was asked (draws
    depend on an image's ΔD, never on its tag, which names the process)."""

    def __init__(self, lines: dict[str, Line] | None = None, *, drawn: float = 0.0,
                 verify: Callable[[str, list[str]], Verification] | None = None, swept: bool | set[str] = False,
                 flaky_on_gold: set[str] | None = None) -> None:
        self.lines = lines or {}
        self.flaky_on_gold = flaky_on_gold or set()  # tests a run of the gold image fails
        #: whether the task-blind sweeper repairs every state, or the ΔD lines of the states it repairs
        self.swept = swept
        self.verified: list[str] = []  # the images the verifier's checks ran on
        self.drawn = drawn
        self.verify = verify  # (tag, F2P) -> the verification (default: ok)
        self.images: dict[str, list[str]] = {}  # tag -> its ΔD
        self.builds: list[list[str]] = []
        self.runs: list[list[str]] = []  # the tests of every run, in order
        self.removed: list[str] = []

    # what a line does
    def line(self, text: str) -> Line:
        if text in self.lines or not self.drawn:
            return self.lines.get(text, Line())
        return Line(build_fails=draw(text, "build") < 0.08, hangs=draw(text, "hang") < 0.03,
                    blocks=draw(text, "blocks") < 0.5)

    def breaks(self, text: str, test: str) -> bool:
        if text in self.lines or not self.drawn:
            return test in self.line(text).breaks
        return draw(text, test) < self.drawn

    # the engine's side
    def remove_image(self, tag: str) -> None:
        self.removed.append(tag)

    def build_broken(self, runtime, gold: GoldEnv, lines: list[str], tag: str) -> str:
        self.builds.append(list(lines))
        if any(self.line(text).build_fails for text in lines):
            raise BuildFailed("the fake build failed", log="fake")
        self.images[tag] = list(lines)
        return tag

    def run_tests(self, runtime, image: str, workdir: str, test_command: str, node_ids=(), *, paths=(),
                  timeout: float = 900) -> TestRun:
        if image not in self.images:  # the gold image
            self.runs.append(list(node_ids))
            return TestRun(exit_code=0, seconds=1.0, report_found=True, results={
                t: TestResult(outcome="failed" if t in self.flaky_on_gold else "passed") for t in node_ids})
        return self._run(self.images[image], list(node_ids))

    def _run(self, standing: list[str], tests: list[str]) -> TestRun:
        self.runs.append(tests)
        if any(self.line(text).hangs for text in standing):
            return TestRun(exit_code=None, timed_out=True, seconds=1.0, report_found=False)
        broken = {t for t in tests for x in standing if self.breaks(x, t) and self.line(x).with_ <= set(standing)}
        results = {t: TestResult(outcome="failed" if t in broken else "passed", message=f"{t} failed") for t in tests}
        return TestRun(exit_code=0, seconds=1.0, report_found=True, results=results)

    def _standing(self, image: str, steps: list[RepairStep]) -> list[str]:
        undone = {line[5:] for step in steps for line in step.lines if line.startswith("undo ")}
        return [text for text in self.images[image] if text not in undone]

    def leave_one_out(self, runtime, gold, image: str, steps, f2p: list[str], order, seconds) -> list[list[str]]:
        steps = list(steps)
        if not any(line.startswith("undo ") for step in steps for line in step.lines):  # drawn
            return [[t for t in f2p if draw(self.images[image], step.lines, t) < 0.5] for step in steps]
        return [self._run(self._standing(image, steps[:i] + steps[i + 1:]), f2p).failing(f2p)
                for i in range(len(steps))]

    def blocks(self, runtime, gold, image: str, blocker: RepairStep, others, naive, f2p, order, seconds) -> bool:
        if not naive:
            return False
        undone = {line[5:] for line in blocker.lines if line.startswith("undo ")}
        if not undone:  # drawn
            return draw(self.images[image], blocker.lines) < 0.5
        return any(self.line(text).blocks for text in undone)

    def check_broken_state(self, runtime, gold, files, tag: str, f2p, p2p, solution, *, order=(),
                           untouchable=None, state=None, fallback=None, store=None) -> Verification:
        self.verified.append(tag)
        if self.verify is not None:
            verification = self.verify(tag, list(f2p))
        elif self.drawn and draw(self.images[tag], "leak") < 0.15:
            verification = Verification(ok=False, kind="leak", reason="a fake leak")
        else:
            verification = Verification(ok=True, changed_paths=["/fake/path"])
        if verification.ok and not verification.solution:
            text = solution if isinstance(solution, str) else solution(None)
            verification = verification.model_copy(update={"solution": text})
        return verification

    def measure(self, runtime, gold, image, changes, steps, f2p, first, dockerfile, seconds,
                state=None) -> Difficulty:
        k = sum(1 for c in changes if c.necessary or c.blocks)
        solves = self.swept if isinstance(self.swept, bool) else any(t in self.swept for t in self.images[image])
        return Difficulty(k=k, reveal_depth=1, culprit_named=False, sweeper_solves=solves, breadth=len(changes),
                          subsystems=1, label=Difficulty.grade(k, 1, False, False, len(changes)))

    def install(self, monkeypatch) -> FakeEngine:
        """Answer the pipeline's engine work from now on (undone with ``monkeypatch``)."""
        from cligym.invert import minimal, parallel, pipeline

        for name in ("build_broken", "run_tests", "check_broken_state", "measure"):
            monkeypatch.setattr(pipeline, name, getattr(self, name))
        monkeypatch.setattr(pipeline, "extra_bytes", lambda runtime, gold, tag: 42)
        monkeypatch.setattr(parallel, "selected_run_seconds", lambda runtime, gold, samples: 0.25)
        monkeypatch.setattr(minimal, "leave_one_out", self.leave_one_out)
        monkeypatch.setattr(minimal, "blocks", self.blocks)
        return self
