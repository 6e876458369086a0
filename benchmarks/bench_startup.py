"""Start-up (issue 25, point 5): `dpverify verify` of a small problem against a plain numpy +
highspy script that builds and solves the same LPs, whole processes, medians of several
interleaved runs (wall-clock and the child's CPU time, which load disturbs less).

Usage: python benchmarks/bench_startup.py [--runs 9] [--bar 1.3] [--before DIR]

`python -P -m dpverify` runs this checkout's dpverify (PYTHONPATH), wherever the benchmark
is started; with `--before DIR` (a checkout from before a change, `git worktree add DIR
COMMIT`) that one's runs too, in the same interleaved loop: paired before/after numbers.

The problems (written to a temporary directory; the observer only, both accuracies):

* `one`: one party at lambda = 3, the observer wants x_1 (no python-flint on its route);
* `three`: three parties at lambda = 2, majority (the worst case's exact prior solves a
  rational system of 6 entries: in Fractions, policy.FLINT_RREF_ENTRIES, not python-flint);
* `three-average`: the same, the average accuracy only (no python-flint).

The plain script builds the relaxed corner LP of theory.md 1.7 for each accuracy (average:
eq. (17); worst: eq. (20), one more column t) from numpy arrays, solves both with HiGHS and
prints the two optima: the least a tool can do for that question in Python. `dpverify
verify` does that and more (RR's value, the verdict, the exact certificate and its
independent check); the benchmark checks that both print the same optima. Prints a table,
the ratios and what `dpverify` imported that the plain script did not (the heavy packages;
how many of dpverify's modules and frozen dataclasses `verify --json` makes, each
dataclass ~0.35 ms to create on Python 3.11, and the garbage collections of the run,
against the plain script's); exits 1 when a ratio of medians (wall-clock) is above
`--bar`.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBLEMS = {  # name: (parties, lambda, function, the accuracies)
    "one": (1, 3, "bit:1", ("average", "worst")),
    "three": (3, 2, "majority", ("average", "worst")),
    "three-average": (3, 2, "majority", ("average",)),
}
TABLES = {"bit:1": lambda x: x[0], "majority": lambda x: int(2 * sum(x) > len(x))}

PLAIN = r"""
import json, sys
import numpy as np
import highspy

k, lam, table, accuracies = json.loads(sys.argv[1])
inputs = [[(x >> (k - 1 - i)) & 1 for i in range(k)] for x in range(2 ** k)]
f = np.array(table)
labels = sorted(set(table))
gain = np.array([[1.0 if a == y else 0.0 for y in labels] for a in f])  # gain[x, y]
# RR's corners T_s[x] = prod_i (lam if x_i = s_i else 1) / (1 + lam)
T = np.array([[np.prod([lam if xi == si else 1.0 for xi, si in zip(x, s)]) / (1 + lam) ** k
               for x in inputs] for s in inputs])
cols = [(s, y) for s in range(2 ** k) for y in range(len(labels))]
n, m = len(cols), 2 ** k
P = np.array([[T[s, x] for (s, y) in cols] for x in range(m)])  # P[x, col] = T_s[x]
G = np.array([[T[s, x] * gain[x, y] for (s, y) in cols] for x in range(m)])


def solve(cost, rows, lower, upper, col_lower, col_upper):
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = cost.size, rows.shape[0]
    lp.col_cost_, lp.col_lower_, lp.col_upper_ = cost, col_lower, col_upper
    lp.row_lower_, lp.row_upper_ = lower, upper
    lp.sense_ = highspy.ObjSense.kMaximize
    a = lp.a_matrix_
    a.format_ = highspy.MatrixFormat.kColwise
    nz = [np.flatnonzero(rows[:, j]) for j in range(cost.size)]
    a.start_ = np.cumsum([0] + [len(i) for i in nz]).astype(np.int32)
    a.index_ = np.concatenate(nz).astype(np.int32)
    a.value_ = np.concatenate([rows[i, j] for j, i in enumerate(nz)])
    a.num_col_, a.num_row_ = cost.size, rows.shape[0]
    h.passModel(lp)
    h.run()
    return h.getInfo().objective_function_value


