"""The task table as the Hugging Face Hub lays out a dataset, beside tasks.jsonl: the same
rows as one Parquet file (``TaskTable.parquet``) and a dataset card (``TaskTable.card``)
whose YAML metadata names that file as the ``train`` split, so that
``datasets.load_dataset(folder)`` reads only it (not tasks.jsonl, nor anything else in
the folder). The Arrow schema comes from ``TaskRow``'s fields, so a column of nulls (no
task measured) keeps its type; the card's ``dataset_info.features`` comes from that schema.

Both files are written atomically (``write_atomic``): a killed run leaves the old file or
the new one, never half of one.
"""

from __future__ import annotations

import types
import typing
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import DatasetCard, DatasetCardData
from pydantic import BaseModel

from cligym.layout import TaskTable
from cligym.models.export import TaskRow
from cligym.models.io import write_atomic
from cligym.models.task import LABELS

#: One line per column of the card's body; every field of ``TaskRow`` has one (a unit test checks).
COLUMNS: dict[str, str] = {
    "instance_id": "the task's id, unique in the dataset",
    "repo": "the healthy project the task was made from, as name==version",
    "image_name": "the gold image: the healthy environment, in which the tests pass, that the task's Dockerfile "
                  "builds FROM",
    "dockerfile": "the Dockerfile lines that follow FROM and break the environment (one per line)",
    "FAIL_TO_PASS": "the tests that fail in the broken environment and must pass after the repair",
    "PASS_TO_PASS": "the tests that pass in the broken environment and must still pass after the repair",
    "problem_statement": "the issue an agent is given, without a hint",
    "problem_statement_hint": "the same issue with a hint paragraph",
    "category": "the kind of environment fault (e.g. filesystem_permissions)",
    "operators": "the names of the changes that broke the environment",
    "solution": "the reference repair, a shell script",
    "test_command": "the command that runs the tests",
    "workdir": "the folder the tests run in, inside the image",
    "offline_fair": "true when the repair needs neither the network nor bytes only the reference repair carries "
                    "(null: not known)",
    "difficulty": "the difficulty measured without a model: k, reveal_depth, culprit_named, sweeper_solves, "
                  "breadth, subsystems and label (easy, medium or hard); null when not measured",
    "scenario": "the incident scenario the changes model (empty when the task is one change)",
}

#: Arrow types of the scalar fields, and the name the datasets library gives each.
SCALARS: dict[type, pa.DataType] = {str: pa.string(), bool: pa.bool_(), int: pa.int64(), float: pa.float64()}
DTYPES: dict[pa.DataType, str] = {pa.string(): "string", pa.bool_(): "bool", pa.int64(): "int64",
                                  pa.float64(): "float64"}

PRETTY_NAME = "cligym environment-repair tasks"
TAGS = ["cligym", "environment-repair", "docker", "agents", "code"]
TASK_CATEGORIES = ["text-generation"]
#: The Hub's size buckets, each with the number of rows it holds fewer than.
SIZES = [(10**3, "n<1K"), (10**4, "1K<n<10K"), (10**5, "10K<n<100K"), (10**6, "100K<n<1M"),
         (10**7, "1M<n<10M"), (10**8, "10M<n<100M"), (10**9, "100M<n<1B")]


