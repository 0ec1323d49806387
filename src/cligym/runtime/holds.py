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
  an owner label, which images built FROM them inherit.
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
_HOLD_TAG = re.compile(r"^(?P<image>[0-9a-f]{12})-(?P<pid>\d+)-(?P<started>\d+)$")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)", re.IGNORECASE | re.MULTILINE)

#: per process: the tags it made, in order, and its holds (image id -> hold tag)
_made: dict[int, list[str]] = {}
_held: dict[int, dict[str, str]] = {}
#: per process: the shared tags it used and the image each named then
_refs: dict[int, dict[str, str]] = {}


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
    return _FROM.findall(text)


def hold_alive(tag: str) -> bool:
    """Whether the process a hold tag names may still be running (a tag that is no hold of
    this form counts as alive): ``owner_alive`` of the pid and start time it carries."""
    found = _HOLD_TAG.match(tag)
    return found is None or owner_alive({OWNER: found["pid"], STARTED: found["started"]})


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
                tag = f"{image_id.split(':')[-1][:12]}-{os.getpid()}-{start_time(os.getpid()) or 0}"
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
        """Drop this process's holds (at exit)."""
        for tag in _held.pop(os.getpid(), {}).values():
            try:
                self._api.remove_image(f"{HOLD_REPOSITORY}:{tag}", force=False)
            except Exception:  # noqa: BLE001 - best effort at exit: the reaper removes what is left
                pass

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
        nothing is removed); True when it was removed. A hold that came in meanwhile gets
        the tag back."""
        try:
            image_id = self._api.inspect_image(ref)["Id"]
        except docker.errors.NotFound:
            return True
        if self.holders(image_id):
            return False
        self._release(image_id)
        try:
            self._api.remove_image(ref, force=False)
        except docker.errors.APIError:
            return False  # a container or a child image still uses it
        if self.holders(image_id):
            self._restore(ref, image_id)
            return False
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
            try:
                self._api.remove_image(f"{HOLD_REPOSITORY}:{tag}", force=False)
            except docker.errors.APIError:
                pass

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
