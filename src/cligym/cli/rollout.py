"""``cligym rollout``: run an agent on exported Harbor tasks, k attempts each."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

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
    ModelPreset,
    ModelSeed,
    Quiet,
    Temperature,
    err,
    model_client,
    print_json,
    print_table,
    stage_reporter,
    writable_output,
)
from cligym.rollout.registry import agents_help, get_agent


def rollout(
    tasks_dir: Annotated[Path, typer.Argument(help="A directory of exported Harbor tasks.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="The rollout directory (resumed if it exists).")],
    agent: Annotated[str, typer.Option(help=agents_help())] = "llm",
    k: Annotated[int, typer.Option("-k", help="Attempts per task (pass@k).")] = 1,
    model: ModelName = None,
    base_url: BaseUrl = None,
    api_key_env: ApiKeyEnv = None,
    model_config: ModelConfigFile = None,
    model_preset: ModelPreset = None,
    max_steps: MaxSteps = 50,
    max_seconds: MaxSeconds = 1800,
    max_tokens: MaxTokens = 2_000_000,
    workers: Annotated[int, typer.Option(help="Tasks rolled out at once (a model server takes many requests).")] = 1,
    temperature: Temperature = None,
    max_completion_tokens: MaxCompletionTokens = None,
    model_seed: ModelSeed = None,
    as_json: JsonSummary = False,
    quiet: Quiet = False,
) -> None:
    """Run an agent on exported tasks; verify each attempt with the task's tests.

    Writes OUTPUT/<task>/<attempt>/trajectory.json (ATIF) and result.json, and
    OUTPUT/summary.json with pass@1 and pass@k.
    """
    from cligym.agents.loop import AgentLimits
    from cligym.rollout.stage import rollout as run_rollout

    needs_model = get_agent(agent).needs_model
    client = model_client(model, base_url, model_config, api_key_env, temperature=temperature,
                          max_tokens=max_completion_tokens, seed=model_seed,
                          preset=model_preset) if needs_model else None
    if client is not None and k > 1 and not client.config.temperature and "temperature" not in client.config.omit:
        err.print(f"cligym: warning: -k {k} at temperature 0: the attempts will be near-copies (pass@{k} ≈ "
                  "pass@1, duplicate training rows); set --temperature (and --model-seed to make them reproducible)",
                  markup=False, highlight=False)
    writable_output(output, what="rollout directory")
    limits = AgentLimits(max_steps=max_steps, max_seconds=max_seconds, max_tokens=max_tokens)
    with stage_reporter(quiet, as_json) as progress:
        summary = run_rollout(tasks_dir, output, agent=agent, k=k, client=client, limits=limits, reporter=progress,
                              workers=workers)
    if as_json:
        print_json(summary)
        return
    rows = [[task, str(int(row["attempts"])), str(int(row["successes"])), f"{row['pass@1']:.2f}",
             f"{row[f'pass@{summary.k}']:.2f}"] for task, row in summary.per_task.items()]
    rows.append(["overall", str(summary.attempts), str(summary.successes), f"{summary.pass_at_1:.2f}",
                 f"{summary.pass_at_k:.2f}"])
    print_table(f"rollouts: {summary.agent}, k={summary.k}",
                ("task", "attempts", "successes", "pass@1", f"pass@{summary.k}"), rows)
