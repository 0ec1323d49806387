"""A dataset's validation records (``DIR/validation/<task>.json``) and the verifier probes
they carry, keyed by the task's content digest (``cligym.dataset.manifest.task_digest``,
as dataset.toml lists it).

The build's ``validate`` unit writes a task's record, and so does ``cligym validate
DIR/harbor`` (with ``--probes``, the probe batteries' verdicts). Each record holds the digest
of the task it judged: probes measured on a task whose files have changed since (another
export, an edited verifier) say nothing about it, so they are read only while the digest is
the task's own (:func:`current_probes`), and a new validation of the same task keeps the
earlier one's probes only when its digest is unchanged (:func:`merged`).
"""

from __future__ import annotations

from pathlib import Path

from cligym.dataset.manifest import task_digest
from cligym.errors import BadInput
from cligym.layout import DatasetDir
from cligym.models.io import load, save
from cligym.models.validate import ProbeResult, TaskValidation


def dataset_of(tasks_dir: Path) -> DatasetDir | None:
    """The dataset whose Harbor task directory ``tasks_dir`` is (``DIR/harbor``), or None."""
    parent = DatasetDir(Path(tasks_dir).resolve().parent)
    if parent.plan.is_file() and parent.harbor.path.resolve() == Path(tasks_dir).resolve():
        return parent
    return None


def _earlier(dataset: DatasetDir, task: str) -> TaskValidation | None:
    path = dataset.validation(task)
    if not path.is_file():
        return None
    try:
        return load(TaskValidation, path, "task validation")
    except BadInput:
        return None  # a record being written, or one of an older shape: written anew


def merged(earlier: TaskValidation | None, result: TaskValidation) -> TaskValidation:
    """``result``, with ``earlier``'s probes when it ran none and the task is the same
    (both digests known and equal)."""
    if (result.probes is None and earlier is not None and earlier.probes is not None
            and result.digest is not None and earlier.digest == result.digest):
        return result.model_copy(update={"probes": earlier.probes, "probe_seconds": earlier.probe_seconds})
    return result


def record(dataset: DatasetDir, result: TaskValidation) -> TaskValidation:
    """Save ``result`` as its task's record (merged with the earlier one); returns what was saved."""
    kept = merged(_earlier(dataset, result.task), result)
    save(kept, dataset.validation(result.task))
    return kept


def current_probes(dataset: DatasetDir, task: str) -> list[ProbeResult] | None:
    """The probes recorded for ``task`` if they were measured on its present files, else None."""
    earlier = _earlier(dataset, task)
    folder = dataset.harbor.task(task)
    if earlier is None or earlier.probes is None or earlier.digest is None or not folder.path.is_dir():
        return None
    return earlier.probes if earlier.digest == task_digest(folder) else None


def probe_figures(dataset: DatasetDir, tasks: list[str]) -> tuple[int, list[str]]:
    """(how many of ``tasks`` have current probe verdicts, those of them that failed a probe)."""
    probed = {task: probes for task in tasks if (probes := current_probes(dataset, task)) is not None}
    return len(probed), [task for task, probes in probed.items() if not all(p.ok for p in probes)]
