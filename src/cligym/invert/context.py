"""What every attempt of an inversion run works with, and how a run is opened."""

from __future__ import annotations

import hashlib
import json
import random
import threading
from dataclasses import dataclass, field
from pathlib import Path

from cligym.debian.probe import probe_debian
from cligym.debian.state import system_state
from cligym.errors import BadInput, CligymError
from cligym.harness.listing import take_listing
from cligym.harness.probe import load_probe, run_probe
from cligym.layout import GoldDir, RunDir
from cligym.models.debian_probe import SCHEMA_VERSION as DEBIAN_PROBE_SCHEMA
from cligym.models.debian_probe import DebianProbe
from cligym.models.gold import GoldEnv
from cligym.models.io import load, save
from cligym.models.probe import Probe
from cligym.models.reference import SystemState
from cligym.models.run import FlakyTests, InvertConfig
from cligym.models.task import Task
from cligym.models.testrun import TestRun
from cligym.runtime import Runtime, Session
from cligym.ui import Reporter


@dataclass
class RunContext:
    """The gold environment, its probe, the engine and the run directory of one run."""

    gold: GoldEnv
    probe: Probe
    runtime: Runtime
    run: RunDir
    seed: int
    sample_size: int
    reporter: Reporter = field(default_factory=Reporter)
    #: a long-lived container of the gold image, for reading gold files (set by the run)
    gold_session: Session | None = None
    #: set when attempts run several at a time: they check their deltas in attempt order
    order: CheckOrder | None = None
    #: the most of the run's tasks, at any moment, that the task-blind sweeper repairs
    #: (None: no limit)
    sweeper_share: float | None = None
    #: run checks of a state at once that read it in containers of their own: its difficulty
    #: beside the verifier's checks (not while the sweeper's share is full: a swept state is
    #: then dropped first), the blocker checks beside leave-one-repair-out
    #: (``cligym.invert.beside``); for a run that leaves a core of the engine idle
    beside: bool = False
    #: a Debian gold's: its probe (``probe`` then holds only gold's filesystem listing) and
    #: the system state its tasks' verifiers compare
    debian: DebianProbe | None = None
    state: SystemState | None = None
    _flaky_lock: threading.Lock = field(default_factory=threading.Lock)

    def sweeper_share_full(self) -> bool:
        """Whether one more task the task-blind sweeper repairs would raise the run's share
        of such above ``sweeper_share`` (counted from the saved records, so a resumed run
        counts what its earlier part made)."""
        if self.sweeper_share is None:
            return False
        tasks = [load(Task, path) for path in self.run.task_records()]
        swept = sum(bool(t.difficulty and t.difficulty.sweeper_solves) for t in tasks)
        return swept + 1 > self.sweeper_share * (len(tasks) + 1)

    def drop_flaky(self, tests: list[str]) -> None:
        """Take ``tests`` out of the run's gold tests (no later sample has them) and keep
        them in the run folder, so a resumed run leaves them out too."""
        with self._flaky_lock:
            known = load(FlakyTests, self.run.flaky) if self.run.flaky.exists() else FlakyTests()
            known.tests = sorted({*known.tests, *tests})
            save(known, self.run.flaky)
            self.gold = without_flaky(self.gold, known.tests)
            forget_flaky_in_tasks(self.run, known.tests)


def forget_flaky_in_tasks(run: RunDir, flaky: list[str]) -> None:
    """Take ``flaky`` out of the tests the run's saved tasks list (tasks made before the run
    found them flaky): no reward may hang on a test gold itself fails under load. A task
    whose every failing test is flaky keeps them (nothing else would be left to judge)."""
    gone = set(flaky)
    for record in run.task_records():
        task = load(Task, record)
        if not gone & {*task.selected_tests, *task.FAIL_TO_PASS}:
            continue
        f2p = [t for t in task.FAIL_TO_PASS if t not in gone] or task.FAIL_TO_PASS
        kept = set(f2p) | {t for t in task.PASS_TO_PASS if t not in gone}
        selected = [t for t in task.selected_tests if t in kept]
        save(task.model_copy(update={
            "FAIL_TO_PASS": f2p, "PASS_TO_PASS": [t for t in task.PASS_TO_PASS if t in kept],
            "selected_tests": selected, "errors": {t: e for t, e in task.errors.items() if t in kept},
            "fail_fraction": round(len(f2p) / len(selected), 4)}), record)


