"""Start-up (issue 25, point 5): `dpverify verify` of a one-party problem against a plain
numpy + highspy script that solves the same LP, whole processes, medians of several runs.

Usage: python benchmarks/bench_startup.py [--runs 7] [--bar 1.3]

The plain script builds the relaxed corner LP of `problems/bit-1.toml` (one party at
lambda = 3, the observer wants x_1, both accuracies: theory.md 1.7) from arrays, solves
it with HiGHS and prints the optimum: the least a tool can do for that question in
Python. `dpverify verify --json` does that and more (RR's value, the verdict, its proof).
Prints the medians, their ratio and what `dpverify` imported that the plain script did
not; exits 1 when the ratio is above `--bar`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "bit-1.toml"

PLAIN = r"""
import numpy as np
import highspy

# one party, lambda = 3: the corners (3, 1)/4 and (1, 3)/4; labels y = 0, 1; the observer
# wants x1 (indicator): maximise the average accuracy over theta[s, y] >= 0 with
# sum_(s, y) theta[s, y] T_s[x] = 1 for every input x
T = np.array([[3.0, 1.0], [1.0, 3.0]]) / 4.0
gain = np.eye(2)
cols = [(s, y) for s in range(2) for y in range(2)]
A = np.array([[T[s, x] for (s, y) in cols] for x in range(2)])
c = np.array([sum(T[s, x] * gain[x, y] for x in range(2)) / 2 for (s, y) in cols])
h = highspy.Highs()
h.setOptionValue("output_flag", False)
lp = highspy.HighsLp()
lp.num_col_, lp.num_row_ = len(cols), 2
lp.col_cost_ = c
lp.col_lower_, lp.col_upper_ = np.zeros(len(cols)), np.full(len(cols), np.inf)
lp.row_lower_, lp.row_upper_ = np.ones(2), np.ones(2)
lp.sense_ = highspy.ObjSense.kMaximize
lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
lp.a_matrix_.start_ = np.arange(0, 2 * len(cols) + 1, 2, dtype=np.int32)
lp.a_matrix_.index_ = np.tile(np.arange(2, dtype=np.int32), len(cols))
lp.a_matrix_.value_ = A.T.ravel()
lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = len(cols), 2
h.passModel(lp)
h.run()
print(h.getInfo().objective_function_value)
"""


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0,):
        raise SystemExit(f"{' '.join(args)}: exit {done.returncode}: {done.stderr[-500:]}")
    return seconds


def imported(args: list[str]) -> set[str]:
    """The top-level packages a command imports (python -X importtime)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *args], capture_output=True,
                          text=True, check=False)
    names = set()
    for line in done.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--bar", type=float, default=1.3)
    args = parser.parse_args()
    plain = [sys.executable, "-c", PLAIN]
    verify = [sys.executable, "-m", "dpverify", "verify", str(PROBLEM), "--json"]
    version = [sys.executable, "-m", "dpverify", "--version"]
    out = subprocess.run(verify, capture_output=True, text=True, check=False)
    verdict = json.loads(out.stdout)[0]["verdict"]
    times = {name: [] for name in ("plain", "verify", "version")}
    for _ in range(args.runs):  # interleaved, so that load changes hit all three alike
        for name, command in (("plain", plain), ("verify", verify), ("version", version)):
            times[name].append(timed(command))
    med = {name: statistics.median(v) for name, v in times.items()}
    ratio = med["verify"] / med["plain"]
    extra = sorted(imported(["-m", "dpverify", "verify", str(PROBLEM), "--json"])
                   - imported(["-c", PLAIN]) - {"dpverify", "encodings", "site"})
    print("| command | median (s) | runs |")
    print("|---|---|---|")
    print(f"| plain numpy + highspy script, the same LP | {med['plain']:.3f} | {args.runs} |")
    print(f"| `dpverify verify problems/bit-1.toml --json` ({verdict}) | {med['verify']:.3f} "
          f"| {args.runs} |")
    print(f"| `dpverify --version` | {med['version']:.3f} | {args.runs} |")
    print()
    print(f"verify / plain = {ratio:.2f} (bar {args.bar:g}): "
          f"{'met' if ratio <= args.bar else 'missed'}")
    print(f"packages verify imports beyond the plain script: {', '.join(extra) or 'none'}")
    return 0 if ratio <= args.bar else 1


if __name__ == "__main__":
    sys.exit(main())
