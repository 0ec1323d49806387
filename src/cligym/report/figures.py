"""Every number of the report, computed once from the records ``sources`` read; the JSON
and the page both show this ``Report`` and nothing else."""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from statistics import mean

from cligym.layout import TaskDir
from cligym.models.gold import GoldEnv
from cligym.models.report import DifficultyFigures, PaperRow, PassRates, ProjectRow, Report, RolloutFigures, TaskRow
from cligym.report.mix import mix_figures
from cligym.models.rollout import RolloutResult
from cligym.models.task import LABELS, Task
from cligym.models.timing import PhaseSeconds
from cligym.report.sources import ExportedTask, Run, Sources

#: The paper's dataset (CLI-Gym: Table 2, Table 7, the funnel of its appendix).
PAPER_TASKS = 1655
PAPER = {
    "instances": 1655.0, "images": 29.0, "issue words": 159.1, "Dockerfile lines": 6.8,
    "FAIL_TO_PASS": 20.4, "PASS_TO_PASS": 29.6,
    "LLM tokens per task": 2.3e9 / PAPER_TASKS, "storage bytes per task": 119e9 / PAPER_TASKS,
}
PAPER_FUNNEL = {"attempts": 4066, "verified": 1655, "successful": 417, "kept": 291}


def _mean(values: Iterable[float]) -> float | None:
    values = list(values)
    return round(mean(values), 4) if values else None


def words(text: str) -> int:
    return len(text.split())


def compute(sources: Sources, out: Path) -> Report:
    """The report of ``sources``; task links are relative to ``out`` (where the page goes)."""
    tasks = _tasks(sources.runs)
    exported = {t.name: t for e in sources.exports for t in e.tasks}
    candidates = [c for run in sources.runs for c in run.candidates]
    rollouts = [r for ro in sources.rollouts for r in ro.results]
    tokens, storage = _tokens(sources, tasks), _storage(sources, tasks)
    return Report(
        inputs=sources.inputs,
        table=_table(sources, tasks, exported, tokens, storage),
        projects=_projects(sources),
        categories=dict(Counter(t.category for t in tasks).most_common()),
        operators=dict(Counter(op for t in tasks for op in t.operators).most_common()),
        fail_fractions=[t.fail_fraction for t in tasks],
        f2p_counts=[len(t.FAIL_TO_PASS) for t in tasks],
        p2p_counts=[len(t.PASS_TO_PASS) for t in tasks],
        dockerfile_lines=[1 + len(t.dockerfile) for t in tasks],
        issue_words=_issue_words(sources.runs),
        funnel=_funnel(sources, tasks, rollouts),
        discard_reasons=dict(Counter(c.discard_kind or "other" for c in candidates if c.status == "discarded")),
        agent_stop_reasons=dict(Counter(c.agent.stop_reason for c in candidates if c.agent)),
        difficulty=_difficulty(tasks),
        mix=mix_figures(tasks),
        rollouts=_rollouts(sources, rollouts, tasks, exported) if rollouts else None,
        tokens=tokens,
        storage=storage,
        tasks=[_row(t, exported.get(t.instance_id), out) for t in tasks],
        phase_seconds_per_task=PhaseSeconds.summed([c.seconds for c in candidates]).per(len(tasks)).rounded()
        if tasks else None,
    )


def _tasks(runs: list[Run]) -> list[Task]:
    """Every task once (a dataset and its project's run may both be given)."""
    seen: dict[str, Task] = {}
    for run in runs:
        for task in run.tasks:
            seen.setdefault(task.instance_id, task)
    return sorted(seen.values(), key=lambda t: t.instance_id)


def _instruction_words(task: Task, exported: ExportedTask | None, runs: list[Run]) -> int | None:
    """Words of the text the agent reads: the exported instruction, else the issue record's
    default export text (strong guidance, no hint)."""
    if exported is not None and exported.format == "harbor":
        return words(TaskDir(exported.folder).instruction.read_text(encoding="utf-8"))
    for run in runs:
        issues = run.issues.get(task.instance_id)
        if issues and "strong" in issues.texts:
            return words(issues.texts["strong"].without_hint)
    return None


