"""Shared images held by the processes that use them, and removed by tag, never by id.

A gold image is shared by content: every process that needs the environment of
``markupsafe==3.0.2`` finds the same tag (``cligym/gold-…``) and uses it, whoever built it.
So that one process's clean-up never removes an image another one is using:

- **holds**: a process that starts a container from a shared image, or builds FROM one,
  first tags it with a hold of its own, ``cligym/hold:<image>-<pid>-<start>`` (the image's
  short id, the process and its start time). Its holds go when it exits; a killed
  process's holds are removed by the next run's reaper (``dead_holds``), as its
  containers are;
- **removal by its maker only, and only when unheld**: ``remove_shared`` removes a shared
  tag only when no live process holds the image, and puts the tag back if a hold came in
  while it was removing it; a process that takes a hold and finds the shared tag gone
  puts it back too. The engine itself never deletes an image a container or a child image
  uses;
- **what a process made**: ``made_tags`` are the tags this process built, committed or
  imported, in order; clean-ups remove those tags (``remove_made``), not the images with
  an owner label, which images built FROM them inherit;
- **a removal others hold is handed over**: when ``remove_shared`` finds live holds, it
  tags the image ``cligym/given-up:<image>``, and the last process to let go of it (at
  its exit, or the reaper for a killed one) removes it (``settle``): two runs that failed
  on the same gold leave nothing; a maker that finds no holder left once it has given up
  (the last let go just before) removes the image itself. A process that recorded
  something naming the image (a gold record: ``keep``) takes the give-up back, and its exit
  removes nothing.
"""

from __future__ import annotations

import atexit
import os
import re

import docker
import docker.errors
import docker.utils

from cligym.runtime.common import OWNER
from cligym.runtime.owner import STARTED, owner_alive, start_time

#: Tags of the images processes share by content (the gold images).
SHARED_IMAGES = ("cligym/gold-",)
HOLD_REPOSITORY = "cligym/hold"
GIVEN_UP_REPOSITORY = "cligym/given-up"
_HOLD_TAG = re.compile(r"^(?P<image>[0-9a-f]{12})-(?P<pid>\d+)-(?P<started>\d+)$")
FROM_LINE = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)

#: per process: the tags it made, in order, and its holds (image id -> hold tag)
_made: dict[int, list[str]] = {}
_held: dict[int, dict[str, str]] = {}
#: per process: the shared tags it used and the image each named then
_refs: dict[int, dict[str, str]] = {}
#: per process: the shared images a record of its names (``Holds.keep``)
_kept: dict[int, set[str]] = {}


def made_tags() -> list[str]:
    """The tags this process built, committed or imported, oldest first."""
    return _made.setdefault(os.getpid(), [])


def record_made(tag: str) -> None:
    if tag not in made_tags():
        made_tags().append(tag)


def shared(ref: str) -> bool:
    return ref.startswith(SHARED_IMAGES)


def dockerfile_bases(text: str) -> list[str]:
    """The images a Dockerfile builds FROM (stage names and ``scratch`` included)."""
    return FROM_LINE.findall(text)


def hold_alive(tag: str) -> bool:
    """Whether the process a hold tag names may still be running (a tag that is no hold of
    this form counts as alive): ``owner_alive`` of the pid and start time it carries."""
    found = _HOLD_TAG.match(tag)
    return found is None or owner_alive({OWNER: found["pid"], STARTED: found["started"]})


def _short(image_id: str) -> str:
    return image_id.split(":")[-1][:12]


def _hold_tags(tags: list[str]) -> list[str]:
    """The hold tags (their tag part) among an image's ``repository:tag`` names."""
    return [t.split(":", 1)[1] for t in tags if t.startswith(HOLD_REPOSITORY + ":")]