def arrow_type(annotation: typing.Any) -> pa.DataType:
    """The Arrow type of a record field: a scalar, a Literal of strings (a string), a list,
    a nested record (a struct); ``X | None`` is ``X`` (every Arrow column may hold nulls)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        kept = [a for a in args if a is not type(None)]
        if len(kept) == 1:
            return arrow_type(kept[0])
    elif origin is list and len(args) == 1:
        return pa.list_(arrow_type(args[0]))
    elif origin is typing.Literal and all(isinstance(a, str) for a in args):
        return pa.string()
    elif isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return pa.struct([(name, arrow_type(field.annotation)) for name, field in annotation.model_fields.items()])
    elif annotation in SCALARS:
        return SCALARS[annotation]
    raise TypeError(f"no Arrow type for the field type {annotation!r}")


def task_schema() -> pa.Schema:
    """The table's schema: ``TaskRow``'s fields, in their order (tasks.jsonl's key order)."""
    return pa.schema([(name, arrow_type(field.annotation)) for name, field in TaskRow.model_fields.items()])


def task_table(rows: list[TaskRow]) -> pa.Table:
    return pa.Table.from_pylist([r.model_dump(mode="json") for r in rows], schema=task_schema())


def _feature_type(dtype: pa.DataType) -> dict:
    """One type in the datasets library's YAML form (``Features._to_yaml_list``)."""
    if pa.types.is_struct(dtype):
        return {"struct": [{"name": field.name, **_feature_type(field.type)} for field in dtype]}
    if pa.types.is_list(dtype):
        inner = _feature_type(dtype.value_type)
        return {"list": inner.get("dtype") or inner.get("struct") or inner}
    if dtype in DTYPES:
        return {"dtype": DTYPES[dtype]}
    raise TypeError(f"no datasets feature for the Arrow type {dtype}")


def features(schema: pa.Schema) -> list[dict]:
    """The card's ``dataset_info.features``, derived from the Parquet schema."""
    return [{"name": field.name, **_feature_type(field.type)} for field in schema]


def size_category(count: int) -> str:
    return next((name for limit, name in SIZES if count < limit), "1B<n<10B")


def card_data(where: TaskTable, table: pa.Table, parquet_bytes: int) -> DatasetCardData:
    """The card's metadata: the Parquet file as the train split of the default config, its
    features, and its size (rows; bytes in memory, ``num_bytes``; bytes of the file)."""
    parquet = where.parquet.relative_to(where.path).as_posix()
    return DatasetCardData(
        pretty_name=PRETTY_NAME, license="other", language=["en"], tags=TAGS, task_categories=TASK_CATEGORIES,
        size_categories=[size_category(table.num_rows)],
        configs=[{"config_name": "default", "data_files": [{"split": "train", "path": parquet}]}],
        dataset_info={"config_name": "default", "features": features(table.schema),
                      "splits": [{"name": "train", "num_bytes": table.nbytes, "num_examples": table.num_rows}],
                      "download_size": parquet_bytes, "dataset_size": table.nbytes},
    )


def _count_lines(counts: Counter[str], order: list[str]) -> list[str]:
    return [f"| {name} | {counts[name]} |" for name in order if counts[name]]


def card_body(where: TaskTable, rows: list[TaskRow]) -> str:
    """The card's text: what the rows are, each column, the counts, and how to load them."""
    categories = Counter(r.category for r in rows)
    labels = Counter(r.difficulty.label if r.difficulty else "not measured" for r in rows)
    jsonl = where.jsonl.name
    lines = [
        f"# {PRETTY_NAME}", "",
        "Environment-repair tasks for coding agents, made by cligym from healthy projects: each task starts",
        "from a project's gold image, in which its tests pass, and breaks the environment (not the code) with",
        "a few Dockerfile lines; an agent must repair the environment until the tests pass again. Each row's",
        "`image_name` is the gold image the task's Dockerfile builds FROM: the tasks need those images.", "",
        f"{len(rows)} tasks. The same rows, one JSON object a line, are in `{jsonl}` beside this card.", "",
        "## Columns", "",
        *(f"- `{name}`: {COLUMNS.get(name, 'see TaskRow in cligym')}" for name in TaskRow.model_fields), "",
        "## Tasks by category", "", "| category | tasks |", "| --- | --- |",
        *_count_lines(categories, sorted(categories, key=lambda c: (-categories[c], c))), "",
        "## Tasks by difficulty", "", "| difficulty | tasks |", "| --- | --- |",
        *_count_lines(labels, [*LABELS, "not measured"]), "",
        "## Loading", "",
        "```python", "import datasets", "",
        'tasks = datasets.load_dataset("path/to/this/folder", split="train")', "```", "",
        "The card's `configs` name the Parquet file as the train split, so only it is read.", "",
    ]
    return "\n".join(lines)


def write_hub_files(where: TaskTable, rows: list[TaskRow]) -> None:
    """The rows (tasks.jsonl's, in its order) as Parquet, then the dataset card naming it."""
    table = task_table(rows)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    parquet = sink.getvalue().to_pybytes()
    write_atomic(where.parquet, parquet)
    card = DatasetCard(f"---\n{card_data(where, table, len(parquet)).to_yaml()}\n---\n{card_body(where, rows)}")
    write_atomic(where.card, str(card))
