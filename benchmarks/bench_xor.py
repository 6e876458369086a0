"""Time `dpverify verify` on observer XOR (both accuracies) for k = 4..K.

Usage: python benchmarks/bench_xor.py [--kmax 11] [--epsilon 1.0]
Prints a markdown table (seconds per accuracy, and the whole verification) for the README.
The bar: k = 8 verifies in under 5 s on a 2-core machine.
"""

from __future__ import annotations

import argparse
import math
import time

from dpverify.spec import loads
from dpverify.verifiers.dispatch import verify_spec
from dpverify.verifiers.multiparty.corner_lp import estimate_nonzeros
from dpverify.verifiers.options import VerifyOptions


def xor_spec(k: int, epsilon: float):
    text = f"""
[problem]
name = "xor-{k}"
parties = {k}
epsilon = {epsilon}
[observer]
function = "xor"
"""
    return loads(text, source=f"<xor-{k}>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kmin", type=int, default=4)
    parser.add_argument("--kmax", type=int, default=10)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--budget", type=float, default=60.0,
                        help="stop after the first k whose verification exceeds this (s)")
    args = parser.parse_args()
    print("| k | non-zeros (largest LP) | average (s) | worst (s) | total (s) | verdict |"
          " max abs error vs Corollary 3.1 |")
    print("|---|---|---|---|---|---|---|")
    for k in range(args.kmin, args.kmax + 1):
        spec = xor_spec(k, args.epsilon)
        options = VerifyOptions(max_nonzeros=10**9, method="lp")  # the corner LP's time
        start = time.perf_counter()
        result = verify_spec(spec, options)
        total = time.perf_counter() - start
        lam = math.exp(args.epsilon)
        closed = sum(math.comb(k, 2 * i) * lam ** (k - 2 * i)
                     for i in range(k // 2 + 1)) / (1 + lam) ** k
        secs = {r.accuracy: r.seconds for r in result.results}
        err = max(max(abs(r.relaxed_optimum - closed), abs(r.rr_value - closed))
                  for r in result.results)
        print(f"| {k} | {estimate_nonzeros(spec, options):,} | {secs['average']:.2f} | "
              f"{secs['worst']:.2f} | {total:.2f} | {result.verdict.value} | {err:.1e} |",
              flush=True)
        if total > args.budget:
            break


if __name__ == "__main__":
    main()
