"""The gold stage: a real project → a GoldEnv whose recorded tests pass every time."""

from __future__ import annotations

import re
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

from cligym.config import DEFAULT_BASE_IMAGE, home
from cligym.errors import BadInput, BuildFailed, CligymError, GoldFailed
from cligym.debian.probe import probe_debian
from cligym.gold.debian import debian_gold, is_debian_spec
from cligym.gold.diagnose import of_era, repairs
from cligym.gold.image import PYTHON, WORKDIR, build_gold_image, context_digest, python_version
from cligym.gold.imports import local_names
from cligym.gold.index import upload_times
from cligym.gold.metadata import SourceTree
from cligym.gold.profiles import Profile, load_profile
from cligym.gold.requirements import find_test_requirements, requirement_name
from cligym.gold.source import (
    check_project_dir,
    copy_tree,
    default_test_paths,
    extract_sdist,
    fetch_sdist,
    has_tests,
    parse_spec,
    sha256_file,
)
from cligym.gold.shards import Budget, first_pass
from cligym.gold.suite import record_suite, suite_run
from cligym.gold.wheel_build import build_image_for
from cligym.gold.wheelhouse import fill_wheelhouse
from cligym.harness.probe import run_probe
from cligym.layout import GoldDir
from cligym.models.gold import GoldEnv, Source
from cligym.models.io import save
from cligym.models.testrun import TestRun
from cligym.runtime import Runtime, ensure_base_image
from cligym.ui import Reporter


def make_gold(
    spec: str | None,
    out_dir: Path,
    *,
    image: str | None = None,
    test_command: str | None = None,
    workdir: str | None = None,
    base_image: str = DEFAULT_BASE_IMAGE,
    profile_path: Path | None = None,
    shipped_profile: bool = True,
    runs: int = 3,
    timeout: float = 1800,
    rebuild: bool = False,
    budget: Budget | None = None,
    runtime: Runtime | None = None,
    reporter: Reporter | None = None,
) -> GoldEnv:
    """Make a gold environment and write ``out_dir/gold.json`` and ``out_dir/probe.json``.
    A project's suite runs within ``budget`` (``cligym.gold.shards``; a budget of 0 seconds:
    the whole suite in one container a run, each run within ``timeout``)."""
    reporter = reporter or Reporter()
    if runs < 1:
        raise BadInput("--runs must be at least 1")
    if image is None and not spec:
        raise BadInput("give SOURCE (NAME==VERSION or a project directory) or --image with --test-cmd")
    if image is not None and not test_command:
        raise BadInput("--image needs --test-cmd (a pytest command run in the image's workdir)")
    created = _check_output(out_dir)
    try:
        runtime = runtime or Runtime()
        if image is not None:
            gold = _gold_from_image(runtime, image, test_command or "", workdir)
            record_suite(runtime, gold, [], runs, timeout, reporter)
        elif is_debian_spec(spec or ""):
            gold = debian_gold(runtime, spec or "", base_image=base_image, runs=runs, timeout=timeout,
                               rebuild=rebuild, reporter=reporter)
        else:
            options = _Options(spec or "", base_image, profile_path, shipped_profile, rebuild, runs, timeout,
                               budget or Budget())
            gold = _project_gold(runtime, options, reporter)
        out = GoldDir(out_dir)
        save(gold, out.gold)
        _probe(runtime, gold, out, reporter)
        return gold
    except BaseException:
        # the images it built stay: a cache another run may use at once (cligym.runtime.names)
        if created:
            _remove_if_empty(out_dir)
        raise


