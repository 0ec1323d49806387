"""The exporter interface: one small class per output format, looked up by name in
:mod:`cligym.export.registry`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import ClassVar

from cligym.harness.reference import gather
from cligym.layout import ExportDir, ReferenceStore, TaskDir
from cligym.models.issue import TaskIssues
from cligym.models.reference import GoldReference
from cligym.models.task import Task, run_order
from cligym.runtime import Runtime

#: A verified task with its issue texts.
Item = tuple[Task, TaskIssues]


def ground_rules(task: Task) -> str:
    """What every task says about the repair itself (the verifier refuses a state that
    breaks these, whatever the tests do): it names no fault, only where scratch work goes."""
    if task.state is not None:  # a Debian system: the verifier restores the source tree, compares the system
        return (f"\n\nRepair the system, not the package's tests: the source tree under {task.workdir} is put "
                "back as it was before the tests are judged, and the system is compared with how it was. Keep "
                "any scratch file of your own in /tmp, and leave nothing installed that was not there before.\n")
    return (f"\n\nRepair the environment, not the project: do not change the project's own source or tests "
            f"under {task.workdir}, and keep any scratch script or module of your own outside {task.workdir} and "
            "outside the Python installation (e.g. in /tmp), where the tests cannot import it.\n")


class Exporter(ABC):
    """Writes verified tasks into an export directory in one format."""

    #: the ``--format`` value (its entry in :data:`cligym.export.registry.FORMATS`)
    name: ClassVar[str]
    #: whether its tasks build FROM the gold images (which must then be in the engine)
    builds_from_gold: ClassVar[bool] = True

    @abstractmethod
    def export(self, items: list[Item], out: ExportDir, *, style: str, hint: bool,
               runtime: Runtime | None = None, bases: Mapping[str, str] | None = None,
               references: ReferenceStore | None = None) -> None:
        """Write every task into ``out`` (an empty directory); formats that build FROM the
        gold images read their gold reference from them through ``runtime`` (a Python
        task's from ``references``, the run's store, where its invert read it already). ``bases``
        names each gold image as the tasks should build FROM it (e.g. pinned by digest in
        a registry); a gold image it does not name keeps its local name."""


def shipped(task: Task, bases: Mapping[str, str] | None) -> Task:
    """The task as it is written out: its gold image named as ``bases`` says."""
    if not bases or task.image_name not in bases:
        return task
    return task.model_copy(update={"image_name": bases[task.image_name]})


class TaskDirExporter(Exporter):
    """A format with one directory per task, holding the problem statement as its
    instruction and a verifier that judges with gold's files (``cligym.harness.reference``)."""

    def export(self, items: list[Item], out: ExportDir, *, style: str, hint: bool,
               runtime: Runtime | None = None, bases: Mapping[str, str] | None = None,
               references: ReferenceStore | None = None) -> None:
        runtime = runtime or Runtime()
        for task, issues in items:
            # the gold reference and pristine files, from a container of the local gold image
            reference, pristine = gather(runtime, task.image_name, instance_id=task.instance_id, workdir=task.workdir,
                                         test_command=task.test_command, f2p=task.FAIL_TO_PASS,
                                         p2p=task.PASS_TO_PASS, order=run_order(task), state=task.state,
                                         store=references)
            text = issues.text(style)
            instruction = (text.with_hint if hint else text.without_hint) + ground_rules(task)
            self.write_task(shipped(task, bases), instruction, out.task(task.instance_id), reference, pristine)

    @abstractmethod
    def write_task(self, task: Task, instruction: str, out: TaskDir, reference: GoldReference,
                   pristine: bytes) -> TaskDir:
        """Write one task directory."""
