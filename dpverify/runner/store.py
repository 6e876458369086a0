"""The results store: SQLite through the standard library, one file, safe to kill at any moment.

One row per (problem content hash, options key, dpverify build): the spec.md result
object as JSON, the values `[expect]` entries are compared with, timings and a status.
The build (the `version` column) is `fingerprint.build_id()`, the version and a hash of
the package's source, so a code change never serves the old code's numbers. Each result is
committed on its own in WAL mode, so a batch killed even with SIGKILL loses at most the
problems in flight and never leaves a half-written row; the next run skips what is stored
and resumes.

Claims (the `claims` table) keep two runs on one store from computing a problem twice: a
run claims a problem (atomically, in one write transaction that also looks for a stored
row) before it starts it, and releases the claim once the result is stored. Another run
that finds the claim waits for that result instead of computing it. A claim names its
owner (`host:pid:token`) and carries a heartbeat that the owner refreshes while it runs;
a claim whose heartbeat is older than CLAIM_STALE seconds, or whose owner is a process of
this host that no longer exists, is stale, and anyone may take it over (a killed batch).

Every sqlite3 failure (a locked, corrupt or unwritable store) becomes an InputError
(exit 2) that names the store and says what to do: never a traceback.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import secrets
import socket
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from dpverify.cachedir import make_dirs
from dpverify.defaults import DEFAULT_STORE, MEMORY_STORE
from dpverify.errors import InputError
from dpverify.notebook import Notebook
from dpverify.records import record

if TYPE_CHECKING:
    from dpverify.verifiers.result import ProblemResult

SCHEMA_VERSION = "1"
MEMORY = MEMORY_STORE  # the path of a store held in memory (`--no-store`): nothing is written
BUSY_TIMEOUT = 10.0  # seconds to wait for another writer before calling the store locked
CLAIM_STALE = 60.0  # seconds without a heartbeat after which a claim may be taken over

# Statuses. `done` (verified, whatever the verdict) and `invalid` (the file is not a valid
# problem) are deterministic for a given content, options and version, so a re-run skips
# them. `timeout`, `crashed`, `failed` (out of memory, a lost worker) and `internal` (a bug
# met while verifying: exit 4) may not recur (a longer --timeout, more memory, a fixed
# bug): they are stored, so `dpverify results` shows them, but a re-run retries them.
class TaskStatus(enum.StrEnum):
    """What became of one problem in a batch (stored as its string value)."""

    DONE = "done"
    INVALID = "invalid"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    FAILED = "failed"
    INTERNAL = "internal"


DONE, INVALID, TIMEOUT, CRASHED, FAILED, INTERNAL = (
    TaskStatus.DONE, TaskStatus.INVALID, TaskStatus.TIMEOUT, TaskStatus.CRASHED,
    TaskStatus.FAILED, TaskStatus.INTERNAL)
STATUSES = tuple(TaskStatus)
FINAL_STATUSES = (DONE, INVALID)
_FINAL_SQL = "('done', 'invalid')"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS results (
    content_hash TEXT NOT NULL,      -- sha256 of the problem file's bytes
    options_key  TEXT NOT NULL,      -- canonical JSON of VerifyOptions.key()
    version      TEXT NOT NULL,      -- the dpverify build that computed the row
    source       TEXT NOT NULL,      -- the path the problem was last run from
    problem      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    status       TEXT NOT NULL,      -- done | invalid | timeout | crashed | failed | internal
    verdict      TEXT NOT NULL,      -- optimal | gap | error
    reason       TEXT NOT NULL,
    result_json  TEXT NOT NULL,      -- spec.md's result object
    values_json  TEXT NOT NULL,      -- [[agent, accuracy, optimum], ...] (what check compares)
    expect_json  TEXT NOT NULL,      -- the file's [expect] entries [[agent, accuracy, value]]
    seconds      REAL NOT NULL,      -- wall time in the worker
    worker       TEXT NOT NULL,      -- host:pid that computed it
    finished_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (content_hash, options_key, version)
);
CREATE INDEX IF NOT EXISTS results_verdict ON results (verdict);
CREATE TABLE IF NOT EXISTS claims (
    content_hash TEXT NOT NULL,
    options_key  TEXT NOT NULL,
    version      TEXT NOT NULL,
    owner        TEXT NOT NULL,      -- host:pid:token of the run computing it
    heartbeat    REAL NOT NULL,      -- unix time the owner last said it is alive
    PRIMARY KEY (content_hash, options_key, version)
);
"""


class ClaimAction(enum.StrEnum):
    """What a run may do with a problem (Store.claim): compute it (it holds the claim
    now), wait for another run that holds it, or reuse the row another run stored."""

    RUN = "run"
    WAIT = "wait"
    REUSE = "reuse"


