"""The reaper asks the engine to remove only what it can: a dead run's untagged image that
another image is built on (a gold image's build steps) stays until what is built on it
goes, and is not asked for on every command (hundreds of refusals took seconds)."""

from __future__ import annotations

from cligym.runtime import ImageKind, pruning
from cligym.runtime.common import OWNER
from cligym.runtime.pruning import Removals


class FakeApi:
    def __init__(self, images: list[dict]) -> None:
        self.listed = images
        self.calls = 0

    def images(self, all=False, filters=None, quiet=False):  # noqa: A002 (the SDK's name)
        self.calls += 1
        return self.listed


def _image(image_id: str, parent: str = "", tags: list[str] | None = None, dead: bool = True) -> dict:
    return {"Id": image_id, "ParentId": parent, "RepoTags": tags or ["<none>:<none>"],
            "Labels": {OWNER: "4242", "dead": "1" if dead else ""}}


def _removals(images: list[dict], monkeypatch) -> Removals:
    monkeypatch.setattr(pruning, "owner_alive", lambda labels: not (labels or {}).get("dead"))
    removals = Removals.__new__(Removals)
    removals._api = FakeApi(images)
    return removals


def test_a_dead_runs_untagged_image_under_another_stays_and_a_leaf_goes(monkeypatch):
    scratch = ImageKind.BROKEN.tag("p", "0123456789ab")
    images = [
        _image("gold", "step2", ["cligym/gold-p:1.0-abc"]),  # a cache image: never the reaper's
        _image("step2", "step1"), _image("step1", "base"),  # its build steps: parents
        _image("leaf", "step9"), _image("step9", "gold"),  # a killed build's steps: the leaf goes, and with it
        _image("orphan", ""),  # its untagged parents; an untagged image with no child goes
        _image("broken", "gold", [scratch]),  # a dead run's scratch image goes
        _image("live", "gold", dead=False),
    ]
    reapable = _removals(images, monkeypatch).reapable_images()
    assert reapable == {"leaf": [], "orphan": [], "broken": [scratch]}


def test_with_no_untagged_image_the_parents_are_not_listed(monkeypatch):
    scratch = ImageKind.BROKEN.tag("p", "0123456789ab")
    removals = _removals([_image("broken", "gold", [scratch])], monkeypatch)
    assert removals.reapable_images() == {"broken": [scratch]}
    assert removals._api.calls == 1
