"""What a run, the reaper and ``cligym clean`` may remove, and finding it.

A run removes the scratch images it named (``remove_image``, ``remove_scratch_images``);
the reaper removes what runs of this host and pid namespace that have ended left
(``reapable_images``); ``cligym clean --images`` also removes untagged leftovers older than
any build, and with ``--cache`` old cache images nothing uses (``stale_images``). Which
image is scratch and which a cache entry is said by its name (``cligym.runtime.names``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

import docker
import docker.errors

from cligym.config import LABEL
from cligym.runtime.common import OWNER
from cligym.runtime.images import Images
from cligym.runtime.names import CACHE_PREFIXES, scratch
from cligym.runtime.owner import RUN, owned, owner_alive, run_id
from cligym.runtime.translate import engine_call


class Removals(Images):
    """Images, and what of them may go (``Runtime`` joins it to the rest)."""

    @engine_call("cannot list images")
    def dead_images(self) -> dict[str, list[str]]:
        """The images (id -> tags, none for an untagged one) built or committed by a run
        that has ended; images of live runs, of other hosts, or with no owner (the base
        image, loaded images) are left out. Which of them to remove is the caller's choice."""
        return _dead(self._api.images(all=True, filters={"label": OWNER}))  # build steps carry the labels too

    @engine_call("cannot list images")
    def reapable_images(self) -> dict[str, list[str]]:
        """The dead runs' images (``dead_images``) a reaper may remove: those whose every
        tag names a scratch image, and untagged ones that are no other image's parent (a
        gold image's build steps stay under it as long as it does, and asking the engine to
        remove each of hundreds in vain took seconds at the start of every command; the
        removal of an image takes its untagged parents with it). One listing of every image
        says both who made each and who is built on which."""
        images = self._api.images(all=True)
        parents = {image["ParentId"] for image in images if image.get("ParentId")}
        return {image_id: tags for image_id, tags in _dead(images).items()
                if all(scratch(t) for t in tags) and (tags or image_id not in parents)}

    @engine_call("cannot list images")
    def stale_images(self, older_than: float, *, cache: bool = False) -> dict[str, list[str]]:
        """Images with the cligym label created more than ``older_than`` seconds ago that no
        live build can still be making (``older_than`` is at least the longest build):
        untagged ones, and with ``cache`` those whose every tag names a cache image."""
        cutoff = time.time() - older_than
        found = {}
        for image in self._api.images(filters={"label": LABEL}):
            tags = _tags(image)
            if image.get("Created", cutoff) < cutoff and (
                not tags or cache and all(t.startswith(CACHE_PREFIXES) for t in tags)
            ):
                found[image["Id"]] = tags
        return found

    @engine_call("cannot list images")
    def own_images(self) -> dict[str, list[str]]:
        """The images (id -> tags) this process made that are not cache entries: its scratch
        images and its untagged ones (build steps, commits)."""
        found = {image["Id"]: _tags(image) for image in self._api.images(filters={"label": f"{RUN}={run_id()}"})}
        return {image_id: tags for image_id, tags in found.items() if all(scratch(t) for t in tags)}

    def remove_scratch_images(self) -> None:
        """Remove the scratch images this process made (by tag: ``cligym.runtime.names``)."""
        for image in self._api.images(filters={"label": f"{RUN}={run_id()}"}):
            for tag in image.get("RepoTags") or []:
                if scratch(tag):
                    self.remove_image(tag)

    @engine_call("cannot remove images")
    def remove_unused(self, images: Mapping[str, list[str]]) -> int:
        """Remove ``images`` (id -> tags) by tag, or by id when untagged, without force: the
        engine keeps one a container or a child image uses. Returns how many went."""
        removed = 0
        for image_id, tags in images.items():
            try:
                for ref in tags or [image_id]:
                    self._api.remove_image(ref, force=False)
                removed += 1
            except docker.errors.APIError:
                pass
        return removed

    @engine_call("cannot remove images")
    def remove_labelled_images(self) -> int:
        """Remove every (tagged or top-level) image carrying the cligym label; returns how
        many there were."""
        image_ids = self._api.images(filters={"label": LABEL}, quiet=True)
        for image_id in image_ids:
            try:
                self._api.remove_image(image_id, force=True)
            except docker.errors.APIError:
                pass
        return len(image_ids)

    def _remove_listed(self, images: Mapping[str, list[str]]) -> int:
        """Remove ``images`` (id -> tags): tagged ones by tag (``remove_image``), untagged
        ones by id (``remove_images``). Returns how many went (a tagged one counts as gone)."""
        for tags in images.values():
            for tag in tags:
                self.remove_image(tag)
        untagged = {image_id for image_id, tags in images.items() if not tags}
        return self.remove_images(untagged) + len(images) - len(untagged)


def _dead(images: Iterable[Mapping]) -> dict[str, list[str]]:
    """Those of ``images`` (as the engine lists them) whose owning run has ended (``owner_alive``)."""
    return {image["Id"]: _tags(image) for image in images
            if owned(image.get("Labels")) and not owner_alive(image.get("Labels"))}


def _tags(image: Mapping) -> list[str]:
    """The tags of an image as the engine lists it (an untagged one has none)."""
    return [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
