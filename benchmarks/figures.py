"""Regenerate the gallery of docs/figures/ (`make figures`), through the Python API.

Both styles: NAME.png (the screen style) and NAME-paper.pdf with NAME-paper.png beside
it (the paper style: a 3.3 in journal column, 8 pt text, TrueType fonts, no title).

1. xor-epsilon: the observer's XOR against epsilon for k = 2, 4, 8: the bound, RR and
   Corollary 3.1's closed form (three curves that agree; the average and the worst case
   are one panel), its small-epsilon expansion, and below them bound - RR inside the band
   |gap| <= tol: no gap.
2. majority-1000: majority of k = 1000 bits against epsilon, at exact rational
   lambdas (the orbit method proves each value exactly; about 5 minutes on 2 cores). The
   script first tries one point with a 60 s limit, and skips the figure, saying why,
   when dpverify cannot verify it.
3. count-gap-alpha: a count consumer whose loss is not monotone (the parity of the
   error, problems/count/parity-gap-6.toml): the optimal mechanism, the geometric
   mechanism with its best post-processing, and the gap between them, against alpha.
4. survey-3-delta: every Boolean function of 3 bits up to symmetry under approximate
   privacy (docs/theory.md 7.12), heat maps over (epsilon, delta) of the largest gain of
   interaction over RR(epsilon, delta), both accuracies (a few minutes on 2 cores).

Usage: python benchmarks/figures.py [--jobs N] [--out DIR] [--only NAME...]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import dpverify
from dpverify import Problem

ROOT = Path(__file__).resolve().parents[1]
MAJORITY_LAMBDAS = ["21/20", "11/10", "6/5", "13/10", "3/2", "7/4", "2", "5/2", "3", "4",
                    "6", "10"]
PROBE_TIMEOUT = 60.0  # seconds for the one probe point of the k = 1000 figure


def draw(sweep: dpverify.Sweep, out: Path, name: str, **options) -> None:
    """The figure in both styles: NAME.png, NAME-paper.pdf and NAME-paper.png."""
    sweep.plot(out / f"{name}.png", **options)
    for suffix in ("pdf", "png"):
        sweep.plot(out / f"{name}-paper.{suffix}", style="paper", **options)


def xor_epsilon(out: Path, jobs: int) -> str:
    problem = Problem.multiparty(
        parties=2, epsilon=1.0, observer="xor", accuracy="average", name="xor",
        description="The observer's XOR of k bits, every party at the same epsilon.")
    sweep = dpverify.sweep(problem, epsilon="0.1:4:40", parties=[2, 4, 8], jobs=jobs)
    draw(sweep, out, "xor-epsilon")
    return _summary(sweep)


def majority_1000(out: Path, jobs: int) -> str:
    # Exact rational lambdas: the orbit method proves each value exactly (an epsilon, whose
    # lambda = e^epsilon is irrational, needs rigorous brackets and takes much longer).
    problem = Problem.multiparty(
        parties=1000, lambda_="11/10", observer="majority", accuracy="average",
        name="majority-1000", description="Majority of 1000 bits, every party at one level.")
    probe = dpverify.sweep(problem, lambda_=["11/10"], jobs=1, timeout=PROBE_TIMEOUT)
    point = probe.points[0] if probe.points else None
    if point is None or point.verdict != "optimal":
        reason = (point.result.get("reason") or _first_reason(point.result)) if point else \
            "interrupted"
        return (f"skipped: dpverify cannot verify majority at k = 1000 within "
                f"{PROBE_TIMEOUT:.0f} s ({reason}); this figure needs the orbit method")
    sweep = dpverify.sweep(problem, lambda_=MAJORITY_LAMBDAS, jobs=jobs)
    draw(sweep, out, "majority-1000", x="epsilon")
    return _summary(sweep)


def count_gap_alpha(out: Path, jobs: int) -> str:
    problem = dpverify.load(ROOT / "problems" / "count" / "parity-gap-6.toml")
    sweep = dpverify.sweep(problem, alpha="1/40:39/40:39", jobs=jobs)
    draw(sweep, out, "count-gap-alpha")
    return _summary(sweep)


def survey_3_delta(out: Path, jobs: int) -> str:
    report = dpverify.survey(alphabet=2, parties=3, epsilon="0.5,1,1.5,2",
                             delta="1/20,1/10,3/20,1/5", jobs=jobs, save_dir=None)
    dpverify.plot_survey(report, out / "survey-3-delta.png")
    for suffix in ("pdf", "png"):
        dpverify.plot_survey(report, out / f"survey-3-delta-paper.{suffix}", style="paper")
    helps = sum(r["interaction-helps"] for r in report.rows())
    closed = sum(r["closed"] for r in report.rows())
    return (f"{len(report.results)} verifications, {helps} interaction-helps ({closed} "
            f"closed) in {report.seconds:.1f} s")


def _first_reason(result: dict) -> str:
    for r in result.get("results", ()):
        if r.get("reason"):
            return str(r["reason"])
    return str(result.get("verdict"))


def _summary(sweep: dpverify.Sweep) -> str:
    counts = ", ".join(f"{n} {c}" for c, n in sorted(sweep.counts().items()))
    return f"{len(sweep.points)} points ({counts}) in {sweep.seconds:.1f} s"


FIGURES = {"xor-epsilon": xor_epsilon, "majority-1000": majority_1000,
           "count-gap-alpha": count_gap_alpha, "survey-3-delta": survey_3_delta}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    parser.add_argument("--only", nargs="*", choices=sorted(FIGURES), default=None)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.only or FIGURES:
        start = time.perf_counter()
        message = FIGURES[name](args.out, args.jobs)
        print(f"{name}: {message} ({time.perf_counter() - start:.1f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
