"""Time `dpverify verify` on minimax count problems for n = 10, 25, 50, 100 (and 200).

Usage: python benchmarks/bench_count.py [--sizes 10,25,50,100] [--epsilon 0.1]
       [--losses abs,square,indicator] [--form chain] [--old]
Prints a markdown table for the README: per loss, the seconds of the whole verification
(the default route: the geometric mechanism with its best post-processing and its own
dual certificate, the optimal-mechanism LP only when that does not decide), the largest
LP's non-zeros, the verdict and the gap. With `--old`, also the seconds of `--method lp`
(the optimal-mechanism LP always: the route before the certificate), side by side. The
bar: n = 50 verifies in under 10 s on a 2-core machine; n = 200 in under 30 s.

It also prints, per n, the optimal-mechanism LP's estimated seconds (policy.COUNT_LP_SECONDS,
the time-aware guard) beside its measured seconds with `--old`, so that the constant can be
checked against this machine.
"""

from __future__ import annotations

import argparse
import os
import time

from dpverify.spec import loads
from dpverify.verifiers.count.verifier import SIDES, estimate_nonzeros, lp_seconds, verify_count
from dpverify.verifiers.options import VerifyOptions


def count_spec(n: int, epsilon: float, loss: str):
    text = f"""
[problem]
name = "count-{loss}-{n}"
kind = "count"
n = {n}
epsilon = {epsilon}
[consumer]
loss = "{loss}"
"""
    return loads(text, source=f"<count-{loss}-{n}>")


def timed(spec, options) -> tuple[float, str, float | None]:
    start = time.perf_counter()
    (r,) = verify_count(spec, options).results
    return time.perf_counter() - start, r.verdict.value, r.gap


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,25,50,100")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--losses", default="abs,square,indicator")
    parser.add_argument("--form", choices=["chain", "dense"], default="chain")
    parser.add_argument("--old", action="store_true", help="also time --method lp")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    losses = args.losses.split(",")
    options = VerifyOptions(max_nonzeros=10**9, form=args.form)
    old = VerifyOptions(max_nonzeros=10**9, form=args.form, method="lp")
    print(f"epsilon = {args.epsilon}, minimax consumer, no side information, "
          f"post-processing LP form: {args.form}; load {os.getloadavg()[0]:.1f}")
    print()
    heads = [f"{loss} (s)" + (" / --method lp" if args.old else "") for loss in losses]
    print("| n | non-zeros (largest LP) | LP estimate (s) | " + " | ".join(heads)
          + " | verdicts | max abs gap |")
    print("|---|---|---|" + "---|" * len(losses) + "---|---|")
    for n in sizes:
        cells, verdicts, gaps = [], set(), []
        nnz = mechanism = 0
        for loss in losses:
            spec = count_spec(n, args.epsilon, loss)
            nnz = max(nnz, estimate_nonzeros(spec, options))
            mechanism = max(mechanism, SIDES[spec.setting].nonzeros(spec))
            seconds, verdict, gap = timed(spec, options)
            cell = f"{seconds:.2f}"
            verdicts.add(verdict)
            if args.old:
                before, verdict, _ = timed(spec, old)
                cell += f" / {before:.2f}"
                verdicts.add(verdict)
            cells.append(cell)
            if gap is not None:
                gaps.append(abs(gap))
        gap = f"{max(gaps):.1e}" if gaps else "-"
        print(f"| {n} | {nnz:,} | {lp_seconds(mechanism):.1f} | " + " | ".join(cells)
              + f" | {', '.join(sorted(verdicts))} | {gap} |", flush=True)
    print(f"\nload {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
