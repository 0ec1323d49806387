"""The dataset stage: a list of projects → one verified dataset (Harbor tasks with a
dataset.toml, JSONL rows, the gold image bundle), with a SQLite ledger that makes the
build resumable, worker processes on one machine, and Ray beyond it."""

from cligym.dataset.plan import make_plan
from cligym.dataset.stage import Budgets, build
from cligym.dataset.summary import dataset_status

__all__ = ["Budgets", "build", "dataset_status", "make_plan"]
