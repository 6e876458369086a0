"""Time exact certificates  for an observer XOR problem.

Usage: python benchmarks/bench_certify.py [--cases 10:both,12:average] [--lambda 2]
       [--epsilon E] [--no-check]
Prints a markdown table for the README: per k and accuracy, the seconds to build the
certificate (`certify_agent`: the worst case solves RR's decision LP on the orbits of the
symmetric XOR, then everything exact), the seconds of the independent checker
(`dpverify.checker`), the status and the certificate's size. The bars: k = 10
with both accuracies under 30 s, k = 12 average under 60 s (certificates, 2-core machine).
"""

from __future__ import annotations

import argparse
import json
import time

from dpverify.checker import check_certificate
from dpverify.spec import loads
from dpverify.verifiers.certifiers import certify_agent, dump_certificate

BARS = {(10, "both"): 30.0, (12, "average"): 60.0}


def xor_spec(k: int, privacy: str):
    text = f"""
[problem]
name = "xor-{k}"
parties = {k}
{privacy}
[observer]
function = "xor"
gain = "indicator"
"""
    return loads(text, source=f"<xor-{k}>")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", default="10:both,12:average",
                        help="k:accuracy pairs, accuracy average, worst or both")
    parser.add_argument("--lambda", dest="lam", default="2")
    parser.add_argument("--epsilon", default=None, help="use epsilon (brackets) instead")
    parser.add_argument("--no-check", action="store_true")
    args = parser.parse_args()
    privacy = f"epsilon = {args.epsilon}" if args.epsilon else f'lambda = "{args.lam}"'
    print(f"observer XOR, {privacy}")
    print()
    print("| k | accuracy | certify (s) | check (s) | status | certificate (KiB) | bar |")
    print("|---|---|---|---|---|---|---|")
    for case in args.cases.split(","):
        k_text, which = case.split(":")
        k = int(k_text)
        spec = xor_spec(k, privacy)
        accuracies = ["average", "worst"] if which == "both" else [which]
        total = 0.0
        for accuracy in accuracies:
            start = time.perf_counter()
            cert = certify_agent(spec, spec.agents[0], accuracy)
            built = time.perf_counter() - start
            total += built
            checked = "-"
            if not args.no_check:
                start = time.perf_counter()
                result = check_certificate(spec, json.loads(json.dumps(cert)))
                checked = f"{time.perf_counter() - start:.2f}"
                if not result.ok:
                    raise SystemExit(f"the checker rejected xor-{k} {accuracy}: {result.message}")
            size = len(dump_certificate(cert).encode()) / 1024
            bar = BARS.get((k, which))
            last = accuracy == accuracies[-1]
            bar_cell = f"{total:.2f} s < {bar:.0f} s" if bar and last else ""
            if bar and last and total >= bar:
                bar_cell += " MISSED"
            print(f"| {k} | {accuracy} | {built:.2f} | {checked} | {cert['status']} | "
                  f"{size:.0f} | {bar_cell} |")


if __name__ == "__main__":
    main()
