"""The results store: round trips, WAL, skipping rules, and clear errors for a locked,
corrupt or unwritable store (exit 2 through the CLI, never a traceback)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.batch.store import (
    CRASHED,
    DONE,
    INVALID,
    TIMEOUT,
    Store,
    StoredResult,
    options_key,
)
from dpverify.cli import main
from dpverify.errors import InputError
from dpverify.verify.options import VerifyOptions

OKEY = options_key(VerifyOptions().key())


def row(content_hash: str = "a" * 64, status: str = DONE, verdict: str = "optimal",
        value: float = 0.75, **kw) -> StoredResult:
    result = {"problem": "p", "source": "p.toml", "kind": "multiparty", "verdict": verdict,
              "results": [{"agent": "observer", "accuracy": "average",
                           "relaxed_optimum": value, "rr_value": value, "gap": 0.0,
                           "verdict": verdict, "seconds": 0.01}]}
    fields = {"content_hash": content_hash, "options_key": OKEY, "version": "0.1.0",
              "source": "p.toml", "problem": "p", "kind": "multiparty", "status": status,
              "verdict": verdict, "reason": "", "result": result,
              "values": (("observer", "average", value),),
              "expect": (("observer", "average", 0.75),), "seconds": 0.5, "worker": "host:1"}
    fields.update(kw)
    return StoredResult(**fields)


def test_round_trip_and_wal(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "results.sqlite"
    with Store(path) as store:
        assert store.get("a" * 64, OKEY, "0.1.0") is None
        store.put(row())
        got = store.get("a" * 64, OKEY, "0.1.0")
        assert got is not None and got.result == row().result
        assert got.values == (("observer", "average", 0.75),)
        assert got.final and got.finished_at
        # Another options key or version is another row.
        assert store.get("a" * 64, OKEY + "x", "0.1.0") is None
        assert store.get("a" * 64, OKEY, "0.2.0") is None
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_committed_per_put(tmp_path: Path) -> None:
    """A second connection sees each row as soon as put returns (no open transaction)."""
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        store.put(row("b" * 64))
        other = sqlite3.connect(path)
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 1
        store.put(row("c" * 64))
        assert other.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 2


def test_one_row_per_key_and_final_rows_win(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store:
        store.put(row(status=TIMEOUT, verdict="error"))
        store.put(row(status=DONE, value=0.7))  # a final row replaces a transient one
        assert store.count() == 1
        store.put(row(status=CRASHED, verdict="error"))  # ...and is never replaced by one
        got = store.get("a" * 64, OKEY, "0.1.0")
        assert got.status == DONE and got.values[0][2] == 0.7
        store.put(row(status=INVALID, verdict="error"))  # a final row may replace a final row
        assert store.get("a" * 64, OKEY, "0.1.0").status == INVALID
        assert store.count() == 1


def test_lookup_and_filter(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store:
        hashes = [f"{i:064x}" for i in range(700)]  # more than one IN chunk
        for h in hashes[:600]:
            store.put(row(h, verdict="gap" if h.endswith("7") else "optimal"))
        found = store.lookup(hashes, OKEY, "0.1.0")
        assert set(found) == set(hashes[:600])
        assert store.lookup(hashes, OKEY, "9.9") == {}
        gaps = store.all(verdict="gap")
        assert gaps and all(r.verdict == "gap" for r in gaps)
        assert len(store.all()) == 600


def test_unknown_status_refused(tmp_path: Path) -> None:
    with Store(tmp_path / "r.sqlite") as store, pytest.raises(ValueError):
        store.put(row(status="fine"))


def test_corrupt_store(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    path.write_bytes(b"this is not a database, just some bytes " * 100)
    with pytest.raises(InputError, match="corrupt"):
        Store(path)


def test_foreign_sqlite_file_read_only(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.commit()
    db.close()
    with pytest.raises(InputError, match="not a dpverify results store"):
        Store(path, readonly=True)


def test_missing_store_for_reading(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no results store"):
        Store(tmp_path / "nope.sqlite", readonly=True)
    assert not (tmp_path / "nope.sqlite").exists()


def test_locked_store(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    Store(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError, match="locked"), Store(path, busy_timeout=0.1) as store:
            store.check_writable()
            store.put(row())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    with Store(path, busy_timeout=0.1) as store:  # negative control: released, it works
        store.put(row())
        assert store.count() == 1


def test_unwritable_location(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(InputError, match="cannot create"):
        Store(blocker / "results.sqlite")
    with pytest.raises(InputError, match="is a directory"):
        Store(tmp_path)


def test_cli_corrupt_store_is_exit_2(tmp_path: Path, write_toml) -> None:
    problem = write_toml("""
        [problem]
        parties = 2
        epsilon = 1.0
        [observer]
        function = "xor"
        gain = "indicator"
    """, "xor2")
    store = tmp_path / "bad.sqlite"
    store.write_bytes(b"\x00garbage" * 512)
    runner = CliRunner()
    for args in (["batch", str(problem), "--store", str(store)],
                 ["check", str(problem), "--store", str(store)],
                 ["results", "--store", str(store)]):
        res = runner.invoke(main, args)
        assert res.exit_code == 2, (args, res.output)
        assert "corrupt" in res.output and "Traceback" not in res.output
        assert res.exception is None or isinstance(res.exception, SystemExit)


def test_cli_results_formats(tmp_path: Path) -> None:
    path = tmp_path / "r.sqlite"
    with Store(path) as store:
        store.put(row("1" * 64))
        store.put(row("2" * 64, verdict="gap", source="q.toml", problem="q"))
    runner = CliRunner()
    res = runner.invoke(main, ["results", "--store", str(path), "--format", "json"])
    assert res.exit_code == 0
    import json

    objs = json.loads(res.output)
    assert isinstance(objs, list) and len(objs) == 2
    res = runner.invoke(main, ["results", "--store", str(path), "--format", "json",
                               "--verdict", "gap"])
    assert [o["verdict"] for o in json.loads(res.output)] == ["gap"]
    res = runner.invoke(main, ["results", "--store", str(path), "--format", "csv"])
    lines = res.output.strip().splitlines()
    assert lines[0].startswith("problem,source,kind,problem_verdict,status")
    assert "relaxed_optimum" in lines[0] and len(lines) == 3
    res = runner.invoke(main, ["results", "--store", str(path), "--json"])  # an alias
    assert res.exit_code == 0 and json.loads(res.stdout) == objs
    res = runner.invoke(main, ["results", "--store", str(path), "--json", "--format", "csv"])
    assert res.exit_code == 2 and "contradict" in res.output
    res = runner.invoke(main, ["results", "--store", str(path)])
    assert res.exit_code == 0 and "2 stored results" in res.output
    res = runner.invoke(main, ["results", "--store", str(tmp_path / "none.sqlite")])
    assert res.exit_code == 2 and "no results store" in res.output
