"""The exact solve of the repair's complementary-slackness systems (theory/certificates/
repair.py): Gauss-Jordan in Fractions against python-flint's fmpq_mat, and where one
becomes faster than the other (policy.FLINT_RREF_ENTRIES; issue 25, point 5: a small
verification should not load python-flint for a system of a few unknowns).

Usage: python benchmarks/bench_rref.py [--repeat 5] [--seed 1] [--problems problems]

The systems that `verify` of the shipped problems solves (problems/*.toml, recorded as the
repair solves them), by size; then random systems like the repair's (rows x (unknowns + 1)
entries: rationals over a common denominator, about half of them zero, and rows of 0/1 for
the rules' sums), square and with fewer rows than unknowns; for each, the best of
`--repeat` runs of each path (python-flint already loaded, as in a process that has
imported it), checked to give the same reduced rows. Also prints what importing
python-flint costs a fresh process (the median of 9): the Fractions are worth keeping while a
system costs them less than that.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import statistics
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

from dpverify.policy import FLINT_RREF_ENTRIES
from dpverify.theory.certificates import repair
from dpverify.theory.certificates.repair import rref_flint, rref_fractions

SIZES = [(2, 2), (3, 3), (4, 4), (6, 6), (8, 8), (12, 12), (16, 16), (24, 24), (32, 32),
         (48, 48), (64, 64), (8, 16), (16, 32), (32, 64)]  # (rows, unknowns)


def system(rows: int, unknowns: int, rng: random.Random) -> tuple[list, list]:
    den = 3 ** 6
    a = [[Fraction(rng.randint(-den, den), den) if rng.random() < 0.5 else Fraction(0)
          for _ in range(unknowns)] for _ in range(rows - rows // 4)]
    a += [[Fraction(int(rng.random() < 0.3)) for _ in range(unknowns)]
          for _ in range(rows // 4)]
    return a, [Fraction(rng.randint(0, den), den) for _ in range(rows)]


def best(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def import_cost() -> float:
    def run(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start
    runs = [run("import flint") - run("pass") for _ in range(9)]
    return statistics.median(runs)


def shipped(folder: Path) -> list[tuple[list, list, int]]:
    """The systems `verify` of each problem file in `folder` solves (repair._rref wrapped
    to record them)."""
    from dpverify.cli import main

    seen: list[tuple[list, list, int]] = []
    solve = repair._rref

    def recording(rows: list, rhs: list, width: int) -> list:
        seen.append((rows, rhs, width))
        return solve(rows, rhs, width)

    repair._rref = recording
    try:
        for path in sorted(folder.glob("*.toml")):
            with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
                main(["verify", str(path), "--json"], standalone_mode=False)
    finally:
        repair._rref = solve
    return seen


def row(rows: int, unknowns: int, a: list, b: list, repeat: int) -> tuple[int, str]:
    if rref_fractions(a, b, unknowns) != rref_flint(a, b, unknowns):
        raise SystemExit(f"{rows} x {unknowns}: the two paths differ")
    frac = best(lambda: rref_fractions(a, b, unknowns), repeat)
    fl = best(lambda: rref_flint(a, b, unknowns), repeat)
    entries = rows * (unknowns + 1)
    return entries, (f"| {rows} | {unknowns} | {entries} | {1000 * frac:.3f} | {1000 * fl:.3f} "
                     f"| {frac / fl:.1f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--problems", type=Path, default=Path("problems"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rref_flint([[Fraction(1)]], [Fraction(1)], 1)  # python-flint loaded
    print(f"importing python-flint: {1000 * import_cost():.1f} ms (median of 9 processes)")
    print(f"policy.FLINT_RREF_ENTRIES = {FLINT_RREF_ENTRIES}")
    print()
    header = ("| rows | unknowns | entries | Fractions (ms) | python-flint (ms) | ratio |\n"
              "|---:|---:|---:|---:|---:|---:|")
    found = sorted({e: text for e, text in (row(len(a), w, a, b, args.repeat)
                                            for a, b, w in shipped(args.problems))}.items())
    print(f"the systems of `verify {args.problems}/*.toml` (one per size):")
    print(header)
    print("\n".join(text for _, text in found))
    print()
    print("random systems:")
    print(header)
    for rows, unknowns in SIZES:
        a, b = system(rows, unknowns, rng)
        print(row(rows, unknowns, a, b, args.repeat)[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