def _table(sources: Sources, tasks: list[Task], exported: dict[str, ExportedTask],
           tokens: dict[str, float | None], storage: dict[str, float | None]) -> list[PaperRow]:
    issue = [w for t in tasks if (w := _instruction_words(t, exported.get(t.instance_id), sources.runs)) is not None]
    ours = {
        "instances": float(len(tasks)),
        "images": float(len({t.gold_image_id for t in tasks})),
        "issue words": _mean(issue),
        "Dockerfile lines": _mean(1 + len(t.dockerfile) for t in tasks),
        "FAIL_TO_PASS": _mean(len(t.FAIL_TO_PASS) for t in tasks),
        "PASS_TO_PASS": _mean(len(t.PASS_TO_PASS) for t in tasks),
        "LLM tokens per task": tokens["per_task"],
        "storage bytes per task": storage["bytes_per_task"],
    }
    notes = {"Dockerfile lines": "FROM line included", "images": "gold images",
             "storage bytes per task": ("the dataset directory, gold image bundle included" if sources.datasets
                                        else "gold images (where recorded) and each task's own layer"),
             "LLM tokens per task": "" if tokens["prompt"] or tokens["completion"] else "no LLM was used"}
    return [PaperRow(metric=k, ours=v, paper=PAPER[k], note=notes.get(k, "")) for k, v in ours.items()]


def project_name(gold: GoldEnv | None, run: Run | None) -> str:
    if gold is not None:
        return gold.source.spec if gold.source.kind == "pypi" else f"{gold.source.name}=={gold.source.version}"
    if run is not None and run.tasks:
        return run.tasks[0].repo
    return run.path.name if run is not None else "?"


def _projects(sources: Sources) -> list[ProjectRow]:
    rows: dict[str, ProjectRow] = {}
    for run in sources.runs:
        gold = next((g for g in sources.golds if g.image_id == run.config.gold_image_id), None)
        name, tasks, attempts = project_name(gold, run), run.tasks, len(run.candidates)
        extra = [t.extra_bytes for t in tasks if t.extra_bytes is not None]
        seconds = sum(c.seconds.total() for c in run.candidates)
        rows[name] = ProjectRow(
            project=name, tests=len(gold.tests) if gold else None, attempts=attempts,
            tasks=len(tasks), yield_=round(len(tasks) / attempts, 4) if attempts else None,
            mean_f2p=_mean(len(t.FAIL_TO_PASS) for t in tasks), mean_p2p=_mean(len(t.PASS_TO_PASS) for t in tasks),
            seconds_per_task=round(seconds / len(tasks), 2) if tasks else None, bytes_per_task=_mean(extra),
        )
    for gold in sources.golds:
        rows.setdefault(project_name(gold, None), ProjectRow(
            project=project_name(gold, None), tests=len(gold.tests), attempts=0, tasks=0, yield_=None,
            mean_f2p=None, mean_p2p=None, seconds_per_task=None, bytes_per_task=None))
    return sorted(rows.values(), key=lambda r: r.project)


def _spread(values: Iterable[int]) -> dict[int, int]:
    """How many tasks have each value, in ascending order of value."""
    return dict(sorted(Counter(values).items()))


def _difficulty(tasks: list[Task]) -> DifficultyFigures:
    measures = [t.difficulty for t in tasks if t.difficulty is not None]
    labels = Counter(d.label for d in measures)
    return DifficultyFigures(
        measured=len(measures), unmeasured=len(tasks) - len(measures),
        labels={label: labels[label] for label in LABELS},
        k=_spread(d.k for d in measures), reveal_depth=_spread(d.reveal_depth for d in measures),
        breadth=_spread(d.breadth for d in measures), subsystems=_spread(d.subsystems for d in measures),
        sweeper_solves=_mean(d.sweeper_solves for d in measures),
        culprit_named=_mean(d.culprit_named for d in measures),
        dockerfile_lines=_mean(1 + len(t.dockerfile) for t in tasks), paper_dockerfile_lines=PAPER["Dockerfile lines"],
    )


def label_of(task: Task | None, exported: ExportedTask | None) -> str:
    """The measured label, else what the export's metadata says (older records), else ""."""
    if task is not None and task.difficulty is not None:
        return task.difficulty.label
    return exported.difficulty if exported is not None else ""


def _issue_words(runs: list[Run]) -> dict[str, list[int]]:
    found: dict[str, list[int]] = defaultdict(list)
    for run in runs:
        for issues in run.issues.values():
            for style, text in sorted(issues.texts.items()):
                found[f"{style} hint"].append(words(text.with_hint))
                found[f"{style} no hint"].append(words(text.without_hint))
    return dict(found)


def _funnel(sources: Sources, tasks: list[Task], rollouts: list[RolloutResult]) -> dict[str, int]:
    return {
        "attempts": sum(len(run.candidates) for run in sources.runs),
        "verified": len(tasks),
        "exported": len({t.name for e in sources.exports for t in e.tasks}),
        "validated": sum(v.ok for v in sources.validations),
        "rollouts": len(rollouts),
        "successful": sum(r.successful for r in rollouts),
        "kept": sum(c.kept for c in sources.curations),
    }


