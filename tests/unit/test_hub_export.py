"""tasks.jsonl's Hub-loadable twin: the same rows as Parquet under data/ and a dataset card
whose metadata names that file as the train split, written by the jsonl export and by a
dataset build's join (driven here with a hand-made ledger and Harbor task directories).
Everything is read back with the datasets library, offline: no engine, no network."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub import DatasetCard

from cligym.dataset.ledger import Ledger
from cligym.dataset.summary import _join
from cligym.models.dataset import DatasetPlan
from cligym.export.hub import COLUMNS, size_category, task_schema, write_hub_files
from cligym.export.jsonl import JsonlExporter, read_rows, row, write_rows
from cligym.export.stage import export
from cligym.layout import DatasetDir, ExportDir, RunDir, TaskTable
from cligym.models.export import ExportReport, TaskRow
from cligym.models.io import load, save
from cligym.models.task import AppliedChange, Task
from tests.unit.test_difficulty_export import _cli, issues, make_task


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    """Never the Hub: the variables, and the flags the libraries read from them at import."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


def hf_load(folder: Path, tmp_path: Path, **kwargs):
    import datasets

    return datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"), **kwargs)


def tasks() -> list[Task]:
    """Two categories; hard, easy and unmeasured (difficulty None, offline fairness unknown)."""
    hard = make_task("demo.h", "hard", scenario="a botched upgrade").model_copy(
        update={"applied": [AppliedChange(name=name, category="python_packaging", target="", symptom="", hint="")
                            for name in ("wheel_gone", "pip_conf_bad")]})
    easy = make_task("demo.e", "easy")
    unmeasured = make_task("demo.u").model_copy(update={"offline_fair": None})
    return [hard, easy, unmeasured]


def jsonl_rows(table: TaskTable) -> list[dict]:
    return [json.loads(text) for text in table.jsonl.read_text(encoding="utf-8").splitlines() if text.strip()]


def exported(tmp_path: Path, name: str = "out") -> ExportDir:
    out = ExportDir(tmp_path / name)
    out.path.mkdir()
    JsonlExporter().export([(t, issues(t)) for t in tasks()], out, style="strong", hint=False)
    return out


def assert_same_rows(found: list[dict], expected: list[dict]) -> None:
    """Row by row, field by field, in tasks.jsonl's order."""
    assert len(found) == len(expected)
    for got, want in zip(found, expected, strict=True):
        assert list(got) == list(want), "the columns or their order differ"
        for field in want:
            assert got[field] == want[field], f"{want['instance_id']}: {field}"


def card_counts(text: str, heading: str) -> dict[str, int]:
    """The ``| name | count |`` rows of a section of the card's body."""
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"^\| (.+?) \| (\d+) \|$", section, re.MULTILINE)
    return {name: int(count) for name, count in found}


# -- the jsonl export ------------------------------------------------------------------------


def test_the_folder_loads_as_the_rows_of_tasks_jsonl(tmp_path):
    out = exported(tmp_path)
    expected = jsonl_rows(out)
    assert [r["instance_id"] for r in expected] == ["demo.h", "demo.e", "demo.u"]
    assert expected[0]["difficulty"]["label"] == "hard" and expected[2]["difficulty"] is None
    ds = hf_load(out.path, tmp_path, split="train")
    assert ds.column_names == list(TaskRow.model_fields) == list(expected[0])
    assert_same_rows([dict(r) for r in ds], expected)
    # pyarrow alone reads the same, and the struct keeps its type where every row is null
    assert_same_rows(pq.read_table(out.parquet).to_pylist(), expected)
    assert pq.read_schema(out.parquet).field("difficulty").type == task_schema().field("difficulty").type
    assert pa.types.is_struct(task_schema().field("difficulty").type)
    assert not list(out.path.rglob(".*.tmp"))


def test_a_column_of_nulls_keeps_its_type(tmp_path):
    table = TaskTable(tmp_path / "t")
    unmeasured = [make_task(f"demo.u{i}") for i in range(2)]
    write_rows(table, [row(t, issues(t), "strong") for t in unmeasured])
    ds = hf_load(table.path, tmp_path, split="train")
    assert ds["difficulty"] == [None, None] and set(ds.features["difficulty"]) >= {"k", "label"}
    assert_same_rows([dict(r) for r in ds], jsonl_rows(table))


