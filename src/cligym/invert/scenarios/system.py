"""Scenarios below the virtual environment: the system Python's start-up and the dynamic
loader, which recreating the venv or reinstalling wheels never touches."""

from __future__ import annotations

import random

from cligym.invert.operators import REGISTRY, Operator, Target
from cligym.invert.operators.targets import q, write_file_line
from cligym.invert.scenarios.base import Plan, PlannedChange, Scenario, Site, module_gone, register

CLEANUP = '''\
# crash-reporter hook of a backport, with a one-off clean-up added during a migration:
# drop the module the old layout shipped
import os


def install():
    try:
        os.remove({path!r})
    except OSError:
        pass
'''


@register
class SelfUndoingFix(Scenario):
    """Debian's own ``sitecustomize`` imports ``apport_python_hook`` when one exists and
    calls its ``install()`` at every interpreter start; a backported hook carries a
    one-off clean-up from a migration that deletes one module file. The module is gone; a
    reinstall brings it back only until the next Python process starts — the fix undoes
    itself until the hook is found."""

    name = "self_undoing_fix"
    family = "startup_hook"
    incident = "a fix that undoes itself: a start-up hook deletes the repaired file at every start"

    def plan(self, site, rng):
        sub, hook = site.pick(rng), site.apport_hook()
        if sub is None or hook is None:
            return None
        undo = PlannedChange(
            name="startup_cleanup", category="import_system",
            dockerfile=[f"RUN {write_file_line(hook, CLEANUP.format(path=sub.path).encode(), '644')}"],
            repair=[f"rm -f {q(hook)}"], places=[hook],
            symptom=f"{sub.module} is missing again after every reinstall of {sub.dist}.",
            hint="What runs each time the Python interpreter starts.",
            offline="Delete the hook module the system's sitecustomize imports at start-up.")
        return Plan(scenario=self.name, changes=[undo, module_gone(sub)], repair_order=[0, 1], touching=sub.touching)


def _prepared(op: Operator, site: Site, rng: random.Random) -> list[Target]:
    targets = [t for t in op.applies_to(site.probe, site.tests) if t.touching]
    rng.shuffle(targets)
    return [p for t in targets[:20] if (p := op.prepare(t, site.files)) is not None]


def from_operator(op: Operator, target: Target) -> PlannedChange:
    """A change made by a built-in operator on a prepared target."""
    described = op.describe(target)
    return PlannedChange(name=op.name, category=op.category, dockerfile=op.apply(target), repair=op.solution(target),
                         places=[target.path] if target.path else [], symptom=described["symptom"],
                         hint=described["hint"], offline=op.offline_repair(target), shows=list(op.shows))


@register
class LibrarySearchOrder(Scenario):
    """Two mistakes on one shared library: a development install left a linker script
    named like the runtime library in a folder ``LD_LIBRARY_PATH`` searches first, and an
    earlier attempt at a fix moved the library's soname link. Removing the stray file
    reveals the moved link; ``ldconfig`` alone changes nothing the loader searches first."""

    name = "library_search_order"
    family = "library_loading"
    shows_cause = True  # LD_LIBRARY_PATH names the stray file's folder
    incident = "a library search-order chain: an LD_LIBRARY_PATH stray file and a moved soname link"

    def plan(self, site, rng):
        shadow_op, link_op = REGISTRY["ld_library_path_shadow"], REGISTRY["lib_symlink_dangling"]
        links = {t.data.real: t for t in _prepared(link_op, site, rng)}
        for shadow in _prepared(shadow_op, site, rng):
            link = links.get(shadow.data.real)
            if link is None:
                continue
            touching = sorted(set(shadow.touching) & set(link.touching))
            if not touching:
                continue
            changes = [from_operator(link_op, link), from_operator(shadow_op, shadow)]
            return Plan(scenario=self.name, changes=changes, repair_order=[1, 0], touching=touching)
        return None

