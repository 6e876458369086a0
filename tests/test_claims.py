"""Two runs on one results store compute each problem once (issue 17, C11): claims in the
store, waiting for another run's results, a killed run's claims taken over."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from inline import InlineExecutor

from dpverify import Agent, Problem
from dpverify.runner.batch import problem_text, run_problems
from dpverify.runner.executors.local import Task, run_task
from dpverify.runner.fingerprint import build_id
from dpverify.runner.store import (
    CLAIM_STALE,
    DONE,
    TIMEOUT,
    ClaimAction,
    Store,
    StoredResult,
    claim_stale,
    new_owner,
    options_key,
)
from dpverify.verifiers.options import VerifyOptions

ROOT = Path(__file__).resolve().parents[1]
KEY = ("a" * 64, "{}", "0.1.0+src.test")

# A run of `dpverify.batch` in its own process: one JSON line per problem (its source,
# whether it was read from the store rather than computed here, its verdict and values).
BATCH_SCRIPT = """
import json, sys
import dpverify
report = dpverify.batch(sys.argv[2:], jobs=1, store=sys.argv[1])
print(json.dumps([{"source": i.source, "cached": i.cached, "verdict": i.verdict,
                   "values": i.values} for i in report.items]))
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def slow_problems(root: Path, count: int) -> list[Path]:
    """`count` distinct problems of about a quarter of a second each (majority of 8)."""
    root.mkdir(parents=True, exist_ok=True)
    base = Problem.multiparty(parties=8, epsilon=1.0, observer=Agent(function="majority"))
    paths = []
    for i in range(count):
        path = root / f"m{i:02d}.toml"
        base.replace(epsilon=0.5 + i / 8).save(path)
        paths.append(path)
    return paths


def row(status=DONE, key=KEY) -> StoredResult:
    result = {"problem": "p", "source": "p.toml", "kind": "multiparty", "verdict": "optimal",
              "results": []}
    return StoredResult(key[0], key[1], key[2], "p.toml", "p", "multiparty", status,
                        "optimal", "", result, (), (), 0.1, "host:1")


# -- the store's claims ------------------------------------------------------------------------
def test_a_claim_is_held_until_released_and_a_stored_row_is_reused(tmp_path):
    with Store(tmp_path / "s.sqlite") as store:
        since = store.now()
        mine, theirs = new_owner(), new_owner()
        assert store.claim(KEY, mine, since=since).action is ClaimAction.RUN
        assert store.claim(KEY, mine, since=since).action is ClaimAction.RUN  # its own
        waiting = store.claim(KEY, theirs, since=since)
        assert waiting.action is ClaimAction.WAIT and waiting.owner == mine
        assert [r.action for r in store.look([KEY], theirs, since=since)] == [ClaimAction.WAIT]
        time.sleep(0.01)
        store.put(row())
        store.release(mine, KEY)
        reused = store.claim(KEY, theirs, since=since)
        assert reused.action is ClaimAction.REUSE and reused.row is not None
        assert reused.row.status == DONE
        # with --force a final row from before the run started is computed again...
        later = store.now()
        time.sleep(0.01)
        assert store.claim(KEY, theirs, since=later, force=True).action is ClaimAction.RUN
        # ...and a transient row stored before is retried, one stored since is taken
        store.release(theirs)
        other = (KEY[0], KEY[1], "other-build")
        store.put(row(TIMEOUT, other))
        assert store.claim(other, mine, since=later).action is ClaimAction.REUSE
        assert store.claim(other, mine, since=store.now()).action is ClaimAction.RUN


def test_stale_claims_are_taken_over(tmp_path):
    me = socket.gethostname()
    now = time.time()
    assert not claim_stale(f"{me}:{os.getpid()}:x", now, now)  # alive, beating
    assert claim_stale(f"{me}:{os.getpid()}:x", now - CLAIM_STALE - 1, now)  # no heartbeat
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    assert claim_stale(f"{me}:{dead.pid}:x", now, now)  # its process exited
    assert not claim_stale(f"elsewhere.example:{dead.pid}:x", now, now)  # cannot tell there
    with Store(tmp_path / "s.sqlite") as store:
        db = sqlite3.connect(tmp_path / "s.sqlite")
        db.execute("INSERT INTO claims VALUES (?, ?, ?, ?, ?)",
                   (*KEY, f"{me}:{dead.pid}:x", now))
        db.commit()
        db.close()
        assert store.claim(KEY, new_owner(), since=store.now()).action is ClaimAction.RUN


