"""The run ledger: one SQLite file holding every unit of a dataset build and its state.

Units are keyed ``kind/name`` (``gold/<project>``, ``invert/<project>``,
``attempt/<project>/<NNNN>``, ``export/<project>``, ``validate/<task>``, ``bundle/all``).
Only the build's head process writes; ``cligym dataset status`` reads while a build runs
(WAL journal: readers never wait for the writer). Every change is one committed
transaction, so a kill -9 loses at most the change being written, and what a unit
produced is on disk before the ledger says it is done: a unit found ``running`` by the
next build belonged to a dead head and runs again (units are idempotent).
"""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

from cligym.errors import BadInput

_SCHEMA = """
CREATE TABLE IF NOT EXISTS units (
    key TEXT PRIMARY KEY,
    project TEXT NOT NULL,
    kind TEXT NOT NULL,
    state TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT '',
    node TEXT NOT NULL DEFAULT '',
    runs INTEGER NOT NULL DEFAULT 0,
    started REAL,
    finished REAL,
    seconds REAL NOT NULL DEFAULT 0,
    oracle REAL,
    nop REAL
);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


class Ledger:
    """The units of one dataset build (``path``: DIR/ledger.sqlite)."""

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        if readonly and not path.is_file():
            raise BadInput(f"{path} does not exist (no dataset build has started in {path.parent})")
        uri = f"file:{path}?mode=ro" if readonly else f"file:{path}"
        try:
            self.db = sqlite3.connect(uri, uri=True, timeout=30, isolation_level=None)
            if not readonly:
                self.db.execute("PRAGMA journal_mode=WAL")
                self.db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise BadInput(f"cannot open the ledger {path}: {exc}") from exc
        self.db.row_factory = sqlite3.Row

    def close(self) -> None:
        self.db.close()

    def _write(self, sql: str, args: tuple = ()) -> int:
        """Run ``sql`` as one transaction, committed before the call returns; the rows it changed."""
        with self.db:
            self.db.execute("BEGIN IMMEDIATE")
            return self.db.execute(sql, args).rowcount

    def add_wall(self, seconds: float) -> None:
        """Count ``seconds`` more of building (called every few seconds: a killed build
        loses at most the last few)."""
        self._write("INSERT INTO meta(name, value) VALUES ('wall_seconds', ?) ON CONFLICT(name) "
                    "DO UPDATE SET value = CAST(CAST(value AS REAL) + ? AS TEXT)", (repr(seconds), seconds))

    def wall_seconds(self) -> float:
        """The seconds every build of the directory spent, together."""
        row = self.db.execute("SELECT value FROM meta WHERE name = 'wall_seconds'").fetchone()
        return float(row["value"]) if row else 0.0

    def add(self, key: str, project: str) -> None:
        """Record a unit as pending unless it is known already."""
        kind = key.split("/", 1)[0]
        self._write("INSERT OR IGNORE INTO units(key, project, kind, state) VALUES (?, ?, ?, 'pending')",
                    (key, project, kind))

    def state(self, key: str) -> str | None:
        row = self.db.execute("SELECT state FROM units WHERE key = ?", (key,)).fetchone()
        return row["state"] if row else None

    def start(self, key: str) -> None:
        self._write("UPDATE units SET state = 'running', runs = runs + 1, started = ?, finished = NULL "
                    "WHERE key = ?", (time.time(), key))

    def finish(self, key: str, *, ok: bool, detail: str = "", node: str = "", seconds: float = 0.0,
               oracle: float | None = None, nop: float | None = None) -> None:
        self._write("UPDATE units SET state = ?, detail = ?, node = ?, finished = ?, seconds = seconds + ?, "
                    "oracle = ?, nop = ? WHERE key = ?",
                    ("done" if ok else "failed", detail[:500], node, time.time(), seconds, oracle, nop, key))

    def pause(self, key: str, *, detail: str = "", seconds: float = 0.0) -> None:
        """A unit stopped at the build's deadline with work left: pending again, its seconds kept."""
        self._write("UPDATE units SET state = 'pending', detail = ?, seconds = seconds + ? WHERE key = ?",
                    (detail[:500], seconds, key))

    def record(self, key: str, project: str, state: str, detail: str = "", seconds: float = 0.0) -> None:
        """A unit finished elsewhere (an attempt inside a project's inversion), as found on disk."""
        kind = key.split("/", 1)[0]
        self._write("INSERT INTO units(key, project, kind, state, detail, finished, seconds) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET state = excluded.state, "
                    "detail = excluded.detail, seconds = excluded.seconds",
                    (key, project, kind, state, detail[:500], time.time(), seconds))

    def reset_running(self) -> int:
        """Units a dead head left ``running`` become pending again; returns how many."""
        return self._write("UPDATE units SET state = 'pending' WHERE state = 'running'")

    def reset_failed(self) -> int:
        """Failed units (not attempts) become pending again, and so does the export of a
        project with a failed validation (the dataset dropped that task's directory);
        returns how many failed."""
        self._write("UPDATE units SET state = 'pending' WHERE kind = 'export' AND project IN "
                    "(SELECT project FROM units WHERE kind = 'validate' AND state = 'failed')")
        return self._write("UPDATE units SET state = 'pending' WHERE state = 'failed'")

    def rows(self, kind: str | None = None, project: str | None = None) -> list[sqlite3.Row]:
        """The units, by key; only those of ``kind`` and of ``project`` where given."""
        return self.db.execute("SELECT * FROM units WHERE (? IS NULL OR kind = ?) AND (? IS NULL OR project = ?) "
                               "ORDER BY key", (kind, kind, project, project)).fetchall()
