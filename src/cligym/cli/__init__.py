"""The ``cligym`` command line (``main``: the console script): one module per verb, registered
here in the order ``--help`` lists them; :mod:`cligym.cli.app` holds what they share."""

from __future__ import annotations

import sys

from cligym.cli import (
    clean,
    curate,
    dataset,
    debian,
    demo,
    export,
    gold,
    images,
    invert,
    operators,
    report,
    rollout,
    validate,
    verify,
    version,
)
from cligym.cli.app import app, err
from cligym.cli.signals import INTERRUPTED, catch_signals, interrupted_exit_code, received
from cligym.errors import CligymError

VERBS = (
    gold.gold, operators.operators, operators.scenarios, invert.invert, verify.verify, export.export, validate.validate,
    rollout.rollout, curate.curate, report.report, clean.clean, demo.demo, version.version,
)
for verb in VERBS:
    app.command()(verb)
app.add_typer(images.images_app, name="images")
app.add_typer(dataset.dataset_app, name="dataset")
app.add_typer(debian.debian_app, name="debian")


def main() -> None:
    """Run the command line; every way it ends is an exit code and at most one line of its own.

    A ``CligymError`` prints ``cligym: error: ...`` and exits with its code (2 bad input, 3 no
    engine, 1 otherwise); a bad option or argument gets Typer's usage error and exit 2.
    After Ctrl-C (SIGINT) or SIGTERM the resume line is printed and the exit code is 130 or 143.
    (Typer turns a KeyboardInterrupt into a bare ``exit 130`` whatever its standalone mode,
    so the signal handler's record, not the exception, says that the command was interrupted.)
    Last, an interrupted command removes the containers and scratch images the engine still
    finished for it (a commit or build step whose call the interruption abandoned).
    """
    catch_signals()
    try:
        app()
        code: int | str | None = 0
    except CligymError as exc:  # engine errors included (EngineError, EngineUnavailable, BuildFailed)
        err.print(f"cligym: error: {exc}", markup=False, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:  # raised outside Typer's reach (before or after the command)
        code = 130
    except SystemExit as exc:
        code = exc.code
    if received or code == 130:
        from cligym.runtime import remove_own_everywhere  # not at import: listing the verbs needs no engine

        remove_own_everywhere()  # what an abandoned engine call still made on the way out
        err.print(INTERRUPTED, markup=False, highlight=False, soft_wrap=True)
        sys.exit(interrupted_exit_code())
    sys.exit(code)


__all__ = ["app", "main"]
