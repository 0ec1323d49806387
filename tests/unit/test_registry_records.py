"""Registry names and the records of pushed images (no engine, no registry)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cligym.errors import BadInput
from cligym.models.gold import GoldEnv
from cligym.models.registry import RegistryImage, RegistryIndex, registry_name


@pytest.mark.parametrize("text", ["127.0.0.1:5000", "localhost:5000", "localhost", "registry.example",
                                  "registry.example:443/team/sub", "[::1]:5000", " 127.0.0.1:5000/ "])
def test_a_registry_name_docker_accepts(text):
    assert registry_name(text) == text.strip().rstrip("/")


@pytest.mark.parametrize("text, why", [
    ("http://127.0.0.1:5000", "without http://"), ("https://registry.example", "without https://"),
    ("myregistry", "is not host[:port]"), ("127.0.0.1:99999", "out of range"), ("reg.example/Team", "is not"),
    ("", "is not"),
])
def test_a_name_that_is_no_registry_is_one_clear_error(text, why):
    with pytest.raises(BadInput, match="registry") as caught:
        registry_name(text)
    assert why in str(caught.value)


def record(image: str, registry: str, digest_char: str, age: int = 0) -> RegistryImage:
    repo, tag = image.split(":")
    return RegistryImage(image=image, image_id="sha256:" + "1" * 64, registry=registry, repository=f"{registry}/{repo}",
                         tag=tag, digest="sha256:" + digest_char * 64,
                         pushed_at=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(minutes=age))


def test_a_record_names_the_image_by_tag_and_pins_it_by_digest():
    r = record("cligym/gold-x:1.0-abc", "127.0.0.1:5000", "a")
    assert r.reference == "127.0.0.1:5000/cligym/gold-x:1.0-abc"
    assert r.pinned == "127.0.0.1:5000/cligym/gold-x@sha256:" + "a" * 64


def test_an_index_keeps_one_record_per_image_and_registry():
    index = RegistryIndex()
    index = index.with_image(record("cligym/gold-x:1", "127.0.0.1:5000", "a"))
    index = index.with_image(record("cligym/gold-x:1", "127.0.0.1:6000", "b", age=1))
    index = index.with_image(record("cligym/gold-x:1", "127.0.0.1:5000", "c", age=2))  # pushed again
    assert len(index.images) == 2
    assert index.find("cligym/gold-x:1", "127.0.0.1:5000").digest == "sha256:" + "c" * 64
    assert index.find("cligym/gold-x:1").digest == "sha256:" + "c" * 64  # the newest anywhere
    assert index.find("cligym/gold-y:1") is None and index.find("cligym/gold-x:1", "elsewhere:1") is None
    assert RegistryIndex.model_validate_json(index.model_dump_json()) == index


def test_a_gold_record_written_before_registries_still_loads():
    fields = {"source": {"kind": "pypi", "spec": "x==1", "name": "x", "version": "1"}, "image": "cligym/gold-x:1",
              "image_id": "sha256:" + "1" * 64, "python": "/usr/bin/python3", "python_version": "3.11",
              "workdir": "/testbed", "test_command": "pytest", "runs": 3, "tests": ["t.py::t"]}
    assert GoldEnv.model_validate(fields).registry_images == []
