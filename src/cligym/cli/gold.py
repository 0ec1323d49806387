"""``cligym gold``: build a gold environment."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Optional

import typer

from cligym.cli.app import Quiet, print_json, print_pairs, stage_reporter, writable_output
from cligym.config import DEFAULT_BASE_IMAGE, SUITE_BUDGET, SUITE_SHARDS


def gold(
    source: Annotated[
        Optional[str],
        typer.Argument(help="A PyPI sdist as NAME==VERSION (or NAME for the newest), a local project directory, "
                            "or a Debian source package as deb:SOURCE[=VERSION] (its autopkgtest tests)."),
    ] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="Directory for gold.json.")] = Path("gold"),
    image: Annotated[Optional[str], typer.Option(help="Use this existing image instead of building one.")] = None,
    test_cmd: Annotated[
        Optional[str], typer.Option(help="With --image: the pytest command, run in the workdir; node ids get appended.")
    ] = None,
    workdir: Annotated[
        Optional[str], typer.Option(help="With --image: where the tests run (default: the image's WORKDIR).")
    ] = None,
    base_image: Annotated[
        str, typer.Option(help="Image to build FROM (needs python3). The default is built locally with mmdebstrap.")
    ] = DEFAULT_BASE_IMAGE,
    profile: Annotated[
        Optional[Path], typer.Option(help="A project profile TOML (test command, requirements, ignores).")
    ] = None,
    shipped_profile: Annotated[bool, typer.Option(
        help="Use the profile cligym ships for the project, if any (--no-shipped-profile: metadata only)."
    )] = True,
    runs: Annotated[int, typer.Option(help="Run the suite this many times; keep tests that pass every time.")] = 3,
    timeout: Annotated[float, typer.Option(help="Seconds one suite run may take (with --suite-budget 0).")] = 1800,
    suite_budget: Annotated[float, typer.Option(
        min=0, help="Seconds the image's build and all the suite's runs may take together (the first, the "
                    "repeats, the run by id). "
                    "A suite too long for it keeps a seeded sample of its test files, every package of the "
                    "project represented; what was left out, and why, is in gold.json's 'suite'. "
                    "0: the whole suite, one container a run, as long as it takes.")] = SUITE_BUDGET,
    shards: Annotated[int, typer.Option(
        min=1, help="Containers one run of the suite is split into (its test files divided between them).")
    ] = SUITE_SHARDS,
    suite_seed: Annotated[int, typer.Option(help="Seed of the sample of test files (--suite-budget).")] = 0,
    rebuild: Annotated[bool, typer.Option(help="Rebuild the image even if a cached one matches.")] = False,
    write_profile: Annotated[Optional[Path], typer.Option(
        "--write-profile", help="Also write a profile TOML pinning the version and requirements this build used."
    )] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the GoldEnv record as JSON.")] = False,
    quiet: Quiet = False,
) -> None:
    """Build a gold environment and record the tests that pass every time.

    The project is installed offline in an image, its suite runs several times, and the
    tests that pass on every run go into OUTPUT/gold.json.
    """
    from cligym.gold import make_gold
    from cligym.gold.shards import Budget

    writable_output(output, what="gold directory")
    if write_profile is not None:
        writable_output(write_profile, what="profile", directory=False)
    with stage_reporter(quiet, as_json) as progress:
        record = make_gold(
            source, output, image=image, test_command=test_cmd, workdir=workdir, base_image=base_image,
            profile_path=profile, shipped_profile=shipped_profile, runs=runs, timeout=timeout, rebuild=rebuild,
            budget=Budget(seconds=suite_budget, shards=shards, seed=suite_seed), reporter=progress,
        )
    if write_profile is not None:
        from cligym.gold.profiles import profile_text

        write_profile.parent.mkdir(parents=True, exist_ok=True)
        write_profile.write_text(profile_text(record.source.name, record.source.version, record.requirements,
                                              record.requirements_from, record.inferred), encoding="utf-8")
    if as_json:
        print_json(record)
        return
    _print_record(record, output)


def _print_record(record, output: Path) -> None:
    from cligym.layout import GoldDir

    print_pairs(f"gold environment: {record.source.spec}", [
        ("image", record.image),
        ("python", f"{record.python} ({record.python_version})"),
        ("workdir", record.workdir),
        ("test command", record.test_command),
        ("tests kept", str(len(record.tests))),
        ("flaky / failing / skipped", f"{len(record.flaky)} / {len(record.failing)} / {len(record.skipped)}"),
        *[("left out", f"{n} × {why}") for why, n in Counter(record.left_out.values()).most_common(5)],
        ("requirements from", ", ".join(record.requirements_from) or "none declared"),
        *[("added by repair", f"{req}: {why}") for req, why in record.inferred.items()],
        ("build seconds", f"{record.build_seconds:.1f}"),
        ("suite seconds", ", ".join(f"{s:.1f}" for s in record.test_seconds)),
        *([("suite sample", suite_text(record.suite))] if record.suite is not None else []),
        ("record", str(GoldDir(output).gold)),
    ])


def suite_text(sample) -> str:
    """One line of how the suite ran within its budget."""
    kept = len(sample.kept_files)
    text = (f"{kept} of {sample.files} test files ({sample.kept_packages} of {sample.packages} packages) "
            f"in {sample.shards} shards, {sample.seconds:.0f} s of a {sample.budget_seconds:.0f} s budget")
    if sample.estimated_seconds is not None:
        text += f"; the whole suite ≈ {sample.estimated_seconds:.0f} s in one container"
    return text