def pass_rates(results: list[RolloutResult]) -> PassRates:
    """pass@1: the mean over tasks of each task's share of successful attempts; pass@k: the
    share of tasks with at least one."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for result in results:
        by_task[result.task_id].append(result.successful)
    shares = [sum(v) / len(v) for v in by_task.values()]
    return PassRates(tasks=len(by_task), attempts=len(results), pass_at_1=_mean(shares),
                     pass_at_k=_mean(float(any(v)) for v in by_task.values()))


def _grouped(results: list[RolloutResult], key) -> dict[str, PassRates]:
    groups: dict[str, list[RolloutResult]] = defaultdict(list)
    for result in results:
        groups[key(result) or "unknown"].append(result)
    return {name: pass_rates(group) for name, group in sorted(groups.items())}


def _rollouts(sources: Sources, results: list[RolloutResult], tasks: list[Task],
              exported: dict[str, ExportedTask]) -> RolloutFigures:
    category = {t.instance_id: t.category for t in tasks} | {n: e.category for n, e in exported.items() if e.category}
    by_id = {t.instance_id: t for t in tasks}
    hint_of: dict[str, str] = {}
    for rollout in sources.rollouts:
        tasks_dir = rollout.summary.tasks_dir if rollout.summary else ""
        export = next((e for e in sources.exports if tasks_dir and os.path.abspath(e.path) == tasks_dir), None)
        label = "unknown" if export is None or export.report is None else "hint" if export.report.hint else "no hint"
        hint_of.update({id(r): label for r in rollout.results})
    failures = sum(c.failed for c in sources.curations)
    return RolloutFigures(
        overall=pass_rates(results),
        per_category=_grouped(results, lambda r: category.get(r.task_id)),
        per_difficulty=_grouped(results, lambda r: label_of(by_id.get(r.task_id), exported.get(r.task_id))),
        by_hint=_grouped(results, lambda r: hint_of.get(id(r))),
        stop_reasons=dict(Counter(r.stop_reason or "none" for r in results)),
        steps=[r.steps for r in results],
        loop_rate_failures=round(sum(c.loops_failures for c in sources.curations) / failures, 4) if failures else None,
    )


def _tokens(sources: Sources, tasks: list[Task]) -> dict[str, float | None]:
    prompt = sum(c.prompt_tokens for run in sources.runs for c in run.candidates)
    completion = sum(c.completion_tokens for run in sources.runs for c in run.candidates)
    return {"prompt": float(prompt), "completion": float(completion),
            "per_task": round((prompt + completion) / len(tasks), 1) if tasks else None,
            "paper_per_task": PAPER["LLM tokens per task"]}


def _gold_bytes(sources: Sources, tasks: list[Task]) -> int:
    """The gold images the tasks build FROM, where their size is recorded."""
    used = {t.gold_image_id for t in tasks}
    return sum(g.image_bytes or 0 for g in {g.image_id: g for g in sources.golds}.values() if g.image_id in used)


def _storage(sources: Sources, tasks: list[Task]) -> dict[str, float | None]:
    """Bytes per task as the paper counts them (images included): the dataset directory
    when one is given, else the gold images plus every task's own layer."""
    dataset_bytes = sum(s.dataset_bytes for s in sources.datasets)
    extra = [t.extra_bytes for t in tasks if t.extra_bytes is not None]
    own = _gold_bytes(sources, tasks) / len(tasks) + mean(extra) if tasks and extra else None
    per_task = (dataset_bytes / len(tasks) if dataset_bytes else own) if tasks else None
    return {"dataset_bytes": float(dataset_bytes) if sources.datasets else None,
            "mean_task_layer_bytes": _mean(extra), "bytes_per_task": round(per_task, 1) if per_task else per_task,
            "paper_bytes_per_task": round(PAPER["storage bytes per task"], 1)}


def _row(task: Task, exported: ExportedTask | None, out: Path) -> TaskRow:
    links = {"instruction": "", "dockerfile": ""}
    if exported is not None:
        folder = TaskDir(exported.folder)
        text = folder.instruction if exported.format == "harbor" else folder.task_yaml
        dockerfile = folder.dockerfile
        links = {"instruction": os.path.relpath(text, out), "dockerfile": os.path.relpath(dockerfile, out)}
    return TaskRow(
        instance_id=task.instance_id, project=task.repo, category=task.category, operators=task.operators,
        difficulty=label_of(task, exported), f2p=len(task.FAIL_TO_PASS), p2p=len(task.PASS_TO_PASS),
        fail_fraction=task.fail_fraction, dockerfile_lines=1 + len(task.dockerfile), **links,
    )
