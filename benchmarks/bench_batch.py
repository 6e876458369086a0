"""Benchmark `dpverify batch`: 100 small problems (k <= 5), --jobs 1 against --jobs 2, and
the resumed run that finds everything in the store.

Targets (on 2 cores): --jobs 2 under 15 s; a speed-up over --jobs 1 of at least
1.6x; the resumed run under 3 s. The row without --jobs shows what the default picked
(one worker per idle CPU: runner/executors/base.py `default_workers`) and whether it was
within 10% of the faster of --jobs 1 and 2. Each figure is the wall time of the whole
command (a new Python process, the spawn pool's start-up, storing every result), best of
--repeat runs (interleaved; every run's time is printed below the table, with the load
average before and after). Prints a markdown table; exits 1 when a target is missed.

The last row is a control that does not involve the batch machinery: the same problems
verified by two plain processes at once against one. On an idle 2-core machine it is
close to 2x; when other work holds a core it drops towards 1x, and so does any speed-up.

    .venv/bin/python benchmarks/bench_batch.py [--problems 100] [--repeat 1] [--dask]
    .venv/bin/python benchmarks/bench_batch.py --problems 40 --repeat 5   # issue 25
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FUNCTIONS = ["xor", "and", "or", "majority", "sum", "threshold:2", "bit:1"]
GAINS = {"sum": "-square"}


def problem(i: int) -> str:
    """The i-th problem: k = 2..5, an observer and (every other problem) one party."""
    k = 2 + i % 4
    f, g = FUNCTIONS[i % len(FUNCTIONS)], FUNCTIONS[(i + 3) % len(FUNCTIONS)]
    text = (f'[problem]\nname = "bench-{i:03d}"\nparties = {k}\n'
            f"epsilon = {0.25 + 0.25 * (i % 7)}\n\n"
            f'[observer]\nfunction = "{f}"\ngain = "{GAINS.get(f, "indicator")}"\n')
    if i % 2 == 0:
        text += (f'\n[[party]]\nindex = {1 + i % k}\nfunction = "{g}"\n'
                 f'gain = "{GAINS.get(g, "indicator")}"\n')
    return text


def run(args: list[str]) -> float:
    start = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "dpverify", "batch", *args, "-q"],
                         check=False, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if res.returncode != 0:
        sys.exit(f"dpverify batch {' '.join(args)} failed ({res.returncode}):\n{res.stdout}"
                 f"{res.stderr}")
    return elapsed


CONTROL = """
import sys, time
from dpverify.spec import loads
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.dispatch import verify_spec
texts = [open(p).read() for p in sys.argv[1:]]
options = VerifyOptions(threads=1)
verify_spec(loads(texts[0]), options)
start = time.perf_counter()
for text in texts:
    verify_spec(loads(text), options)
print(time.perf_counter() - start)
"""


def control(files: list[Path]) -> float:
    """Available parallelism: two plain processes, each verifying half, against one."""
    def launch(part: list[Path]) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", CONTROL, *map(str, part)],
                                stdout=subprocess.PIPE, text=True)

    solo = float(launch(files).communicate()[0])
    pair = [launch(files[0::2]), launch(files[1::2])]
    both = max(float(p.communicate()[0]) for p in pair)
    return solo / both


TIMES: dict[str, list[float]] = {}  # every run's wall time, by row (the medians' table)


def best(repeat: int, make_args, row: str = "") -> float:
    times = [run(make_args(r)) for r in range(repeat)]
    TIMES.setdefault(row, []).extend(times)
    return min(times)


def default_workers(problems: int) -> int:
    """What `--jobs` defaults to now (dpverify.runner.executors.base.default_workers)."""
    from dpverify.runner.executors.base import default_workers as chosen

    return chosen(problems)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=1, help="best of N runs per row")
    parser.add_argument("--dask", action="store_true",
                        help="also time --scheduler local --jobs 2 (a Dask LocalCluster)")
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as tmp:
        root = Path(tmp)
        folder = root / "problems"
        folder.mkdir()
        for i in range(ns.problems):
            (folder / f"bench-{i:03d}.toml").write_text(problem(i), encoding="utf-8")

        def fresh(jobs: int | None, extra: tuple[str, ...] = ()):
            given = ["--jobs", str(jobs)] if jobs else []
            return lambda r: [str(folder), *given, "--store",
                              str(root / f"s-{jobs}-{'-'.join(extra)}-{r}.sqlite"), *extra]

        load_before = os.getloadavg()[0]
        t1, t2, td, picks = [], [], [], []
        for r in range(ns.repeat):  # interleaved, so that load changes hit all rows alike
            t1.append(run(fresh(1)(r)))
            t2.append(run(fresh(2)(r)))
            picks.append(default_workers(ns.problems))
            td.append(run(fresh(None)(r)))
        load_after = os.getloadavg()[0]
        TIMES.update({"--jobs 1": t1, "--jobs 2": t2, "default": td})
        t1, t2, tdefault = min(t1), min(t2), min(td)
        resumed = best(ns.repeat, lambda r: [str(folder), "--jobs", "2", "--store",
                                             str(root / "s-2--0.sqlite")])
        rows = [("--jobs 1", t1, ""),
                ("--jobs 2", t2, f"< 15 s: {'yes' if t2 < 15 else 'NO'}"),
                ("speed-up (jobs 1 / jobs 2)", None,
                 f">= 1.6x: {'yes' if t1 / t2 >= 1.6 else 'NO'} ({t1 / t2:.2f}x)"),
                (f"no --jobs (the default picked {', '.join(map(str, picks))} workers)",
                 tdefault, f"<= the faster of jobs 1, 2 x 1.1: "
                 f"{'yes' if tdefault <= 1.1 * min(t1, t2) else 'NO'}"),
                ("resumed (all stored)", resumed, f"< 3 s: {'yes' if resumed < 3 else 'NO'}")]
        if ns.dask:
            tdask = best(ns.repeat, fresh(2, ("--scheduler", "local")))
            rows.insert(2, ("--scheduler local --jobs 2", tdask, ""))
        parallel = max(control(sorted(folder.glob("*.toml"))) for _ in range(ns.repeat))
        rows.append(("control: 2 plain processes / 1", None, f"{parallel:.2f}x"))
    n = ns.problems
    print(f"`dpverify batch`, {n} problems (k = 2..5), {os.cpu_count()} CPUs, "
          f"best of {ns.repeat}, load average {load_before:.1f} before, "
          f"{load_after:.1f} after\n")
    print("| run | wall time (s) | problems/s | target |")
    print("|---|---:|---:|---|")
    for name, t, target in rows:
        if t is None:
            print(f"| {name} | | | {target} |")
        else:
            print(f"| {name} | {t:.2f} | {n / t:.1f} | {target} |")
    print()
    print("every run (s): " + "; ".join(f"{row} {', '.join(f'{t:.2f}' for t in times)}"
                                        for row, times in TIMES.items() if row))
    ok = t2 < 15 and t1 / t2 >= 1.6 and resumed < 3
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
