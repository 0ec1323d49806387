"""What the verbs of the command line share (but the signal handling: ``cligym.cli.signals``)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from cligym.errors import BadInput, CligymError

app = typer.Typer(
    help=(
        "cligym turns a healthy, tested Python project into verified environment-repair "
        "tasks for coding agents. Stages: gold → invert → verify → export → validate."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
)
out = Console()
err = Console(stderr=True)

# options shared by several verbs
Quiet = Annotated[bool, typer.Option("-q", "--quiet", help="No progress display.")]
JsonSummary = Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")]
JsonResults = Annotated[bool, typer.Option("--json", help="Print the results as JSON.")]
JsonReport = Annotated[bool, typer.Option("--json", help="Report as JSON.")]

# options shared by the verbs that drive a model
ModelName = Annotated[Optional[str], typer.Option("--model", help="Model name at the endpoint.")]
BaseUrl = Annotated[Optional[str], typer.Option(help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1.")]
ApiKeyEnv = Annotated[Optional[str], typer.Option(help="Environment variable holding the API key.")]
ModelConfigFile = Annotated[Optional[Path], typer.Option(help="TOML file with model, base_url, api_key_env, timeout, "
                                                                "preset, omit, max_tokens_field, reasoning, "
                                                                "context_tokens... (see docs/servers.md)")]
ModelPreset = Annotated[Optional[str], typer.Option(help="A preset: vllm, sglang, llama.cpp, openai-reasoning, "
                                                         "deepseek, mistral (the config file's keys win).")]
MaxSteps = Annotated[int, typer.Option(help="Agent step limit per attempt.")]
MaxSeconds = Annotated[float, typer.Option(help="Agent wall-time limit per attempt.")]
MaxTokens = Annotated[int, typer.Option(help="Agent token limit per attempt.")]
Temperature = Annotated[Optional[float], typer.Option(help="Sampling temperature (default 0, as in the paper).")]
MaxCompletionTokens = Annotated[Optional[int], typer.Option(help="Completion tokens per model reply (default: "
                                                                 "the server's).")]
ModelSeed = Annotated[Optional[int], typer.Option(help="Sampling seed sent with every model request.")]


def stage_reporter(quiet: bool, as_json: bool = False):
    """What a verb that drives the engine starts with: dead runs' leftovers reaped (said on
    stderr unless ``quiet``), then its progress on stderr, or nothing (``--quiet``, or
    ``--json`` keeping stdout clean)."""
    from cligym.ui import Reporter, RichReporter

    reap_dead_runs(quiet)
    return Reporter() if quiet or as_json else RichReporter(err)


def model_client(model: str | None, base_url: str | None, config: Path | None, api_key_env: str | None, *,
                 temperature: float | None = None, max_tokens: int | None = None, seed: int | None = None,
                 preset: str | None = None):
    """The model client the options describe (exit 2 when they describe none), after one
    request with a tool: a server that cannot do tool calls stops here, naming its flags."""
    from pydantic import ValidationError

    from cligym.agents.client import ModelClient, ModelConfig, ModelError
    from cligym.agents.transport import one_line

    given = {"model": model, "base_url": base_url, "api_key_env": api_key_env, "temperature": temperature,
             "max_tokens": max_tokens, "seed": seed, "preset": preset}
    overrides = {k: v for k, v in given.items() if v is not None and v != ""}
    try:
        cfg = ModelConfig.load(config, **overrides) if config else ModelConfig(**overrides) if overrides else None
    except ValidationError as exc:
        raise BadInput(f"model options: {one_line(exc.errors()[0].get('msg', exc))}") from None
    if cfg is None or not cfg.model or not cfg.base_url:
        raise BadInput("an LLM agent needs --model and --base-url (or --model-config FILE)")
    client = ModelClient(cfg)
    try:
        client.preflight()
    except ModelError as exc:
        raise CligymError(f"the model endpoint failed its first request (one with a tool): {exc}",
                          exit_code=exc.exit_code if exc.fatal else 2) from None
    return client


# -- printing ----------------------------------------------------------------------------


def print_json(data: Any, *, by_alias: bool = False) -> None:
    """A record (pydantic model), or plain data, as JSON on stdout."""
    if hasattr(data, "model_dump_json"):
        out.print_json(data.model_dump_json(by_alias=by_alias))
    else:
        out.print_json(json.dumps(data))


def print_table(title: str, columns: Iterable[str], rows: Iterable[Iterable[Any]], *, header: bool = True) -> None:
    table = Table(title=title, show_header=header)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))  # cells are data, never markup ("[testenv]")
    out.print(table)


def print_pairs(title: str, rows: Iterable[tuple[Any, Any]]) -> None:
    """A two-column table without a header: one name and its value a row."""
    print_table(title, ("", ""), rows, header=False)


def counts(values: Mapping[str, int]) -> str:
    """'a 2, b 1' (sorted by name), or 'none'."""
    return ", ".join(f"{k} {v}" for k, v in sorted(values.items())) or "none"


def cost_text(summary) -> str:
    """A run's seconds per verified task, with the multiple of its physical limit when measured."""
    text = f"{summary.seconds_per_verified:.1f}"
    if summary.cost_ratio is not None:
        text += (f" ({summary.cost_ratio:.1f}× the limit of {summary.limit_seconds:.2f} s: two runs of the selected "
                 "tests, each in a fresh container)")
    return text


# -- outputs -----------------------------------------------------------------------------


def writable_output(path: Path, *, what: str, directory: bool = True) -> None:
    """Fail early (one line, exit 2) when ``path`` cannot be made and written: a directory
    (``directory``) or a file, existing or not. Nothing is left behind by the check."""
    path = Path(path)
    if path.exists():
        if directory != path.is_dir():
            kind = "a directory" if directory else "a file"
            raise BadInput(f"cannot write the {what} {path}: it exists and is not {kind}")
        where = path if directory else path.parent
    else:
        where = path.parent
        while not where.exists():
            where = where.parent
        if not where.is_dir():
            raise BadInput(f"cannot write the {what} {path}: {where} is not a directory")
    try:
        shutil.rmtree(tempfile.mkdtemp(prefix=".cligym-write-check-", dir=where))
    except OSError as exc:
        raise BadInput(f"cannot write the {what} {path}: {exc.strerror or exc}") from exc
    if path.is_file() and not os.access(path, os.W_OK):
        raise BadInput(f"cannot write the {what} {path}: permission denied")


# -- leftovers of runs that ended -----------------------------------------------------------

def reap_dead_runs(quiet: bool) -> None:
    """Remove what runs that ended without cleaning up (killed) left in the engine: their
    containers and scratch images. Live runs are not touched."""
    from cligym.runtime import Runtime

    with closing(Runtime()) as runtime:
        containers, images = runtime.reap_dead_runs()
    if (containers or images) and not quiet:
        err.print(f"cligym: removed {containers} container(s) and {images} image(s) left by runs that ended",
                  markup=False, highlight=False)
