"""Time `dpverify verify` on minimax count problems for n = 10, 25, 50, 100.

Usage: python benchmarks/bench_count.py [--sizes 10,25,50,100] [--epsilon 0.1]
       [--losses abs,square,indicator] [--form chain]
Prints a markdown table for the README: per loss, the seconds of the whole verification
(the optimal-mechanism LP and the post-processing LP), the largest LP's non-zeros, the
verdict and the gap. The bar: n = 50 verifies in under 10 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import time

from dpverify.spec import loads
from dpverify.verifiers.count.verifier import estimate_nonzeros, verify_count
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10,25,50,100")
    parser.add_argument("--epsilon", type=float, default=0.1)
    parser.add_argument("--losses", default="abs,square,indicator")
    parser.add_argument("--form", choices=["chain", "dense"], default="chain")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    losses = args.losses.split(",")
    options = VerifyOptions(max_nonzeros=10**9, form=args.form)
    print(f"epsilon = {args.epsilon}, minimax consumer, no side information, "
          f"post-processing LP form: {args.form}")
    print()
    print("| n | non-zeros (largest LP) | " + " | ".join(f"{loss} (s)" for loss in losses)
          + " | verdicts | max abs gap |")
    print("|---|---|" + "---|" * len(losses) + "---|---|")
    for n in sizes:
        cells, verdicts, gaps = [], set(), []
        nnz = 0
        for loss in losses:
            spec = count_spec(n, args.epsilon, loss)
            nnz = max(nnz, estimate_nonzeros(spec, options))
            start = time.perf_counter()
            result = verify_count(spec, options)
            cells.append(f"{time.perf_counter() - start:.2f}")
            (r,) = result.results
            verdicts.add(r.verdict.value)
            if r.gap is not None:
                gaps.append(abs(r.gap))
        gap = f"{max(gaps):.1e}" if gaps else "-"
        print(f"| {n} | {nnz:,} | " + " | ".join(cells) + f" | {', '.join(sorted(verdicts))} "
              f"| {gap} |", flush=True)


if __name__ == "__main__":
    main()