# -- two real runs ----------------------------------------------------------------------------
def run_batches(store: Path, paths: list[Path], n: int) -> list[list[dict]]:
    script = [sys.executable, "-c", BATCH_SCRIPT, str(store), *map(str, paths)]
    procs = [subprocess.Popen(script, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env(), cwd=store.parent) for _ in range(n)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    return [json.loads(out) for out, _ in outs]


def test_two_concurrent_batches_on_one_store_compute_each_problem_once(tmp_path):
    paths = slow_problems(tmp_path / "p", 8)
    first, second = run_batches(tmp_path / "s.sqlite", paths, 2)
    sources = sorted(map(str, paths))
    for report in (first, second):  # both runs report every problem
        assert sorted(item["source"] for item in report) == sources
        assert all(item["verdict"] == "optimal" for item in report)
    computed = [item["source"] for report in (first, second) for item in report
                if not item["cached"]]
    assert sorted(computed) == sources  # each problem computed once, by one of the runs
    values = [{i["source"]: i["values"] for i in report} for report in (first, second)]
    assert values[0] == values[1]  # the waiting run reports the computing run's numbers
    with Store(tmp_path / "s.sqlite", readonly=True) as store:
        assert store.count() == 8
    assert not sqlite3.connect(tmp_path / "s.sqlite").execute(
        "SELECT COUNT(*) FROM claims").fetchone()[0]  # every claim released


def test_a_killed_runs_claims_do_not_hold_up_the_next(tmp_path):
    paths = slow_problems(tmp_path / "p", 4)
    store = tmp_path / "s.sqlite"
    script = [sys.executable, "-c", BATCH_SCRIPT, str(store), *map(str, paths)]
    killed = subprocess.Popen(script, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              env=env(), cwd=tmp_path, start_new_session=True)
    deadline = time.time() + 60
    claimed = 0
    while time.time() < deadline and not claimed:
        time.sleep(0.05)
        if store.exists():
            try:
                claimed = sqlite3.connect(store).execute(
                    "SELECT COUNT(*) FROM claims").fetchone()[0]
            except sqlite3.OperationalError:  # not created yet
                claimed = 0
    os.killpg(killed.pid, signal.SIGKILL)  # the run and its workers, without a word
    killed.wait()
    assert claimed, "the first run never claimed a problem"
    start = time.time()
    (report,) = run_batches(store, paths, 1)
    assert sorted(i["source"] for i in report) == sorted(map(str, paths))
    assert all(i["verdict"] == "optimal" for i in report)
    assert time.time() - start < CLAIM_STALE / 2  # taken over at once, not after expiry


class Heard:
    def __init__(self) -> None:
        self.waited: list[str] = []
        self.items: list = []

    def started(self, total, skipped, workers) -> None:
        pass

    def finished(self, item) -> None:
        self.items.append(item)

    def waiting(self, owner: str) -> None:
        self.waited.append(owner)


def test_a_problem_another_run_holds_is_waited_for_and_read_from_the_store(tmp_path):
    """In one process: another owner (alive: this very process) holds one of two problems;
    the run computes the other, waits, and takes the held one's row once it is stored."""
    texts = {f"p{i}.toml": Problem.multiparty(parties=3, epsilon=0.5 + i,
                                              observer=Agent(function="xor")).text
             for i in range(2)}
    files = [problem_text(source, text) for source, text in texts.items()]
    okey = options_key(VerifyOptions().key())
    held = (files[0].content_hash, okey, build_id())
    other = new_owner()
    with Store(tmp_path / "s.sqlite") as store:
        assert store.claim(held, other, since=store.now()).action is ClaimAction.RUN
        done = threading.Event()

        def the_other_run() -> None:  # stores its result 1.5 s later and lets go
            time.sleep(1.5)
            with Store(tmp_path / "s.sqlite") as own:
                computed = run_task(Task(0, files[0].source, files[0].text or "",
                                         VerifyOptions()))
                own.put(StoredResult(*held, files[0].source, "p0", "multiparty", DONE,
                                     "optimal", "", computed["result"], (), (), 0.1,
                                     "the-other-run"))
                own.release(other, held)
            done.set()

        thread = threading.Thread(target=the_other_run)
        thread.start()
        heard, inline = Heard(), InlineExecutor()
        report = run_problems(files, VerifyOptions(), store=store, executor=inline,
                              listener=heard)
        thread.join()
    assert done.is_set()
    assert [t.source for t in inline.submitted] == ["p1.toml"]  # only the free one ran here
    assert heard.waited == [other]  # told once
    by_source = {i.source: i for i in report.items}
    assert by_source["p0.toml"].cached and not by_source["p1.toml"].cached
    assert by_source["p0.toml"].verdict == by_source["p1.toml"].verdict == "optimal"
    assert report.skipped == 1