def _check_output(out_dir: Path) -> bool:
    """Fail before anything is downloaded or built when ``out_dir`` cannot take the
    records (not a directory, or not writable); returns whether it was created here."""
    existed = out_dir.is_dir()
    if out_dir.exists() and not existed:
        raise BadInput(f"the output {out_dir} exists and is not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as exc:
        if not existed:
            _remove_if_empty(out_dir)
        raise BadInput(f"cannot write to the output directory {out_dir}: {exc.strerror or exc}") from exc
    return not existed


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


def _probe(runtime: Runtime, gold: GoldEnv, out: GoldDir, reporter: Reporter) -> None:
    """Record what the gold tests touch (GOLD_DIR/probe.json; a Debian gold's autopkgtest
    tests: probe-debian.json), for the invert stage. A probe that fails leaves the gold
    record valid: inversion probes again and says why."""
    debian = gold.source.kind == "debian"
    path, what = (out.probe_debian, "autopkgtest tests") if debian else (out.probe, "gold tests")
    with reporter.task(f"probing what the {what} touch"):
        try:
            save(probe_debian(runtime, gold) if debian else run_probe(runtime, gold), path)
        except CligymError as exc:
            path.unlink(missing_ok=True)
            then = "the gold record is complete" if debian else "'cligym invert' will try again"
            reporter.note(f"the probe of the {what} failed ({exc}); {then}")


def _gold_from_image(runtime: Runtime, image: str, test_command: str, workdir: str | None) -> GoldEnv:
    if not runtime.image_exists(image):
        raise BadInput(f"image {image} is not present in the Docker engine (build, pull or load it first)")
    config = runtime.image_config(image)
    workdir = workdir or config.get("WorkingDir") or "/"
    probe = runtime.run(image, "command -v python || command -v python3", timeout=120)
    python = probe.output.strip().splitlines()[-1] if probe.ok and probe.output.strip() else ""
    if not python:
        raise BadInput(f"image {image} has no python or python3 on its PATH")
    name = image.split("/")[-1].split(":")[0]
    return GoldEnv(
        source=Source(kind="image", spec=image, name=name, version=image.rpartition(":")[2] or "latest"),
        image=image,
        image_id=runtime.image_id(image),
        python=python,
        python_version=python_version(runtime, image, python),
        workdir=workdir,
        test_command=test_command,
        runs=0,
        tests=[],
    )


@dataclass
class _Project:
    """A project's source on the host, ready to build."""

    source: Source
    profile: Profile
    tree: SourceTree  # the copied or unpacked tree (with the sdist it came from): read once
    build_source: Path  # what the build container builds: the sdist file or the copied tree
    key_material: str  # what the wheelhouse is keyed by: the sdist's or the tree's digest


def _get_source(spec: str, tree: Path, options: _Options, reporter: Reporter) -> _Project:
    """Copy a local project into ``tree``, or download a PyPI sdist and unpack it there.
    Nothing of the project runs: its name and version come from its static metadata."""
    path = Path(spec).expanduser()
    if path.exists() or "/" in spec or spec.startswith("."):
        check_project_dir(path)
        meta = SourceTree(path)
        name, version = meta.name_version()
        profile = load_profile(name, options.profile_path, options.shipped_profile)
        with reporter.task(f"copying {path}"):
            copy_tree(path, tree)
        meta.path = tree  # the copy keeps every metadata file: the rest is read there
        source = Source(kind="local", spec=str(path.resolve()), name=name, version=version)
        return _Project(source, profile, meta, tree, context_digest(tree))
    name, pinned = parse_spec(spec)
    profile = load_profile(name, options.profile_path, options.shipped_profile)
    version = pinned or profile.version
    with reporter.task(f"fetching the sdist of {name}{'==' + version if version else ''}"):
        archive = fetch_sdist(name, version)
        extract_sdist(archive, tree)
    if not version:
        version = archive.name.removesuffix(".tar.gz").removesuffix(".zip").rsplit("-", 1)[-1]
    sha = sha256_file(archive)
    source = Source(kind="pypi", spec=f"{name}=={version}", name=name, version=version, sdist_sha256=sha)
    return _Project(source, profile, SourceTree(tree, archive), archive, sha)


@dataclass
class _Options:
    spec: str
    base_image: str
    profile_path: Path | None
    shipped_profile: bool  # use the profile cligym ships for the project, if any
    rebuild: bool
    runs: int
    timeout: float
    budget: Budget = field(default_factory=Budget)


@dataclass
class _Built:
    gold: GoldEnv
    test_paths: list[str]
    local: set[str]  # top-level names the project tree provides (not installable)


#: How many times a failed first run may add requirements and build again.
REPAIR_ROUNDS = 3


def _project_gold(runtime: Runtime, options: _Options, reporter: Reporter) -> GoldEnv:
    """Build the project's gold image and record its suite. When the first run shows
    errors that a requirement would fix (a module, plugin or pytest release the project
    did not declare), a repair round adds them and builds again (a usage error can hide
    the import errors behind it, so up to ``REPAIR_ROUNDS`` times while each finds
    something new); what was added is recorded in the gold record (``inferred``), so the
    build is reproducible and can become a profile. The time budget covers all of it, the
    image's build included: a first run stops at the round that asks for a repair, and the
    rebuilds and later runs get what is left."""
    fixes: dict[str, str] = {}
    started = time.monotonic()  # the budget covers the image's build too: gold is ready within it
    built = _build_from_project(runtime, options, reporter, fixes)
    first = _first_run(runtime, built, options, reporter, started, fixes)
    for round_ in range(REPAIR_ROUNDS):
        found = _wanted(first, built, fixes)
        if not found:
            break
        reporter.note("the suite asked for " + ", ".join(f"{r} ({why})" for r, why in found.items())
                      + "; building again with them")
        try:
            again = _build_from_project(runtime, options, reporter, {**fixes, **found})
        except (BuildFailed, GoldFailed) as exc:  # what the errors asked for does not install
            reporter.note(f"building with them failed ({str(exc)[:200]}); keeping the build before")
            first = _first_run(runtime, built, options, reporter, started, None)  # the whole pass, not stopped
            break
        fixes.update(found)
        built = again
        last = round_ == REPAIR_ROUNDS - 1  # no build follows: its pass runs to its end
        first = _first_run(runtime, built, options, reporter, started, None if last else fixes)
    gold = built.gold
    # the repeats of what the first pass kept are given what is left of the budget, and at
    # least BUDGET_FLOOR; with a sample, a repeat its deadline cuts loses only the files it
    # did not finish (``record_suite``); run whole, a repeat cut short would lose the gold
    left = max(options.budget.seconds - (time.monotonic() - started), BUDGET_FLOOR)
    if gold.suite is not None:
        record_suite(runtime, gold, built.test_paths, options.runs, left + 90, reporter, first, deadline=left)
        gold.suite.seconds = round(time.monotonic() - started, 1)
    else:
        record_suite(runtime, gold, built.test_paths, options.runs, options.timeout, reporter, first)
    return gold


#: Seconds the repeat runs get at least, however much of the budget the first pass spent.
BUDGET_FLOOR = 60.0


def _wanted(first: TestRun, built: _Built, fixes: dict[str, str]) -> dict[str, str]:
    """The requirements ``first``'s errors ask for that the build does not have yet."""
    # a module that failed to import has no test ids: only the exit code says so
    broken = not first.results or first.exit_code != 0 or any(
        r.outcome in ("failed", "error") for r in first.results.values())
    found = repairs(first, built.gold.source.name, built.local, built.gold.requirements) if broken else {}
    return {r: why for r, why in _of_era(found, built.gold.source).items() if r not in fixes}


def _first_run(runtime: Runtime, built: _Built, options: _Options, reporter: Reporter, started: float,
               fixes: dict[str, str] | None) -> TestRun:
    """The suite's first run: within what is left of the time budget begun at ``started``,
    in shards (``cligym.gold.shards``), the sample record in ``built.gold.suite``; stopped
    at the round that asks for requirements not in ``fixes`` (None: never stopped); the
    suite whole in one container when its collection names no file or no budget is set."""
    if options.budget.seconds > 0:
        stop = None if fixes is None else (lambda run: bool(_wanted(run, built, fixes)))
        found = first_pass(runtime, built.gold, built.test_paths, options.budget, reporter,
                           spent=time.monotonic() - started, stop=stop)
        if found is not None:
            built.gold.suite = found[1]
            return found[0]
    built.gold.suite = None
    return suite_run(runtime, built.gold, built.test_paths, options.timeout)


def _of_era(fixes: dict[str, str], source: Source) -> dict[str, str]:
    """A "NAME<N" fix (a release too new) made exact: the newest release of NAME out when
    the project's version was released (from the index's upload times). Without the dates
    a pytest pin below a major stays as it is, and a fix that names no major is dropped."""
    out = {}
    looked_up, released = False, None  # the project's release date, asked of the index once
    for requirement, why in fixes.items():
        below = re.fullmatch(r"([\w.-]+)<(\d+)", requirement)
        if below and source.kind == "pypi":
            if not looked_up:
                looked_up, released = True, upload_times(source.name).get(Version(source.version))
            name, major = below.group(1), int(below.group(2))
            requirement = of_era(name, released, upload_times(name), major) or requirement
        if not requirement.endswith("<999"):
            out[requirement] = why
    return out


def _build_from_project(runtime: Runtime, options: _Options, reporter: Reporter, fixes: dict[str, str]) -> _Built:
    work = home() / "build"
    work.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        tree = Path(tmp) / "project"
        project = _get_source(options.spec, tree, options, reporter)
        source, profile, name, version = project.source, project.profile, project.source.name, project.source.version
        _check_tests(tree, profile, source.spec)
        requirements, requirements_from = _requirements(profile, project.tree, name)
        requirements = _with_fixes(requirements, fixes)
        local = local_names(tree)
        paths = default_test_paths(tree)  # test.py files pytest would not collect unnamed
        base_image, rebuild = options.base_image, options.rebuild
        with reporter.task(f"base image {base_image}"):
            base_id = ensure_base_image(runtime, base_image, on_log=reporter.log)
            base_py = python_version(runtime, base_image, "python3")
            builder = build_image_for(runtime, base_image, on_log=reporter.log)
        with reporter.task("filling the wheelhouse (downloads on the host, builds in a container)"):
            wheelhouse, project_wheel = fill_wheelhouse(
                runtime, build_image=builder, source=project.build_source, tree=project.tree,
                requirements=requirements, name=name, python=".".join(base_py.split(".")[:2]),
                key_material=project.key_material,
            )
        started = time.monotonic()
        with reporter.task(f"building the gold image of {name} {version}"):
            tag = build_gold_image(
                runtime, name=name, version=version, project_tree=tree, wheelhouse=wheelhouse,
                project_wheel=project_wheel, requirements=requirements, base_image=base_image,
                base_image_id=base_id, nocache=rebuild, on_log=reporter.log,
            )
        build_seconds = time.monotonic() - started
    gold = GoldEnv(
        source=source,
        image=tag,
        image_id=runtime.image_id(tag),
        base_image=base_image,
        python=PYTHON,
        python_version=python_version(runtime, tag, PYTHON),
        workdir=WORKDIR,
        test_command=profile.full_test_command(),
        requirements=requirements,
        requirements_from=requirements_from,
        inferred=dict(fixes),
        runs=0,
        tests=[],
        build_seconds=round(build_seconds, 3),
        image_bytes=runtime.image_size(tag),
    )
    return _Built(gold, profile.test_paths or paths, local)


def _check_tests(tree: Path, profile: Profile, spec: str) -> None:
    """The project ships tests: the profile's test paths exist, or test files are found."""
    if profile.test_paths:
        missing = [p for p in profile.test_paths if not (tree / p.split("::")[0]).exists()]
        if missing:
            raise BadInput(f"{spec}: the profile's test_paths {', '.join(missing)} are not in its source")
    elif not has_tests(tree):
        raise BadInput(f"{spec} ships no tests (no test_*.py, *_test.py or test.py files in its source)")


def _with_fixes(requirements: list[str], fixes: dict[str, str]) -> list[str]:
    """The requirements with a repair round's added; a pytest pin replaces pytest's."""
    if any(requirement_name(f) == "pytest" for f in fixes):
        requirements = [r for r in requirements if requirement_name(r) != "pytest"]
    return [*requirements, *(f for f in fixes if f not in requirements)]


def _requirements(profile: Profile, project: SourceTree, name: str) -> tuple[list[str], list[str]]:
    """(requirements, where they were declared): the profile's, else the project's own."""
    if profile.requirements is not None:
        reqs, sources = list(profile.requirements), ["profile"]
    else:
        reqs, sources = find_test_requirements(project, name)
    declared = project.extras
    for extra in profile.extras:
        if extra not in declared:
            raise BadInput(f"the profile asks for extra {extra!r}, which {name} does not declare")
        reqs += [r for r in declared[extra] if r not in reqs]
    for extra in profile.extra_requirements:
        if extra not in reqs:
            reqs.append(extra)
    if not any(requirement_name(r) == "pytest" for r in reqs):
        reqs.append("pytest")
    return reqs, sources