def without_flaky(gold: GoldEnv, flaky: list[str]) -> GoldEnv:
    """``gold`` with ``flaky`` moved from its tests to its flaky ones."""
    gone = set(flaky) & set(gold.tests)
    if not gone:
        return gold
    return gold.model_copy(update={"tests": [t for t in gold.tests if t not in gone],
                                   "flaky": [*gold.flaky, *sorted(gone)]})


class Stopped(Exception):
    """The run is stopping: the attempt was cut short; it is not saved, and is made again
    when the run is resumed."""


def wait_until(changed: threading.Condition, ready, stop: threading.Event) -> None:
    """Wait, holding ``changed``, until ``ready()``; Stopped when ``stop`` is set first."""
    while not ready():
        if stop.is_set():
            raise Stopped()
        changed.wait(timeout=1.0)


class CheckOrder:
    """Attempts made several at a time check their states as they would one at a time: an
    attempt starts checking its delta (``claim``) only once every earlier attempt has
    reached that point or ended, and, when an earlier attempt is checking the same delta,
    only after it is done with it, so which of two attempts with one delta becomes the task
    and which the duplicate is the same as in a run of one attempt at a time."""

    def __init__(self, attempts: list[int], stop: threading.Event) -> None:
        self.before_check = set(attempts)  # attempts neither checking nor ended yet
        self.holders: dict[str, int] = {}  # delta digest -> the attempt checking it
        self.changed = threading.Condition()
        self.stop = stop

    def claim(self, digest: str, attempt: int) -> None:
        with self.changed:
            wait_until(self.changed, lambda: all(a >= attempt for a in self.before_check), self.stop)
            self.before_check.discard(attempt)
            self.changed.notify_all()
            wait_until(self.changed, lambda: self.holders.get(digest, attempt) == attempt, self.stop)
            self.holders[digest] = attempt

    def release(self, digest: str, attempt: int) -> None:
        with self.changed:
            if self.holders.get(digest) == attempt:
                del self.holders[digest]
            self.changed.notify_all()

    def ended(self, attempt: int) -> None:
        with self.changed:
            self.before_check.discard(attempt)
            self.changed.notify_all()


def open_run(gold_dir: Path, run_dir: Path, runtime: Runtime | None, reporter: Reporter, attempts: int,
             **config) -> RunContext:
    """Check the numbers, load the gold record, check its image is in the engine, record the
    run's arguments (a resumed run must have the same ones) and find the probe: the gold
    stage's beside gold.json, else one this run saved, else a new one saved into the run
    directory (a stage writes only into its own directory)."""
    if attempts < 1:
        raise BadInput("-n must be at least 1")
    if config.get("sample_size", 1) < 1:
        raise BadInput("--sample must be at least 1")
    gold = GoldDir(gold_dir).load()
    runtime = runtime or Runtime()
    if not runtime.image_exists(gold.image):
        raise BadInput(f"gold image {gold.image} is not in the Docker engine; run 'cligym gold' again")
    run = RunDir(run_dir)
    settings = InvertConfig(gold_image_id=gold.image_id, gold_digest=gold_digest(gold), **config)
    _check_resume(run, settings, attempts)
    save(settings, run.config)
    debian = None
    with reporter.task("probing the gold environment"):
        if gold.source.kind == "debian":
            debian = _debian_probe(runtime, gold, GoldDir(gold_dir).probe_debian, run.probe_debian)
            probe = _listing_only(runtime, gold, run)
        else:
            loaded = load_probe(gold, GoldDir(gold_dir).probe, run.probe)
            if loaded is None:
                loaded = run_probe(runtime, gold)
                save(loaded, run.probe)
            probe = loaded
    if run.flaky.exists():  # found flaky by the run's earlier part
        flaky = load(FlakyTests, run.flaky).tests
        gold = without_flaky(gold, flaky)
        forget_flaky_in_tasks(run, flaky)  # a run stopped between the two steps of drop_flaky
    return RunContext(gold=gold, probe=probe, runtime=runtime, run=run, seed=settings.seed,
                      sample_size=settings.sample_size, reporter=reporter, debian=debian,
                      state=system_state(debian) if debian else None)


def _listing_only(runtime: Runtime, gold: GoldEnv, run: RunDir) -> Probe:
    """A Debian gold's ``Probe``: only gold's filesystem listing (the leak scan's), which the
    Debian probe does not take; saved in the run directory, taken again for another image."""
    if run.probe.exists():
        saved = load(Probe, run.probe)
        if saved.gold_image_id == gold.image_id:
            return saved
    probe = Probe(gold_image_id=gold.image_id, tests=[], touch={}, modules={}, libs=[], dists=[], python={},
                  files=take_listing(runtime, gold.image), workdir=gold.workdir)
    save(probe, run.probe)
    return probe


