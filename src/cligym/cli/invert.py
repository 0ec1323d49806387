"""``cligym invert``: break a gold environment on purpose, with the built-in operators or an
LLM agent, and keep the verified broken states as tasks."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from cligym.cli.app import (
    ApiKeyEnv,
    BaseUrl,
    JsonSummary,
    MaxCompletionTokens,
    MaxSeconds,
    MaxSteps,
    MaxTokens,
    ModelConfigFile,
    ModelName,
    cost_text,
    ModelPreset,
    ModelSeed,
    Quiet,
    Temperature,
    counts,
    model_client,
    print_json,
    print_pairs,
    stage_reporter,
    writable_output,
)
from cligym.errors import BadInput


def _names(text: str | None) -> list[str] | None:
    return [n.strip() for n in text.split(",") if n.strip()] or None if text else None


def invert(
    gold_dir: Annotated[Path, typer.Argument(help="A directory holding gold.json (made by 'cligym gold').")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The run directory (created; resumed if it exists).")],
    attempts: Annotated[int, typer.Option("-n", "--attempts", help="How many attempts to make.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed: the same seed and gold give the same attempts.")] = 0,
    operator: Annotated[
        Optional[str], typer.Option("--operators", help="Comma-separated operator names: only these, 1 to "
                                    "--max-operators of them an attempt (single faults: --max-operators 1).")
    ] = None,
    scenario: Annotated[
        Optional[str], typer.Option("--scenarios", help="Comma-separated incident scenario names, or 'all': only "
                                    "scenarios (see 'cligym scenarios'). Neither option: the default mix of "
                                    "scenarios and chained operator composites.")
    ] = None,
    sample: Annotated[int, typer.Option(help="Gold tests sampled per attempt.")] = 200,
    max_operators: Annotated[int, typer.Option(help="Most operators combined in one attempt (1-3).")] = 3,
    agent: Annotated[
        str, typer.Option(help="Who degrades: 'operators' (built-in, no LLM) or 'llm' (an agent).")
    ] = "operators",
    model: ModelName = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    model_config: ModelConfigFile = None,
    model_preset: ModelPreset = None,
    refine_rate: Annotated[float, typer.Option(help="--agent llm: share of queries given a refinement pass.")] = 0.5,
    max_steps: MaxSteps = 40,
    max_seconds: MaxSeconds = 900,
    max_tokens: MaxTokens = 2_000_000,
    temperature: Temperature = None,
    max_completion_tokens: MaxCompletionTokens = None,
    model_seed: ModelSeed = None,
    workers: Annotated[int, typer.Option(help="--agent llm: attempts run at once (the model server serves "
                                                "them concurrently).")] = 1,
    as_json: JsonSummary = False,
    quiet: Quiet = False,
) -> None:
    """Break a gold environment on purpose and keep the verified broken states as tasks.

    Guided by its tests; tasks land in RUN_DIR/tasks/*/instance.json, every attempt in
    RUN_DIR/candidates/ (the LLM agent's trajectories in RUN_DIR/trajectories/). An
    interrupted run (Ctrl-C, SIGTERM, or killed) resumes where it stopped; what a killed
    run left in the engine is removed when the next long command starts.
    """
    from cligym.agents.loop import AgentLimits
    from cligym.invert import invert as run_invert, invert_with_agent

    if agent not in ("operators", "llm"):
        raise BadInput(f"unknown agent {agent!r}; choose operators or llm")
    if agent == "operators" and workers != 1:  # each attempt learns from the ones before it
        raise BadInput("--workers is for --agent llm; run many projects at once with 'cligym dataset --workers'")
    writable_output(output, what="run directory")
    with stage_reporter(quiet, as_json) as progress:
        if agent == "operators":
            summary = run_invert(gold_dir, output, attempts=attempts, seed=seed, operators=_names(operator),
                                 scenarios=_names(scenario), sample_size=sample, max_operators=max_operators,
                                 reporter=progress)
        else:
            client = model_client(model, base_url, model_config, api_key_env, temperature=temperature,
                                  max_tokens=max_completion_tokens, seed=model_seed, preset=model_preset)
            limits = AgentLimits(max_steps=max_steps, max_seconds=max_seconds, max_tokens=max_tokens)
            summary = invert_with_agent(gold_dir, output, client, attempts=attempts, seed=seed, sample_size=sample,
                                        refine_rate=refine_rate, limits=limits, reporter=progress, workers=workers)
    if as_json:
        print_json(summary, by_alias=True)
        return
    _print_summary(summary, gold_dir, output)


def _print_summary(summary, gold_dir: Path, output: Path) -> None:
    from cligym.layout import RunDir

    rows = [
        ("attempts", str(summary.attempts) + (" (stopped: the last attempts found nothing new to break)"
                                              if summary.exhausted else "")),
        ("verified tasks", f"{summary.verified} (yield {summary.yield_:.0%})"),
        ("discarded", counts(summary.discard_reasons)),
        ("per category", counts(summary.per_category)),
        ("difficulty", counts(summary.per_difficulty)),
        ("necessary changes (k)", counts(summary.per_k)),
    ]
    if summary.seconds_per_verified is not None:
        rows.append(("seconds per verified task", cost_text(summary)))
        rows.append(("where they went", ", ".join(f"{phase} {seconds / summary.verified:.1f}" for phase, seconds
                                                  in summary.phase_seconds.spent().items())))
    if summary.prompt_tokens or summary.completion_tokens:
        rows.append(("tokens (prompt + completion)", f"{summary.prompt_tokens} + {summary.completion_tokens}"))
        rows.append(("tokens per verified task",
                     f"{summary.tokens_per_verified:.0f}" if summary.tokens_per_verified else "-"))
    if summary.reproduction_checked:
        rows.append(("reproduced by gold + ΔD", f"{summary.reproduced}/{summary.reproduction_checked}"))
    tasks = RunDir(output).tasks
    rows.append((tasks.name, str(tasks)))
    print_pairs(f"inversion of {gold_dir}", rows)
