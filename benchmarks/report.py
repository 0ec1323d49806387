"""What the benchmarks share: printing numbers (aligned text, or JSON with --json), and
stopping cleanly on SIGTERM."""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path


def print_numbers(numbers: dict, as_json: bool) -> None:
    if as_json:
        json.dump(numbers, sys.stdout, indent=2)
        print()
        return
    width = max(map(len, numbers))
    for key, value in numbers.items():
        print(f"{key:<{width}}  {value}")


def stop_on_sigterm() -> None:
    """SIGTERM stops the benchmark like Ctrl-C does, so that the containers and images
    it made are removed on the way out."""

    def interrupt(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGTERM, interrupt)


def table(rows: list[dict], columns: list[tuple[str, str, str]]) -> str:
    """Rows as an aligned text table: ``columns`` are (key, title, format); a row without
    a key shows "-"."""
    cells = [[title for _, title, _ in columns]]
    for row in rows:
        cells.append([fmt.format(row[key]) if key in row else "-" for key, _, fmt in columns])
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
    lines = ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True)))
             for r in cells]
    return "\n".join([lines[0], "-" * len(lines[0]), *lines[1:]])


def project_arguments(parser, projects: list[str]):
    """The options every per-project benchmark takes: the projects, -n, --seed, --keep, --json."""
    parser.add_argument("projects", nargs="*", default=projects)
    parser.add_argument("-n", type=int, default=30, help="attempts per project")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", type=Path, help="keep gold and run directories here (a rerun resumes)")
    parser.add_argument("--json", action="store_true")
    return parser


def each_project(specs: list[str], keep: Path | None, one, after=None) -> list[dict]:
    """``one(spec, root)`` for every project, in a kept folder or a temporary one; a project
    that fails gives a row with its error. ``after(rows)`` runs after each project."""
    import tempfile

    from cligym.errors import CligymError

    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = keep or Path(tmp)
        for spec in specs:
            try:
                rows.append(one(spec, root))
            except CligymError as exc:
                rows.append({"project": spec, "error": str(exc)})
                print(f"{spec}: {exc}", file=sys.stderr)
            if after is not None:
                after(rows)
    return rows