out = {}
if "average" in accuracies:  # maximise (1 / 2^k) sum_x sum_l gain(x, l) P_l[x], rows sum to 1
    out["average"] = solve(G.sum(axis=0) / m, P, np.ones(m), np.ones(m),
                           np.zeros(n), np.full(n, np.inf))
if "worst" in accuracies:  # maximise t, sum_l gain(x, l) P_l[x] - t >= 0 for every x
    rows = np.block([[P, np.zeros((m, 1))], [G, -np.ones((m, 1))]])
    cost = np.concatenate([np.zeros(n), [1.0]])
    out["worst"] = solve(cost, rows, np.concatenate([np.ones(m), np.zeros(m)]),
                         np.concatenate([np.ones(m), np.full(m, np.inf)]),
                         np.concatenate([np.zeros(n), [-np.inf]]), np.full(n + 1, np.inf))
print(json.dumps(out))
"""


def problem_text(name: str) -> str:
    parties, lam, function, accuracies = PROBLEMS[name]
    accuracy = "" if len(accuracies) == 2 else f'accuracy = "{accuracies[0]}"\n'
    return (f'[problem]\nname = "{name}"\nparties = {parties}\nlambda = "{lam}"\n{accuracy}'
            f'[observer]\nfunction = "{function}"\n')


def plain_args(name: str) -> str:
    parties, lam, function, accuracies = PROBLEMS[name]
    table = [TABLES[function]([(x >> (parties - 1 - i)) & 1 for i in range(parties)])
             for x in range(2 ** parties)]
    return json.dumps([parties, lam, table, list(accuracies)])


def code_env(root: Path) -> dict[str, str]:
    """The environment in which `python -P -m dpverify` runs the dpverify of `root` (-P:
    the current folder is not put first on sys.path, so the folder the benchmark is run
    from, a checkout itself, does not choose the code)."""
    return {**os.environ, "PYTHONPATH": str(root)}


def timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(wall-clock seconds, the child's CPU seconds, user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False, env=env)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr[-500:]}")
    return seconds, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def imported(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    """The top-level packages a command imports (python -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                          text=True, check=False, env=env)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


# One in-process `verify` (the command line's own entry, standalone off): dpverify's modules
# imported, the frozen dataclasses made, and the garbage collections (count, milliseconds).
MADE = r"""
import dataclasses, gc, json, sys, time
made, spent, started = [0], [0.0, 0], [0.0]
process = dataclasses._process_class
def counted(cls, *args, **kwargs):
    made[0] += 1
    return process(cls, *args, **kwargs)
dataclasses._process_class = counted
def timed(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        spent[0] += time.perf_counter() - started[0]
        spent[1] += 1
gc.callbacks.append(timed)
if sys.argv[1] == "plain":
    sys.argv = sys.argv[2:]  # the script and its argument, as the plain run has them
    exec(open(sys.argv[0]).read())
else:
    from dpverify.cli import main
    try:
        main(sys.argv[1:], standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps([sum(m.split(".")[0] == "dpverify" for m in sys.modules), made[0],
                  spent[1], 1000 * spent[0]]), file=sys.stderr)
"""


def made(args: list[str], env: dict[str, str] | None = None) -> tuple[int, int, int, float]:
    """(dpverify modules imported, frozen dataclasses made, garbage collections, their ms)
    of one run of `args` (`plain SCRIPT JSON`, or dpverify's arguments), in a fresh
    process."""
    done = subprocess.run([sys.executable, "-P", "-c", MADE, *args], capture_output=True,
                          text=True, check=False, env=env)
    modules, classes, collections, ms = json.loads(done.stderr.strip().splitlines()[-1])
    return modules, classes, collections, ms


