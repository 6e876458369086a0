"""The results store: round trips, WAL, skipping rules, and clear errors for a locked,
corrupt or unwritable store (exit 2 through the CLI, never a traceback)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from dpverify.cli import main
from dpverify.errors import InputError
from dpverify.runner.store import (
    CRASHED,
    DONE,
    INVALID,
    TIMEOUT,
    Store,
    StoredResult,
    options_key,
)
from dpverify.verifiers.options import VerifyOptions

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

    objs = json.loads(res.stdout)  # these rows are of another build: a note on stderr
    assert isinstance(objs, list) and len(objs) == 2
    assert "2 of 2 stored results were computed by another build" in res.stderr
    res = runner.invoke(main, ["results", "--store", str(path), "--format", "json",
                               "--verdict", "gap"])
    assert [o["verdict"] for o in json.loads(res.stdout)] == ["gap"]
    res = runner.invoke(main, ["results", "--store", str(path), "--format", "csv"])
    lines = res.stdout.strip().splitlines()
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


# -- the build that computed a row (issue 17, C10) ---------------------------------------------
STALE_BATCH = """
import json, sys
import dpverify
from dpverify.runner.fingerprint import build_id
report = dpverify.batch([sys.argv[2]], jobs=1, store=sys.argv[1])
print(json.dumps({"build": build_id(), "items": [
    {"cached": i.cached, "values": i.values} for i in report.items]}))
"""


def test_a_row_of_another_build_is_recomputed_not_served(tmp_path: Path) -> None:
    """A row stored under the version alone (what the store keyed by before) with numbers
    the code no longer computes: the batch recomputes rather than serve them."""
    import hashlib

    import dpverify
    from dpverify.runner.fingerprint import build_id

    source = Path(__file__).resolve().parents[1] / "problems" / "xor-2.toml"
    content = hashlib.sha256(source.read_bytes()).hexdigest()
    stale = row(content, value=0.123)  # keyed by the version "0.1.0", a wrong optimum
    with Store(tmp_path / "s.sqlite") as store:
        store.put(stale)
        assert build_id() != stale.version
        report = dpverify.batch(source, jobs=1, store=store)
        (item,) = report.items
        assert not item.cached and item.build == build_id()
        fresh = dpverify.verify(source).results[0].relaxed_optimum
        assert item.values[0][2] == pytest.approx(fresh) and fresh != pytest.approx(0.123)
        again = dpverify.batch(source, jobs=1, store=store)
        assert again.items[0].cached  # this build's row is served
        builds = {r.version for r in store.all()}
    assert builds == {"0.1.0", build_id()}
    listed = CliRunner().invoke(main, ["results", "--store", str(tmp_path / "s.sqlite")])
    assert "1 of 2 stored results was computed by another build of dpverify" in listed.stdout


def test_editing_the_source_changes_the_build_and_the_store_recomputes(tmp_path: Path) -> None:
    """A copy of the package, run in its own processes: one comment added to one file is
    another build, whose batch recomputes what the first build stored."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    import dpverify
    from dpverify.runner.fingerprint import source_hash

    root = Path(__file__).resolve().parents[1]
    copy = tmp_path / "copy"
    # __pycache__ too (source_hash leaves it out; copy2 keeps the mtimes that make the
    # bytecode valid): each of the six processes below then compiles only what changed
    shutil.copytree(root / "dpverify", copy / "dpverify")
    problem, store = root / "problems" / "and-3.toml", tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": str(copy)}

    def batch() -> dict:
        done = subprocess.run([sys.executable, "-c", STALE_BATCH, str(store), str(problem)],
                              capture_output=True, text=True, env=env, timeout=300,
                              check=False, cwd=tmp_path)  # not the checkout's dpverify
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    first, second = batch(), batch()
    assert [i["cached"] for i in first["items"] + second["items"]] == [False, True]
    before = source_hash(copy / "dpverify")
    edited = copy / "dpverify" / "verifiers" / "result.py"
    edited.write_text(edited.read_text() + "\n# a change\n")
    assert source_hash(copy / "dpverify") != before
    third = batch()
    assert first["build"] == f"{dpverify.__version__}+src.{before[:16]}"  # the copy ran
    assert third["build"] == f"{dpverify.__version__}+src.{source_hash(copy / 'dpverify')[:16]}"
    assert third["build"] != first["build"]
    assert [i["cached"] for i in third["items"]] == [False]  # recomputed by the new build
    assert third["items"][0]["values"] == first["items"][0]["values"]
    with Store(store, readonly=True) as opened:
        assert sorted(r.version for r in opened.all()) == sorted([first["build"],
                                                                  third["build"]])


def test_the_fingerprint_is_cheap_and_stable() -> None:
    import time

    from dpverify.runner.fingerprint import build_id, source_hash

    package = Path(__file__).resolve().parents[1] / "dpverify"
    start = time.perf_counter()
    digest = source_hash(package)
    assert time.perf_counter() - start < 1.0 and len(digest) == 64
    assert build_id() == build_id() and build_id().endswith(source_hash()[:16])


def test_the_results_table_has_a_header_for_every_cell(tmp_path):
    """Every value of a row sits under its own header (a delta column added to the values
    but not to the headers once shifted every cell after it)."""
    from dpverify.console.results import TABLE_COLUMNS, results_table

    problem = tmp_path / "p.toml"
    problem.write_text('[problem]\nparties = 2\nepsilon = 1\ndelta = "1/10"\n'
                       '[observer]\nfunction = "xor"\n')
    plain = tmp_path / "q.toml"
    plain.write_text('[problem]\nparties = 2\nepsilon = 1\n[observer]\nfunction = "and"\n')
    store = tmp_path / "s.sqlite"
    import dpverify

    dpverify.batch([str(problem), str(plain)], jobs=1, store=store, restarts=1)
    rows = dpverify.results(store)
    table = results_table(rows)
    assert [c.header for c in table.columns] == list(TABLE_COLUMNS)
    verdicts = [str(c) for c in table.columns[TABLE_COLUMNS.index("verdict")].cells]
    assert sorted(verdicts) == ["interaction-helps", "optimal"]


def test_a_store_being_set_up_by_another_process_is_waited_for(tmp_path, monkeypatch):
    """Two runs opening one new store together: SQLite may refuse the second's set-up at
    once ("database is locked", no busy wait); the open tries again within the timeout."""
    real = Store._setup
    refusals = []

    def busy_twice(self):
        if len(refusals) < 2:
            refusals.append(1)
            raise sqlite3.OperationalError("database is locked")
        real(self)

    monkeypatch.setattr(Store, "_setup", busy_twice)
    with Store(tmp_path / "s.sqlite") as store:
        assert store.count() == 0
    assert len(refusals) == 2


def test_a_store_locked_for_longer_than_the_timeout_is_named_locked(tmp_path, monkeypatch):
    calls = []

    def always_busy(self):
        calls.append(1)
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(Store, "_setup", always_busy)
    start = time.monotonic()
    with pytest.raises(InputError, match="locked by another process"):
        Store(tmp_path / "s.sqlite", busy_timeout=0.2)
    assert len(calls) > 1 and time.monotonic() - start >= 0.2  # waited, then named it


def test_other_failures_of_the_set_up_are_not_tried_again(tmp_path, monkeypatch):
    """Control: only a lock is waited for; anything else fails at once."""
    calls = []

    def broken(self):
        calls.append(1)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(Store, "_setup", broken)
    with pytest.raises(InputError, match="not writable"):
        Store(tmp_path / "s.sqlite")
    assert calls == [1]
