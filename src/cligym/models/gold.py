"""The GoldEnv record: a healthy environment whose selected tests pass every time."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from cligym import __version__
from cligym.models.registry import RegistryImage


class Source(BaseModel):
    """Where a gold environment came from."""

    kind: Literal["pypi", "local", "image", "debian"]
    spec: str  # "name==version", a directory path, an image reference, or "deb:source=version"
    name: str
    version: str
    sdist_sha256: str | None = None


class SuiteSample(BaseModel):
    """How a gold suite was run within its time budget (``cligym.gold.shards``): its files
    split between ``shards`` containers a run, and, when the whole suite would not fit, the
    seeded sample of its files kept (stratified by package) and the files left out, with why."""

    budget_seconds: float
    shards: int
    seed: int
    files: int  # test files found
    tests: int | None  # tests collected (None: the files were found by name, their collection took too long)
    found_by: Literal["collection", "listing"] = "collection"
    packages: int  # folders holding test files
    kept_packages: int
    kept_files: list[str]  # in the suite's collection order
    left_out_files: dict[str, str] = Field(default_factory=dict)
    #: one run of the whole suite in one container, estimated from the pilot's cost per test
    estimated_seconds: float | None = None
    #: what the budget covered took together: the image's build (and any repair build) and
    #: the suite's runs (the first pass, the repeats, the run by id)
    seconds: float = 0.0
    #: the most test files one container of the first pass ran to its end: a later run puts
    #: no more in one (one process running a huge suite's files may reach its memory limit)
    shard_files: int | None = None

    @property
    def whole(self) -> bool:
        return not self.left_out_files


class GoldEnv(BaseModel):
    schema_version: int = 1
    cligym_version: str = __version__
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    source: Source
    image: str  # content-addressed tag (or the user's image for kind "image")
    image_id: str
    base_image: str | None = None
    python: str  # interpreter path inside the image
    python_version: str
    workdir: str
    test_command: str  # run in workdir; pytest node ids may be appended
    requirements: list[str] = Field(default_factory=list)  # installed beside the project
    requirements_from: list[str] = Field(default_factory=list)  # where the project declared them
    #: requirements the automatic repair round added, and what in the first run asked for each
    inferred: dict[str, str] = Field(default_factory=dict)
    runs: int
    tests: list[str]  # node ids that passed on every run
    flaky: list[str] = Field(default_factory=list)  # passed on some runs only
    failing: list[str] = Field(default_factory=list)  # failed or errored on every run
    skipped: list[str] = Field(default_factory=list)
    left_out: dict[str, str] = Field(default_factory=dict)  # failing/skipped tests, unimportable modules: why
    durations: dict[str, float] = Field(default_factory=dict)  # mean seconds per kept test
    build_seconds: float = 0.0
    test_seconds: list[float] = Field(default_factory=list)  # wall time of each full run
    #: how the suite was run within its time budget (None: run whole, one container a run)
    suite: SuiteSample | None = None
    image_bytes: int = 0
    #: where the image was pushed ('cligym images push'), newest last, one record per registry
    registry_images: list[RegistryImage] = Field(default_factory=list)
