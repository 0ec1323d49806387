"""The test files of a gold suite, as its pytest collects them (``collect``), or by name and
size when collecting alone would take too long (``listed``): what the first pass
(``cligym.gold.shards.first_pass``) orders, samples and runs."""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from cligym.harness.testrun import COLLECTION_OPTION, NO_STOP_OPTION
from cligym.models.gold import GoldEnv
from cligym.runtime import Runtime

#: Seconds a collection of the suite may take; one that takes longer lists the test files
#: by name instead (``listed``).
COLLECT_CAP = 45.0

#: A collected item's file: a node id up to its first ``::``; or a file and how many tests
#: it holds (what a quieter ``--collect-only`` prints).
_ITEM = re.compile(r"^([^\s:][^:]*?)::\S")
_COUNT = re.compile(r"^([^\s:][^:]*?): (\d+)$")
#: A file pytest failed to collect, in ``--collect-only -q``'s short summary.
_ERROR = re.compile(r"^ERROR (\S+?)(?: - .*)?$")


@dataclass
class Collected:
    """The suite's test files, in the order pytest collects them, each with its weight (its
    tests, as ``pytest --collect-only`` counts them; or its size in kB, as a listing finds
    it), and the files whose collection failed."""

    files: dict[str, float] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    found_by: Literal["collection", "listing"] = "collection"

    @property
    def tests(self) -> int | None:
        return int(sum(self.files.values())) if self.found_by == "collection" else None


def parse_collection(output: str) -> Collected:
    found = Collected()
    for line in output.splitlines():
        item = _ITEM.match(line)
        if item:
            found.files[item.group(1)] = found.files.get(item.group(1), 0.0) + 1
            continue
        count = _COUNT.match(line)
        if count:
            found.files[count.group(1)] = found.files.get(count.group(1), 0.0) + int(count.group(2))
            continue
        error = _ERROR.match(line.strip())
        if error and error.group(1) not in found.errors:
            found.errors.append(error.group(1))
    for path in found.errors:
        found.files.setdefault(path, 0.0)  # a module that fails to import still runs (its error is the signal)
    return found


def collect(runtime: Runtime, gold: GoldEnv, test_paths: Sequence[str], timeout: float) -> Collected:
    """The suite's files as the gold image's pytest collects them from ``test_paths``."""
    # -qq: a file and its count each line (node ids where the project's options add a -v)
    script = (f"cd {shlex.quote(gold.workdir)} && {gold.test_command} --collect-only -qq -p no:cacheprovider "
              f'{COLLECTION_OPTION} {NO_STOP_OPTION} "$@"')
    result = runtime.run(gold.image, ["sh", "-c", script, "sh", *test_paths], timeout=timeout)
    return parse_collection(result.output) if not result.timed_out else Collected()


def listed(runtime: Runtime, gold: GoldEnv, test_paths: Sequence[str]) -> Collected:
    """The test files under ``test_paths`` (the working directory when none) by pytest's
    default names, weighted by size, found without importing a module: for a suite whose
    collection alone takes longer than ``COLLECT_CAP``."""
    script = (f"cd {shlex.quote(gold.workdir)} && find \"$@\" -type f \\( -name 'test_*.py' -o -name '*_test.py' \\) "
              "-not -path '*/.*' -printf '%s %p\\n'")
    result = runtime.run(gold.image, ["sh", "-c", script, "sh", *(test_paths or ["."])], timeout=120)
    found = Collected(found_by="listing")
    for line in sorted(result.output.splitlines(), key=lambda text: text.partition(" ")[2]):
        size, _, path = line.partition(" ")
        if size.isdigit() and path.endswith(".py"):
            found.files[path.removeprefix("./")] = max(1.0, int(size) / 1000)
    return found