def _debian_probe(runtime: Runtime, gold: GoldEnv, *paths: Path) -> DebianProbe:
    """A Debian gold's probe: the gold stage's, else one this run saved (each only when made
    of this image with this record's layout), else a new one saved into the run directory."""
    for path in paths:
        if path.exists():
            try:
                found = load(DebianProbe, path, "Debian probe")
            except CligymError:
                continue
            if found.gold_image_id == gold.image_id and found.schema_version == DEBIAN_PROBE_SCHEMA:
                return found
    made = probe_debian(runtime, gold)
    save(made, paths[-1])
    return made


def gold_digest(gold: GoldEnv) -> str:
    """Names one gold record: two records of one image with other tests differ."""
    material = json.dumps([gold.source.spec, gold.image_id, gold.workdir, gold.test_command, gold.tests])
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _check_resume(run: RunDir, settings: InvertConfig, attempts: int) -> None:
    """A run directory is resumed only with the arguments and the gold record it was made
    with, and never told to make fewer attempts than it has finished (its summary would
    then drop tasks that stay on disk)."""
    if not run.config.exists():
        return
    before = load(InvertConfig, run.config, "invert config")
    if before.gold_digest is None:  # made before the field: the image id still has to match
        before = before.model_copy(update={"gold_digest": settings.gold_digest})
    if before.gold_digest != settings.gold_digest:
        raise BadInput(f"{run.path} was made from another gold record (same image, other tests or source); "
                       "use another -o")
    if before != settings:
        raise BadInput(f"{run.path} holds a run with other arguments (gold, seed, operators or model); use another -o")
    finished = run.finished_attempts()
    if finished > attempts:
        raise BadInput(f"{run.path} already holds {finished} finished attempts; give -n {finished} or more "
                       "(a smaller -n would leave tasks out of its summary)")


#: A sample holds at most this many seconds of gold test time (``GoldEnv.durations``), and
#: the sample of a suite too long for its gold budget (one whose ``GoldEnv.suite`` left
#: files out) at most this many test files: every run of a task's tests (the broken
#: state's, each repair's, the verifier's: about fourteen a task) pays for the tests and for
#: each file's imports, so a project with a slow test, or a huge suite, makes tasks that
#: cost about what a small project's do (a 200-test sample of one huge suite took 19 s a
#: run over 41 files, and its tasks 87 s each; 62 tests of 8 files, 52 s; one 5.8 s test
#: among 25 fast ones made every task of its project run it fourteen times).
SAMPLE_SECONDS = 3.0
SAMPLE_FILES = 8


def sample_tests(rng: random.Random, gold: GoldEnv, size: int) -> list[str]:
    """Up to ``size`` gold tests drawn at random, in the order the suite runs them, within
    ``SAMPLE_SECONDS`` and, of a suite too long for its gold budget, ``SAMPLE_FILES`` (a
    test that does not fit what is left is passed over; none fits: the shortest drawn)."""
    drawn = rng.sample(gold.tests, min(size, len(gold.tests)))
    few_files = gold.suite is not None and not gold.suite.whole
    picked: set[str] = set()
    files: set[str] = set()
    spent = 0.0
    for test in drawn:
        cost, file = gold.durations.get(test, 0.0), test.split("::")[0]
        if spent + cost <= SAMPLE_SECONDS and (not few_files or file in files or len(files) < SAMPLE_FILES):
            picked.add(test)
            spent += cost
            files.add(file)
    if not picked and drawn:
        picked.add(min(drawn, key=lambda t: gold.durations.get(t, 0.0)))
    return [t for t in gold.tests if t in picked]


def classify(run: TestRun, sample: list[str]) -> tuple[list[str], list[str]]:
    """(FAIL_TO_PASS, PASS_TO_PASS) of a run of ``sample``, in the sample's order, by the
    one failing-test rule (``TestRun.failing``: a run with no report, the test command
    itself failed, makes every test FAIL_TO_PASS)."""
    failing = run.failing(sample)
    failed = set(failing)
    return failing, [t for t in dict.fromkeys(sample) if t not in failed]


def error_excerpts(run: TestRun, tests: list[str]) -> dict[str, str]:
    """Each test's error message in ``run`` (cut to 1500 characters)."""
    return {t: (run.results[t].message if t in run.results else "")[:1500] for t in tests}