@record
class ClaimResult:
    action: ClaimAction
    row: StoredResult | None = None  # REUSE: the stored row
    owner: str = ""  # WAIT: the run that holds the claim


def new_owner() -> str:
    """A claim owner for this run: `host:pid:token`."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"


def claim_stale(owner: str, heartbeat: float, now: float) -> bool:
    """Whether a claim may be taken over: no heartbeat for CLAIM_STALE seconds, or its
    owner is a process of this host that has exited."""
    if now - heartbeat > CLAIM_STALE:
        return True
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: is there such a process?
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's), or we cannot tell
        return False
    return False


def options_key(key: dict[str, Any]) -> str:
    """A canonical text for `VerifyOptions.key()` (sorted keys, no spaces)."""
    return json.dumps(key, sort_keys=True, separators=(",", ":"))


@record(repr=False)
class StoredResult(Notebook):
    """One row of the store; in a notebook, its result object's table."""

    notebook_columns = ("agent", "accuracy", "relaxed_optimum", "rr_value",
                        "mechanism_optimum", "geometric_value", "protocol_value", "gap",
                        "verdict", "method")

    content_hash: str
    options_key: str
    version: str
    source: str
    problem: str
    kind: str
    status: str
    verdict: str
    reason: str
    result: dict[str, Any]
    values: tuple[tuple[str, str, float | None], ...]
    expect: tuple[tuple[str, str, float, str], ...]
    seconds: float
    worker: str
    finished_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        """spec.md's result object, as it was stored."""
        return self.result

    @property
    def problem_result(self) -> ProblemResult:
        """The stored result object, typed (verifiers/dispatch.py, read_result)."""
        from dpverify.verifiers.dispatch import read_result

        return read_result(self.result)

    @property
    def final(self) -> bool:
        """Whether a re-run may skip this row (see FINAL_STATUSES)."""
        return self.status in FINAL_STATUSES

    def reusable(self, since: str, force: bool) -> bool:
        """Whether a run that started at `since` (Store.now) may take this row instead of
        computing: a final row (unless `force`), or any row stored since it started (by a
        concurrent run that held the claim)."""
        return (self.final and not force) or self.finished_at > since


_COLUMNS = ("content_hash", "options_key", "version", "source", "problem", "kind", "status",
            "verdict", "reason", "result_json", "values_json", "expect_json", "seconds",
            "worker", "finished_at")


def _row(row: Sequence[Any]) -> StoredResult:
    d = dict(zip(_COLUMNS, row, strict=True))
    return StoredResult(
        content_hash=d["content_hash"], options_key=d["options_key"], version=d["version"],
        source=d["source"], problem=d["problem"], kind=d["kind"], status=d["status"],
        verdict=d["verdict"], reason=d["reason"], result=json.loads(d["result_json"]),
        values=tuple((a, b, c) for a, b, c in json.loads(d["values_json"])),
        expect=tuple(tuple(e) for e in json.loads(d["expect_json"])),
        seconds=float(d["seconds"]), worker=d["worker"], finished_at=d["finished_at"],
    )


