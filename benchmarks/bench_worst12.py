"""The worst case without symmetry at k = 12 (issue 10's last bar): 12 distinct epsilons,
a random 3-valued table function, observer, worst-case accuracy.

For each seed, a problem file is written (epsilons drawn in [0.2, 2.4], rounded to three
digits; 4096 table values in {0, 1, 2}) and three commands run in fresh processes, start-up
included:

* `dpverify verify --json FILE` - the verdict, method and the bracket's width (the bar:
  `optimal`, with a proof or a bracket of width at most 1e-9, within 60 s);
* `dpverify certify FILE -o DIR --json` - the certificate's status and width;
* `dpverify check-cert FILE CERT` - the independent checker.

Usage: python benchmarks/bench_worst12.py [--seeds 0,1,2] [--parties 12] [--timeout S]
       [--write-only DIR]   (write the problem files into DIR and run nothing)
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

DPVERIFY = [sys.executable, "-m", "dpverify"]
BAR_SECONDS, BAR_WIDTH = 60.0, 1e-9


def problem(k: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    eps = [round(float(e), 3) for e in rng.uniform(0.2, 2.4, k)]
    table = rng.integers(0, 3, 2 ** k).tolist()
    return (f'[problem]\nname = "worst{k}-seed{seed}"\nparties = {k}\nepsilon = {eps}\n'
            f'accuracy = "worst"\n[observer]\nfunction = {{ table = {table} }}\n')


def run(args: list[str], timeout: float):
    start = time.perf_counter()
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, time.perf_counter() - start
    return done, time.perf_counter() - start


def width_of(record: dict) -> float | None:
    proof = record.get("proof") or {}
    return proof.get("width")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--parties", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--write-only", metavar="DIR",
                        help="write the problem files into DIR and run nothing")
    args = parser.parse_args()
    if args.write_only:
        folder = Path(args.write_only)
        folder.mkdir(parents=True, exist_ok=True)
        for seed in (int(s) for s in args.seeds.split(",")):
            path = folder / f"worst{args.parties}-seed{seed}.toml"
            path.write_text(problem(args.parties, seed))
            print(path)
        return
    print(f"{datetime.date.today()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, {platform.machine()}; whole commands, start-up "
          "included\n")
    print("| seed | verify (s) | verdict | method | bracket width | certify (s) | status "
          "| check-cert (s) | checker | bar |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for seed in (int(s) for s in args.seeds.split(",")):
            path = Path(tmp) / f"worst-{seed}.toml"
            path.write_text(problem(args.parties, seed))
            done, seconds = run([*DPVERIFY, "verify", "--json", str(path)], args.timeout)
            if done is None or not done.stdout.strip():
                why = "timeout" if done is None else f"exit {done.returncode}"
                print(f"| {seed} | {seconds:.1f} | {why} | | | | | | | no |", flush=True)
                continue
            result = json.loads(done.stdout)[0]["results"][0]
            width = width_of(result)
            certs = Path(tmp) / f"certs-{seed}"
            made, c_seconds = run([*DPVERIFY, "certify", str(path), "-o", str(certs),
                                   "--json"], args.timeout)
            records = json.loads(made.stdout) if made is not None and made.stdout else []
            status = records[0]["status"] if records else "none"
            files = [r["path"] for r in records]
            checked, k_seconds = run([*DPVERIFY, "check-cert", str(path), *files],
                                     args.timeout)
            ok = "OK" if checked is not None and checked.returncode == 0 and files else "FAIL"
            met = (result["verdict"] == "optimal" and seconds <= BAR_SECONDS
                   and width is not None and width <= BAR_WIDTH)
            shown = "n/a" if width is None else f"{width:.2e}"
            print(f"| {seed} | {seconds:.1f} | {result['verdict']} | {result['method']} | "
                  f"{shown} | {c_seconds:.1f} | {status} | {k_seconds:.1f} | {ok} | "
                  f"{'yes' if met else 'no'} |", flush=True)


if __name__ == "__main__":
    main()
