"""Two dataset builds, task for task: did a code change change what users get?

    .venv/bin/python benchmarks/compare_datasets.py BEFORE AFTER [--json]

BEFORE and AFTER are ``cligym dataset build`` output directories of the same projects
file and seed (typically one built with an older checkout on ``PYTHONPATH``). Compared:

- the task ids, and every field of every ``tasks.jsonl`` row (ΔD, F2P, P2P, solution,
  issue texts, difficulty, ...): the fields that differ, with the first example of each;
- each Harbor task's files, byte for byte: instruction, task.toml, environment, solution,
  and the verifier's data files, matched by name (``--rename OLD=NEW`` maps a renamed
  folder or file, e.g. ``tests/verdict=tests/reference``).

Asserts nothing: the differences are the result.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def rows(out: Path) -> dict[str, dict]:
    lines = (out / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["instance_id"]: row for row in map(json.loads, filter(None, lines))}


def field_differences(before: dict[str, dict], after: dict[str, dict]) -> dict[str, list[str]]:
    """Field name -> the ids of the tasks whose rows differ in it."""
    found: dict[str, list[str]] = {}
    for task in sorted(set(before) & set(after)):
        for key in sorted(set(before[task]) | set(after[task])):
            if before[task].get(key) != after[task].get(key):
                found.setdefault(key, []).append(task)
    return found


def file_differences(before: Path, after: Path, renames: dict[str, str]) -> list[str]:
    """Files of the Harbor tasks that differ or exist on one side only (after renames)."""
    def listing(root: Path, rename: bool) -> dict[str, Path]:
        out = {}
        for path in root.rglob("*"):
            if path.is_file():
                rel = str(path.relative_to(root))
                for old, new in (renames.items() if rename else ()):
                    rel = rel.replace(old, new)
                out[rel] = path
        return out

    old, new = listing(before / "harbor", True), listing(after / "harbor", False)
    changed = [rel for rel in sorted(set(old) & set(new)) if old[rel].read_bytes() != new[rel].read_bytes()]
    return changed + [f"only before: {r}" for r in sorted(set(old) - set(new))] + \
        [f"only after: {r}" for r in sorted(set(new) - set(old))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rename", action="append", default=[], metavar="OLD=NEW")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for out in (args.before, args.after):
        if not (out / "tasks.jsonl").is_file():
            print(f"compare_datasets: {out} holds no tasks.jsonl (not a dataset build)", file=sys.stderr)
            return 2
    before, after = rows(args.before), rows(args.after)
    fields = field_differences(before, after)
    files = file_differences(args.before, args.after, dict(r.split("=", 1) for r in args.rename))
    result = {"tasks": [len(before), len(after)], "same_ids": sorted(before) == sorted(after),
              "fields_that_differ": {k: len(v) for k, v in fields.items()}, "files_that_differ": files}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"tasks: {len(before)} before, {len(after)} after; same ids: {result['same_ids']}")
    print(f"jsonl fields that differ: {result['fields_that_differ'] or 'none'}")
    for key, ids in fields.items():
        print(f"  {key} ({ids[0]}):\n    before: {str(before[ids[0]].get(key))[:200]}\n"
              f"    after:  {str(after[ids[0]].get(key))[:200]}")
    print(f"Harbor files that differ: {len(files) or 'none'}")
    for line in files:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