class Store:
    """A results store at `path` (created on first use unless `create=False`), or held
    in memory for one run when `path` is `MEMORY` (`Store.in_memory()`: the same claims
    and lookups, nothing written to disk). A `.dpverify` folder made for it is marked as
    a cache (dpverify.cachedir)."""

    def __init__(self, path: str | Path = DEFAULT_STORE, *, create: bool = True,
                 readonly: bool = False, busy_timeout: float = BUSY_TIMEOUT) -> None:
        self.memory = str(path) == MEMORY
        self.path = Path(path)
        self.readonly = readonly
        if self.memory:
            self._db = sqlite3.connect(MEMORY, isolation_level=None)
            self._setup()
            return
        if readonly:
            create = False
        if not create and not self.path.exists():
            raise InputError(f"{self.path}: no results store here (run `dpverify batch` first, "
                             "or name the store with --store)")
        if self.path.is_dir():
            raise InputError(f"{self.path}: is a directory, not a results store file")
        if create:
            try:
                make_dirs(self.path.parent)
            except OSError as exc:
                raise InputError(f"{self.path}: cannot create the results store's directory: "
                                 f"{exc.strerror}") from None
        with self._errors("open"):
            if readonly:
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._db = sqlite3.connect(uri, uri=True, timeout=busy_timeout,
                                           isolation_level=None)
            else:
                self._db = sqlite3.connect(self.path, timeout=busy_timeout,
                                           isolation_level=None)
        try:
            with self._errors("open"):
                if readonly:
                    self._check_schema()
                else:
                    self._set_up_while_busy(busy_timeout)
        except InputError:
            self._db.close()
            raise

    # -- errors -------------------------------------------------------------------------
    @contextlib.contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        """sqlite3 failures -> one clear InputError (exit 2) naming the store."""
        try:
            yield
        except sqlite3.DatabaseError as exc:  # OperationalError is a subclass
            raise InputError(self._explain(action, exc)) from None

    def _explain(self, action: str, exc: sqlite3.DatabaseError) -> str:
        text = str(exc)
        low = text.lower()
        where = f"{self.path}: cannot {action} the results store"
        if "locked" in low or "busy" in low:
            return (f"{where}: it is locked by another process (another `dpverify batch` "
                    "on the same store?); wait for it, or use another --store")
        if "not a database" in low or "malformed" in low or "corrupt" in low:
            return (f"{where}: the file is corrupt or not a dpverify store ({text}); "
                    "move it away or use another --store")
        if "readonly" in low or "unable to open" in low or "disk i/o" in low:
            return (f"{where}: it is not writable ({text}); check the permissions, "
                    "or use another --store")
        return f"{where}: {text}"

    def _set_up_while_busy(self, seconds: float) -> None:
        """_setup, tried again while another process holds the new file's lock, for up to
        `seconds`: switching a new file to WAL, and the schema's first statements, can be
        refused at once ("database is locked", without SQLite's busy wait) while another
        connection is setting the same file up (seen: two `batch` runs started together on
        one store, on a 2-core machine)."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                self._setup()
                return
            except sqlite3.OperationalError as exc:
                low = str(exc).lower()
                if not ("locked" in low or "busy" in low) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _setup(self) -> None:
        db = self._db
        mode = db.execute("PRAGMA journal_mode=WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            # A file system without shared memory (some network mounts): fall back to a
            # rollback journal, which is just as safe, only slower under concurrency.
            db.execute("PRAGMA journal_mode=DELETE")
        # NORMAL in WAL mode: a commit survives the process being killed; only a power
        # loss may drop the last commits, and never corrupts the file.
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)",
                   (SCHEMA_VERSION,))
        self._check_schema()

    def _check_schema(self) -> None:
        tables = {r[0] for r in self._db.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
        if not {"meta", "results"} <= tables:
            raise InputError(f"{self.path}: not a dpverify results store (no results table); "
                             "use another --store")
        row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if row is None or row[0] != SCHEMA_VERSION:
            found = "none" if row is None else row[0]
            raise InputError(f"{self.path}: the results store has schema version {found}, "
                             f"this dpverify uses {SCHEMA_VERSION}; use another --store")

    # -- reading ------------------------------------------------------------------------
    def get(self, content_hash: str, options: str, version: str) -> StoredResult | None:
        with self._errors("read"):
            row = self._db.execute(
                f"SELECT {', '.join(_COLUMNS)} FROM results "
                "WHERE content_hash = ? AND options_key = ? AND version = ?",
                (content_hash, options, version)).fetchone()
        return None if row is None else _row(row)

    def lookup(self, hashes: Sequence[str], options: str,
               version: str) -> dict[str, StoredResult]:
        """The stored rows for many content hashes at once (one query per 500)."""
        out: dict[str, StoredResult] = {}
        unique = sorted(set(hashes))
        for i in range(0, len(unique), 500):
            chunk = unique[i:i + 500]
            marks = ", ".join("?" * len(chunk))
            with self._errors("read"):
                rows = self._db.execute(
                    f"SELECT {', '.join(_COLUMNS)} FROM results WHERE options_key = ? "
                    f"AND version = ? AND content_hash IN ({marks})",
                    (options, version, *chunk)).fetchall()
            for row in rows:
                stored = _row(row)
                out[stored.content_hash] = stored
        return out

    def all(self, *, verdict: str | None = None) -> list[StoredResult]:
        query = f"SELECT {', '.join(_COLUMNS)} FROM results"
        args: tuple[Any, ...] = ()
        if verdict is not None:
            query += " WHERE verdict = ?"
            args = (verdict,)
        query += " ORDER BY source, finished_at"
        with self._errors("read"):
            rows = self._db.execute(query, args).fetchall()
        return [_row(r) for r in rows]

    def count(self) -> int:
        with self._errors("read"):
            return int(self._db.execute("SELECT COUNT(*) FROM results").fetchone()[0])

    # -- writing ------------------------------------------------------------------------
    def put(self, row: StoredResult) -> None:
        """Insert or replace one row and commit it (autocommit: one statement, one
        transaction)."""
        if row.status not in STATUSES:
            raise ValueError(f"unknown status {row.status!r}; expected one of {STATUSES}")
        values = (row.content_hash, row.options_key, row.version, row.source, row.problem,
                  row.kind, row.status, row.verdict, row.reason,
                  json.dumps(row.result, allow_nan=False),
                  json.dumps([list(v) for v in row.values], allow_nan=False),
                  json.dumps([list(e) for e in row.expect], allow_nan=False),
                  float(row.seconds), row.worker)
        # A transient failure (a timeout in a --force run, say) never replaces a final row.
        with self._errors("write to"):
            self._db.execute(
                "INSERT INTO results (content_hash, options_key, version, source, problem, kind, "
                "status, verdict, reason, result_json, values_json, expect_json, seconds, worker) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (content_hash, options_key, version) DO UPDATE SET "
                "source = excluded.source, problem = excluded.problem, kind = excluded.kind, "
                "status = excluded.status, verdict = excluded.verdict, reason = excluded.reason, "
                "result_json = excluded.result_json, values_json = excluded.values_json, "
                "expect_json = excluded.expect_json, seconds = excluded.seconds, "
                "worker = excluded.worker, "
                "finished_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') "
                f"WHERE excluded.status IN {_FINAL_SQL} OR results.status NOT IN {_FINAL_SQL}",
                values)

    # -- claims (see the module docstring) ------------------------------------------------
    def now(self) -> str:
        """The store's clock, in the format of `finished_at`."""
        with self._errors("read"):
            return str(self._db.execute(
                "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', 'now')").fetchone()[0])

    def claim(self, key: tuple[str, str, str], owner: str, *, since: str,
              force: bool = False) -> ClaimResult:
        """Claim the problem `key` = (content hash, options key, build) for `owner`, in one
        write transaction: REUSE when a reusable row is stored (StoredResult.reusable),
        WAIT when another owner's live claim holds it, else RUN (the claim is `owner`'s)."""
        with self._errors("write to"):
            self._db.execute("BEGIN IMMEDIATE")
            try:
                decision = self._decide(key, owner, since, force, time.time())
                if decision.action is ClaimAction.RUN:
                    self._db.execute(
                        "INSERT OR REPLACE INTO claims (content_hash, options_key, version, "
                        "owner, heartbeat) VALUES (?, ?, ?, ?, ?)", (*key, owner, time.time()))
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise
        return decision

    def look(self, keys: Sequence[tuple[str, str, str]], owner: str, *, since: str,
             force: bool = False) -> list[ClaimResult]:
        """What `claim` would decide for each key, without claiming (RUN: free to claim)."""
        now = time.time()
        with self._errors("read"):
            return [self._decide(key, owner, since, force, now) for key in keys]

    def _decide(self, key: tuple[str, str, str], owner: str, since: str, force: bool,
                now: float) -> ClaimResult:
        row = self.get(*key)
        if row is not None and row.reusable(since, force):
            return ClaimResult(ClaimAction.REUSE, row=row)
        held = self._db.execute(
            "SELECT owner, heartbeat FROM claims WHERE content_hash = ? AND options_key = ? "
            "AND version = ?", key).fetchone()
        if held is not None and held[0] != owner and not claim_stale(held[0], held[1], now):
            return ClaimResult(ClaimAction.WAIT, owner=held[0])
        return ClaimResult(ClaimAction.RUN)

    def heartbeat(self, owner: str) -> None:
        """`owner` is alive: refresh its claims."""
        with self._errors("write to"):
            self._db.execute("UPDATE claims SET heartbeat = ? WHERE owner = ?",
                             (time.time(), owner))

    def release(self, owner: str, key: tuple[str, str, str] | None = None) -> None:
        """Drop `owner`'s claim on `key` (every claim of `owner` when `key` is None)."""
        with self._errors("write to"):
            if key is None:
                self._db.execute("DELETE FROM claims WHERE owner = ?", (owner,))
            else:
                self._db.execute("DELETE FROM claims WHERE content_hash = ? AND options_key = ? "
                                 "AND version = ? AND owner = ?", (*key, owner))

    @classmethod
    def in_memory(cls) -> Store:
        """A store for one run, in memory (`--no-store`): nothing is read or kept."""
        return cls(MEMORY)

    def check_writable(self) -> None:
        """Fail now (InputError) rather than after the first problem if we cannot write."""
        with self._errors("write to"):
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute("ROLLBACK")
        if self.memory:
            return
        if not os.access(self.path, os.W_OK):
            raise InputError(f"{self.path}: cannot write to the results store: it is not "
                             "writable; check the permissions, or use another --store")

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