def test_the_card_names_the_parquet_file_and_counts_the_rows(tmp_path):
    import datasets

    out = exported(tmp_path)
    card = DatasetCard.load(out.card)
    data = card.data.to_dict()
    parquet = out.parquet.relative_to(out.path).as_posix()
    assert data["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": parquet}]}]
    assert data["license"] == "other" and data["pretty_name"] and "environment-repair" in data["tags"]
    assert data["task_categories"] and data["size_categories"] == ["n<1K"]
    assert data["dataset_info"]["splits"][0]["num_examples"] == 3
    # the datasets library reads the same: only the Parquet file, with the features of its schema
    builder = datasets.load_dataset_builder(str(out.path), cache_dir=str(tmp_path / "hf-cache"))
    assert [str(f) for f in builder.config.data_files["train"]] == [str(out.parquet)]
    assert builder.info.features == datasets.Features.from_arrow_schema(pq.read_schema(out.parquet))
    # the body: one line per column, the counts of the rows, how to load it
    rows = jsonl_rows(out)
    assert card_counts(card.text, "Tasks by category") == Counter(r["category"] for r in rows)
    assert card_counts(card.text, "Tasks by difficulty") == {"hard": 1, "easy": 1, "not measured": 1}
    for column in TaskRow.model_fields:
        assert f"- `{column}`: {COLUMNS[column]}" in card.text
    assert "`image_name` is the gold image the task's Dockerfile builds FROM" in " ".join(card.text.split())
    assert "datasets.load_dataset(" in card.text and "made by cligym from healthy projects" in card.text


def test_only_the_cards_file_loads_beside_other_data_files(tmp_path):
    """Stray data files a folder may hold (another JSON file; a Hub-style shard of another
    split; a Harbor task, which the datasets library takes for a test split) stay out: the
    card's ``configs`` name the one file. A card without them fails the same check."""
    out = exported(tmp_path)
    (out.path / "stray.json").write_text('{"a": 1}\n')
    (out.parquet.parent / "test-00000-of-00001.json").write_text('{"a": 1}\n')
    (out.path / "harbor" / "t").mkdir(parents=True)
    (out.path / "harbor" / "t" / "task.toml").write_text('[task]\nname = "cligym/t"\n')
    (out.path / "harbor" / "t" / "instruction.md").write_text("fix it\n")
    naive = ExportDir(tmp_path / "naive")
    shutil.copytree(out.path, naive.path)

    loaded = hf_load(out.path, tmp_path)
    assert list(loaded) == ["train"]
    assert_same_rows([dict(r) for r in loaded["train"]], jsonl_rows(out))

    card = DatasetCard.load(naive.card)
    card.data.configs = None
    card.save(naive.card)
    try:
        got = {split: part.num_rows for split, part in hf_load(naive.path, tmp_path / "naive-cache").items()}
    except ValueError:  # the library cannot mix the formats it found
        got = None
    assert got != {"train": 3}


def test_the_export_report_and_cli_name_the_files(tmp_path):
    run = RunDir(tmp_path / "run")
    for task in tasks():
        save(task, run.task_record(task.instance_id))
        save(issues(task), run.issues(task.instance_id))
    out = ExportDir(tmp_path / "out")
    report = export(run.path, "jsonl", out.path)
    assert (report.parquet, report.card) == (str(out.parquet), str(out.card))
    assert load(ExportReport, out.report) == report
    assert sorted(r.instance_id for r in read_rows(out)) == sorted(report.tasks) == ["demo.e", "demo.h"]
    assert pq.read_table(out.parquet).column("instance_id").to_pylist() == [r.instance_id for r in read_rows(out)]
    assert ExportReport.model_validate(
        {"format": "harbor", "hint": False, "style": "strong", "output": "x"}).parquet is None
    again = ExportDir(tmp_path / "again")
    proc = _cli(str(run.path), "-f", "jsonl", "-o", str(again.path))
    assert proc.returncode == 0, proc.stderr
    assert (f"the same rows as Parquet, {again.parquet}, with the dataset card {again.card}"
            in " ".join(proc.stdout.split()))
    proc = _cli(str(run.path), "-f", "jsonl", "-o", str(again.path), "--force", "--json")
    assert proc.returncode == 0, proc.stderr
    assert ((json.loads(proc.stdout)["parquet"], json.loads(proc.stdout)["card"])
            == (str(again.parquet), str(again.card)))


# -- the dataset build's join ----------------------------------------------------------------


def harbor_task(dataset: DatasetDir, name: str) -> None:
    task = dataset.harbor.task(name)
    task.path.mkdir(parents=True)
    task.task_toml.write_text(f'version = "1.0"\n[task]\nname = "cligym/{name}"\n')
    task.instruction.write_text(f"fix {name}\n")


