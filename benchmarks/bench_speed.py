"""The speed bars (whole commands on this machine): one row per case, the default route
against the old one (`--method lp`) where the old route still exists.

Usage: python benchmarks/bench_speed.py [--cases a,b,...] [--old] [--timeout S] [--markdown]

Each case writes its problem files into a temporary directory, runs `dpverify` as a user
would (process start-up included), and prints the seconds, the verdicts and the bar. With
`--old` it also runs the same command with `--method lp` (where that route applies), so
the before and after of one run sit side by side. Exits 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DPVERIFY = [sys.executable, "-m", "dpverify"]


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    bar: float  # seconds
    build: Callable[[Path], list[str]]  # writes files, returns the dpverify arguments
    old: bool = False  # whether `--method lp` is a meaningful "before"


def _table(rng: random.Random, k: int, values: int = 3) -> list[int]:
    return [rng.randrange(values) for _ in range(2 ** k)]


def _epsilons(rng: random.Random, k: int) -> list[float]:
    return [round(rng.uniform(0.5, 2.0), 2) for _ in range(k)]


def random_9(folder: Path) -> list[str]:
    rng = random.Random(9)
    path = folder / "random-9.toml"
    path.write_text(f"""[problem]
name = "random-9"
parties = 9
epsilon = {_epsilons(rng, 9)}

[observer]
function = {{ table = {_table(rng, 9)} }}
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


SIX = """[problem]
name = "majority-sum-6"
parties = 6
epsilon = 1.0

[observer]
function = "majority"

[[party]]
index = 2
function = "sum"
gain = "-abs"
"""


def sweep_6(folder: Path) -> list[str]:
    path = folder / "majority-sum-6.toml"
    path.write_text(SIX, encoding="utf-8")
    return ["sweep", str(path), "--epsilon", "0.1:4:40", "--jobs", "2", "--json",
            "--store", str(folder / "store.sqlite")]


def sum_8(folder: Path) -> list[str]:
    path = folder / "sum-8.toml"
    path.write_text("""[problem]
name = "sum-8"
parties = 8
epsilon = [1.07, 1.25, 1.87, 1.09, 1.16, 1.3, 0.61, 1.17]

[[party]]
index = 1
function = "sum"
gain = "-abs"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def average(k: int) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        rng = random.Random(k)
        path = folder / f"average-{k}.toml"
        path.write_text(f"""[problem]
name = "average-{k}"
parties = {k}
epsilon = {_epsilons(rng, k)}
accuracy = "average"

[observer]
function = {{ table = {_table(rng, k)} }}
""", encoding="utf-8")
        return ["verify", str(path), "--json"]

    return build


def majority_1000(folder: Path) -> list[str]:
    path = folder / "majority-1000.toml"
    path.write_text("""[problem]
name = "majority-1000"
parties = 1000
epsilon = 0.1

[observer]
function = "majority"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def symmetric_10000(folder: Path) -> list[str]:
    path = folder / "xor-10000.toml"
    path.write_text("""[problem]
name = "xor-10000"
parties = 10000
lambda = "2"

[observer]
function = "xor"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def parity_19(folder: Path) -> list[str]:
    levels = [0.05, 1.0, 2.0]
    epsilons = [levels[i % 3] for i in range(19)]
    path = folder / "parity-19.toml"
    path.write_text(f"""[problem]
name = "parity-19"
parties = 19
epsilon = {epsilons}
accuracy = "worst"

[observer]
function = "parity"
gain = {{ expr = "2 if f == y else (0 if y == 0 else -1)" }}
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def version(folder: Path) -> list[str]:
    return ["--version"]


CASES = [
    Case("random-9", "9 parties, distinct epsilons, random 3-valued table, both accuracies",
         3.0, random_9, old=True),
    Case("sweep-6", "40-point sweep of 6 parties (majority + party sum under -abs), 2 jobs",
         15.0, sweep_6, old=True),
    Case("sum-8", "8 parties, distinct float epsilons, party sum under -abs, both accuracies",
         2.0, sum_8, old=True),
    Case("average-16", "average case, distinct epsilons, random table, k = 16", 5.0,
         average(16)),
    Case("average-20", "average case, distinct epsilons, random table, k = 20", 30.0,
         average(20)),
    Case("majority-1000", "majority, k = 1000, epsilon = 0.1", 10.0, majority_1000),
    Case("xor-10000", "symmetric XOR, k = 10,000, one privacy class", 30.0, symmetric_10000),
    Case("parity-19", "19-party parity worst case, epsilons in {0.05, 1, 2}", 60.0, parity_19),
    Case("version", "`dpverify --version`", 0.2, version),
]


def run(args: list[str], timeout: float) -> tuple[float, str, int]:
    """(seconds, what it found, exit status; -1 for a timeout)."""
    start = time.perf_counter()
    try:
        done = subprocess.run([*DPVERIFY, *args], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, f"timeout ({timeout:g} s)", -1
    seconds = time.perf_counter() - start
    return seconds, summary(done.stdout, done.returncode), done.returncode


def summary(stdout: str, status: int) -> str:
    """The verdicts (and methods) of a --json run, or the exit status."""
    verdicts: dict[str, int] = {}
    methods: set[str] = set()
    try:
        documents = [json.loads(stdout)]
    except json.JSONDecodeError:  # JSON Lines
        documents = []
        for line in stdout.splitlines():
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    for data in documents:
        rows = data if isinstance(data, list) else [data]
        for row in rows:
            for point in row.get("points", [row]) if isinstance(row, dict) else []:
                if "verdict" in point:
                    verdicts[point["verdict"]] = verdicts.get(point["verdict"], 0) + 1
                for r in point.get("results", []):
                    methods.add(str(r.get("method", "")))
    if not verdicts:
        return f"exit {status}"
    text = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    return text + (f" ({'/'.join(sorted(m for m in methods if m))})" if methods else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--old", action="store_true", help="also time --method lp")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    chosen = [c for c in CASES if c.name in args.cases.split(",")]
    print("| case | bar | now | verdicts | before (`--method lp`) |")
    print("|---|---|---|---|---|")
    missed = 0
    for case in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            command = case.build(Path(tmp))
            seconds, what, status = run(command, args.timeout)
            before = ""
            if args.old and case.old:
                old = [*command, "--method", "lp"] + (["--force"] if command[0] == "sweep" else [])
                old_seconds, old_what, _ = run(old, args.timeout)
                before = f"{old_seconds:.2f} s, {old_what}"
        ok = seconds <= case.bar and status == 0
        missed += not ok
        print(f"| {case.title} | {case.bar:g} s | {seconds:.2f} s{'' if ok else ' (missed)'} "
              f"| {what} | {before} |", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
