"""Scenarios below the virtual environment: the system Python's start-up and the dynamic
loader, which recreating the venv or reinstalling wheels never touches."""

from __future__ import annotations

import random

from cligym.invert.operators import REGISTRY, Operator, Target
from cligym.invert.operators.targets import write_file_line
from cligym.invert.scenarios.base import Change, Plan, Scenario, Site, module_gone, register

CLEANUP = '''
# one-off clean-up added during the 2.x migration: drop the module the old layout shipped
import os as _os
try:
    _os.remove({path!r})
except OSError:
    pass
del _os
'''


@register
class SelfUndoingFix(Scenario):
    """A clean-up snippet appended to the distribution's ``sitecustomize`` during a
    migration deletes one module file at every interpreter start. The module is gone; a
    reinstall brings it back only until the next Python process starts — the fix undoes
    itself until the hook is found."""

    name = "self_undoing_fix"
    incident = "a fix that undoes itself: a start-up hook deletes the repaired file at every start"

    def plan(self, site, rng):
        sub = site.pick(rng)
        hook = site.probe.realpath(f"{site.stdlib}/sitecustomize.py")
        original = site.files.read(hook)
        if sub is None or original is None:
            return None
        changed = original.rstrip(b"\n") + b"\n" + CLEANUP.format(path=sub.path).encode()
        undo = Change(
            name="startup_cleanup", category="import_system",
            dockerfile=[f"RUN {write_file_line(hook, changed, '644')}"],
            repair=[write_file_line(hook, original, "644")], places=[hook],
            symptom=f"{sub.module} is missing again after every reinstall of {sub.dist}.",
            hint="What runs each time the Python interpreter starts.",
            offline="Take the clean-up lines out of the system's sitecustomize (the rest of it is the distribution's).")
        return Plan(scenario=self.name, changes=[undo, module_gone(sub)], repair_order=[0, 1], touching=sub.touching)


def _prepared(op: Operator, site: Site, rng: random.Random) -> list[Target]:
    targets = [t for t in op.applies_to(site.probe, site.tests) if t.touching]
    rng.shuffle(targets)
    return [p for t in targets[:20] if (p := op.prepare(t, site.files)) is not None]


def from_operator(op: Operator, target: Target) -> Change:
    """A change made by a built-in operator on a prepared target."""
    described = op.describe(target)
    return Change(name=op.name, category=op.category, dockerfile=op.apply(target), repair=op.solution(target),
                  places=[target.path] if target.path else [], symptom=described["symptom"],
                  hint=described["hint"], offline=op.offline_repair(target), shows=list(op.shows))


@register
class LibrarySearchOrder(Scenario):
    """Two mistakes on one shared library: a development install left a linker script
    named like the runtime library in a folder ``LD_LIBRARY_PATH`` searches first, and an
    earlier attempt at a fix moved the library's soname link. Removing the stray file
    reveals the moved link; ``ldconfig`` alone changes nothing the loader searches first."""

    name = "library_search_order"
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