def test_the_dataset_join_writes_the_table_of_its_validated_tasks(tmp_path):
    """Two projects' staged exports (each with its own Parquet and card, under projects/);
    one task failed validation. The dataset's folder also holds harbor/ and the ledger:
    only the joined rows load."""
    dataset = DatasetDir(tmp_path / "ds")
    dataset.path.mkdir()
    ledger = Ledger(dataset.ledger)
    made = {"p1": tasks()[:2], "p2": [make_task("demo.z", "medium"), make_task("demo.x", "easy")]}
    for project, project_tasks in made.items():
        staging = ExportDir(dataset.staging(project, "jsonl"))
        staging.path.mkdir(parents=True)
        JsonlExporter().export([(t, issues(t)) for t in project_tasks], staging, style="strong", hint=False)
        for task in project_tasks:
            harbor_task(dataset, task.instance_id)
            ledger.record(f"validate/{task.instance_id}", project, "failed" if task.instance_id == "demo.x" else "done")
    good, left, _ = _join(dataset, ledger, DatasetPlan(seed=1, projects=[]))
    ledger.close()
    assert good == ["demo.e", "demo.h", "demo.z"] and not dataset.harbor.task("demo.x").path.exists()
    assert left == {}
    staged = {json.loads(text)["instance_id"]: text for project in made
              for text in ExportDir(dataset.staging(project, "jsonl")).jsonl.read_text().splitlines()}
    assert dataset.jsonl.read_text() == "".join(staged[k] + "\n" for k in good)  # the rows as staged
    expected = jsonl_rows(dataset)
    assert_same_rows([dict(r) for r in hf_load(dataset.path, tmp_path, split="train")], expected)
    assert_same_rows(pq.read_table(dataset.parquet).to_pylist(), expected)
    card = DatasetCard.load(dataset.card)
    assert card.data.configs[0]["data_files"] == [{"split": "train", "path": "data/train-00000-of-00001.parquet"}]
    assert card_counts(card.text, "Tasks by category") == {"filesystem_permissions": 2, "python_packaging": 1}
    assert card_counts(card.text, "Tasks by difficulty") == {"easy": 1, "medium": 1, "hard": 1}


def test_the_mix_moves_left_out_tasks_aside_and_a_later_join_takes_them_back(tmp_path, monkeypatch):
    """What the balance leaves out (cligym.dataset.mix, tested there) leaves harbor/ and the
    table for left-out/; when a later join keeps it, it comes back."""
    dataset = DatasetDir(tmp_path / "ds")
    dataset.path.mkdir()
    ledger = Ledger(dataset.ledger)
    staging = ExportDir(dataset.staging("p1", "jsonl"))
    staging.path.mkdir(parents=True)
    made = tasks()[:2]
    JsonlExporter().export([(t, issues(t)) for t in made], staging, style="strong", hint=False)
    for task in made:
        harbor_task(dataset, task.instance_id)
        ledger.record(f"validate/{task.instance_id}", "p1", "done")
    plan = DatasetPlan(seed=1, projects=[])
    monkeypatch.setattr("cligym.dataset.summary.balanced", lambda entries: {"demo.h": "over the share"})
    good, left, _ = _join(dataset, ledger, plan)
    assert good == ["demo.e"] and left == {"demo.h": "over the share"}
    assert (dataset.left_out / "demo.h" / "task.toml").is_file() and not dataset.harbor.task("demo.h").path.exists()
    assert [json.loads(r)["instance_id"] for r in dataset.jsonl.read_text().splitlines()] == ["demo.e"]
    assert "demo.h" not in dataset.manifest.read_text()
    harbor_task(dataset, "demo.h")  # a retry exports the task again: harbor/'s copy is the newer
    (dataset.harbor.task("demo.h").path / "new").write_text("")
    good, left, _ = _join(dataset, ledger, plan)
    assert (dataset.left_out / "demo.h" / "new").is_file() and not dataset.harbor.task("demo.h").path.exists()
    monkeypatch.setattr("cligym.dataset.summary.balanced", lambda entries: {})
    good, left, _ = _join(dataset, ledger, plan)
    ledger.close()
    assert good == ["demo.e", "demo.h"] and dataset.harbor.task("demo.h").task_toml.is_file()
    assert not (dataset.left_out / "demo.h").exists()


# -- the writer ------------------------------------------------------------------------------


def test_a_failed_write_leaves_the_old_files_whole(tmp_path, monkeypatch):
    """A write that dies (here: the disk refuses the sync) leaves the old Parquet file and
    card as they were, and no temporary file."""
    out = exported(tmp_path)
    before = {p: p.read_bytes() for p in (out.parquet, out.card)}
    rows = read_rows(out)[:1]

    def refuse(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_hub_files(out, rows)
    assert {p: p.read_bytes() for p in before} == before
    assert not [p for p in out.path.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.undo()
    write_hub_files(out, rows)
    assert pq.read_table(out.parquet).num_rows == 1


def test_every_column_has_a_line_and_a_type():
    assert list(COLUMNS) == list(TaskRow.model_fields) == task_schema().names


@pytest.mark.parametrize("count, bucket", [(0, "n<1K"), (999, "n<1K"), (1_000, "1K<n<10K"), (99_999, "10K<n<100K"),
                                           (100_000, "100K<n<1M"), (10**6, "1M<n<10M")])
def test_size_category(count, bucket):
    assert size_category(count) == bucket