class Holds:
    """The hold half of ``Runtime`` (which provides the engine client)."""

    _api: docker.APIClient

    def hold(self, ref: str) -> None:
        """Hold the shared image ``ref`` for this process (nothing for other images, or an
        image that is not there: using it fails as it would have)."""
        if not shared(ref):
            return
        try:
            image_id = self._held_id(ref)
            held = _held.setdefault(os.getpid(), {})
            if image_id not in held:
                if not held:
                    atexit.register(self.release_holds)
                tag = f"{_short(image_id)}-{os.getpid()}-{start_time(os.getpid()) or 0}"
                self._api.tag(image_id, HOLD_REPOSITORY, tag)
                held[image_id] = tag
            _refs.setdefault(os.getpid(), {})[ref] = image_id
            self._restore(ref, image_id)
        except docker.errors.NotFound:
            return  # gone (or going): using it fails as it would have

    def _held_id(self, ref: str) -> str:
        """The image ``ref`` names, or the one this process holds under that name when the
        name is gone (NotFound when neither)."""
        try:
            return self._api.inspect_image(ref)["Id"]
        except docker.errors.NotFound:
            image_id = _refs.get(os.getpid(), {}).get(ref)
            if image_id is None or image_id not in _held.get(os.getpid(), {}):
                raise
            return image_id

    def hold_bases(self, dockerfile_text: str) -> None:
        for base in dockerfile_bases(dockerfile_text):
            self.hold(base)

    def release_holds(self) -> None:
        """Drop this process's holds (at exit), then remove what its maker gave up and no
        live process holds any more; an image this process keeps loses its give-up instead."""
        held = _held.pop(os.getpid(), {})
        kept = _kept.pop(os.getpid(), set())
        try:
            for tag in held.values():
                self._drop_tag(f"{HOLD_REPOSITORY}:{tag}")
            for image_id in held:
                if image_id in kept:
                    self._drop_give_up(image_id)
                else:
                    self.settle(image_id)
        except Exception:  # noqa: BLE001 - best effort at exit: the reaper removes what is left
            pass

    def keep(self, ref: str) -> None:
        """This process recorded something that names the shared image ``ref`` (a gold
        record): a give-up of its maker no longer applies, now or at this process's exit."""
        if not shared(ref):
            return
        try:
            image_id = self._api.inspect_image(ref)["Id"]
        except docker.errors.NotFound:
            return
        _kept.setdefault(os.getpid(), set()).add(image_id)
        self._drop_give_up(image_id)

    def forget_kept(self) -> None:
        """Drop this process's ``keep`` claims: what it recorded is no longer wanted (a test
        session's temporary gold records), so its exit settles those images too."""
        _kept.pop(os.getpid(), None)

    def settle(self, image_id: str) -> None:
        """Remove a shared image its maker gave up, once no live process holds it: its
        shared tags first, the give-up last (a hold that came in meanwhile keeps both)."""
        try:
            tags = self._api.inspect_image(image_id).get("RepoTags") or []
        except docker.errors.NotFound:
            return
        given_up = f"{GIVEN_UP_REPOSITORY}:{_short(image_id)}"
        if given_up not in tags or self.holders(image_id):
            return
        if all([self.remove_shared(tag) for tag in tags if shared(tag)]):
            self._drop_tag(given_up)

    def holders(self, image_id: str) -> list[str]:
        """The live holds of other processes on an image."""
        try:
            tags = self._api.inspect_image(image_id).get("RepoTags") or []
        except docker.errors.NotFound:
            return []
        mine = _held.get(os.getpid(), {}).get(image_id)
        return [t for t in _hold_tags(tags) if t != mine and hold_alive(t)]

    def remove_shared(self, ref: str) -> bool:
        """Remove the shared tag ``ref`` unless another live process holds its image (then
        the removal is handed over: the image is given up); True when it was removed."""
        try:
            image_id = self._api.inspect_image(ref)["Id"]
        except docker.errors.NotFound:
            return True
        _kept.get(os.getpid(), set()).discard(image_id)
        if self.holders(image_id):
            self._give_up(image_id)
            if self.holders(image_id):
                return False
            # the last holder let go before the give-up was there for it to see: removed here
        self._release(image_id)
        try:
            self._api.remove_image(ref, force=False)
        except docker.errors.APIError:
            return False  # a container or a child image still uses it
        if self.holders(image_id):  # the holder puts the tag back when it uses the image
            self._give_up(image_id)
            return False
        self._drop_give_up(image_id)  # the image goes with it
        return True

    def remove_made(self, since: int = 0, *, keep: frozenset[str] = frozenset()) -> None:
        """Remove the tags this process made (from the ``since``-th on, but those in
        ``keep``), newest first: shared ones with ``remove_shared``, the others without force
        (the engine keeps an image a container or a child image uses)."""
        for tag in reversed(made_tags()[since:]):
            if tag in keep:
                continue
            if shared(tag):
                self.remove_shared(tag)
            else:
                try:
                    self._api.remove_image(tag, force=False)
                except docker.errors.APIError:
                    pass
            made_tags().remove(tag)

    def dead_holds(self) -> list[str]:
        """The hold tags of processes that have ended."""
        tags = [t for image in self._api.images(name=HOLD_REPOSITORY) for t in image.get("RepoTags") or []]
        return [f"{HOLD_REPOSITORY}:{t}" for t in _hold_tags(tags) if not hold_alive(t)]

    def _release(self, image_id: str) -> None:
        tag = _held.get(os.getpid(), {}).pop(image_id, None)
        if tag is not None:
            self._drop_tag(f"{HOLD_REPOSITORY}:{tag}")

    def _give_up(self, image_id: str) -> None:
        try:
            self._api.tag(image_id, GIVEN_UP_REPOSITORY, _short(image_id))
        except docker.errors.APIError:
            pass  # gone meanwhile: nothing left to hand over

    def _drop_give_up(self, image_id: str) -> None:
        self._drop_tag(f"{GIVEN_UP_REPOSITORY}:{_short(image_id)}")

    def _drop_tag(self, ref: str) -> None:
        """Remove the tag ``ref``; the image goes with its last tag, and with it the parents
        no other image or tag uses (its build steps)."""
        try:
            self._api.remove_image(ref, force=False)
        except docker.errors.APIError:
            pass  # not there (or removed by another process at this moment)

    def _restore(self, ref: str, image_id: str) -> None:
        """Put the shared tag back on the image this process holds if someone removed it."""
        if image_id not in _held.get(os.getpid(), {}):
            return
        try:
            self._api.inspect_image(ref)
            return  # there (a rebuild under the same tag is someone's choice: left alone)
        except docker.errors.NotFound:
            pass
        repository, tag = docker.utils.parse_repository_tag(ref)
        self._api.tag(image_id, repository, tag or "latest")