def same_optima(verify: list[str], plain: list[str], env: dict[str, str]) -> str:
    """The verdict, after checking that dpverify and the plain script found the same optima."""
    ours = json.loads(subprocess.run(verify, capture_output=True, text=True, check=False,
                                     env=env).stdout)[0]
    theirs = json.loads(subprocess.run(plain, capture_output=True, text=True,
                                       check=True).stdout.splitlines()[-1])  # after the banner
    found = {r["accuracy"]: r["relaxed_optimum"] for r in ours["results"]}
    if set(found) != set(theirs) or any(abs(found[a] - theirs[a]) > 1e-9 for a in theirs):
        raise SystemExit(f"{ours['problem']}: dpverify {found}, the plain script {theirs}")
    return ours["verdict"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--bar", type=float, default=1.3)
    parser.add_argument("--before", type=Path, metavar="DIR",
                        help="a checkout of dpverify from before a change (git worktree add "
                             "DIR COMMIT): its `verify` runs beside this checkout's in the "
                             "same interleaved loop, rows `before: ...`")
    args = parser.parse_args()
    roots = {"": ROOT, **({"before: ": args.before.resolve()} if args.before else {})}
    for root in roots.values():  # byte-compiled first, as an installed package is (with
        # PYTHONDONTWRITEBYTECODE set, an edited module would be compiled by every run)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(root / "dpverify")],
                       check=True, capture_output=True)
    folder = Path(tempfile.mkdtemp(prefix="dpverify-startup-"))
    script = folder / "plain.py"
    script.write_text(PLAIN, encoding="utf-8")
    rows, worst = [], 0.0
    for name in PROBLEMS:
        path = folder / f"{name}.toml"
        path.write_text(problem_text(name), encoding="utf-8")
        plain = [sys.executable, "-P", str(script), plain_args(name)]
        verify = [sys.executable, "-P", "-m", "dpverify", "verify", str(path)]
        # label: (arguments, environment)
        commands: dict[str, tuple[list[str], dict[str, str] | None]] = {"plain": (plain, None)}
        for prefix, root in roots.items():
            env = code_env(root)
            verdict = same_optima([*verify, "--json"], plain, env)
            commands[f"{prefix}verify --json"] = ([*verify, "--json"], env)
            commands[f"{prefix}verify"] = (verify, env)
        times: dict[str, list[tuple[float, float]]] = {c: [] for c in commands}
        for _ in range(args.runs):  # interleaved, so that load changes hit all alike
            for label, (command, env) in commands.items():
                times[label].append(timed(command, env))
        wall = {c: statistics.median(t[0] for t in v) for c, v in times.items()}
        cpu = {c: statistics.median(t[1] for t in v) for c, v in times.items()}
        for label in commands:
            ratio = wall[label] / wall["plain"]
            if label in ("verify --json", "verify"):  # this checkout's, not the before's
                worst = max(worst, ratio)
            rows.append(f"| {name} ({verdict}) | {label} | {wall[label]:.3f} | {cpu[label]:.3f} "
                        f"| {ratio:.2f} | {cpu[label] / cpu['plain']:.2f} |")
        json_args, json_env = commands["verify --json"]
        extra = sorted(imported(json_args[1:], json_env) - imported(plain[1:])
                       - {"dpverify", "encodings", "site"})
        heavy = [p for p in extra if p in ("flint", "scipy", "cvxpy", "rich", "pandas",
                                           "matplotlib", "dask", "sqlite3", "multiprocessing")]
        rows.append(f"| {name} | heavy packages beyond the plain script: "
                    f"{', '.join(heavy) or 'none'} | | | | |")
        plain_gc = made(["plain", *plain[2:]])
        for prefix, root in roots.items():
            modules, classes, collections, ms = made(json_args[4:], code_env(root))
            rows.append(f"| {name} | {prefix}`verify --json` made {modules} dpverify modules, "
                        f"{classes} frozen dataclasses; {collections} garbage collections, "
                        f"{ms:.1f} ms (plain: {plain_gc[2]}, {plain_gc[3]:.1f} ms; one run) "
                        "| | | | |")
    load = os.getloadavg()
    print(f"runs: {args.runs} of each, interleaved; medians; load average {load[0]:.1f} "
          f"(5 min: {load[1]:.1f}) at the end")
    print()
    print("| problem | command | wall (s) | CPU (s) | wall / plain | CPU / plain |")
    print("|---|---|---|---|---|---|")
    print("\n".join(rows))
    print()
    print(f"largest wall-clock ratio {worst:.2f} (bar {args.bar:g}): "
          f"{'met' if worst <= args.bar else 'missed'}")
    return 0 if worst <= args.bar else 1


if __name__ == "__main__":
    sys.exit(main())
