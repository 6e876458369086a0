"""Time symmetric problems at k = 10, 100, 1000 and 10000 parties (the orbit method).

Each case runs the whole command in a fresh process (start-up included) on the machine it
runs on, with the default options: `dpverify verify --json` (its verdict, method and value)
and, for the average-case cases with rational lambdas, `dpverify certify` then
`dpverify check-cert` (the exact value proved). The bars (2-core machine):

* k = 1000, lambda = 2, observer majority / xor / threshold:300 (lambda = 3/2), average:
  verify optimal and certify proves the exact value, 30 s each (goal: 10 s);
* k = 100, lambda = 2: observer majority, and party 1 with sum under -abs, both
  accuracies: verify optimal in 30 s;
* k = 12, observer XOR, epsilon = 1: plain `dpverify verify` exits 0 within 5 s.

Usage: python benchmarks/bench_orbits.py [--quick] [--timeout S]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DPVERIFY = [sys.executable, "-m", "dpverify"]


def problem(k: int, function: str, lam: str = "2", agent: str = "observer",
            gain: str = "indicator", accuracy: str = "average") -> str:
    head = f'[problem]\nname = "bench"\nparties = {k}\nlambda = "{lam}"\n'
    head += f'accuracy = {json.dumps(accuracy)}\n'
    table = "[observer]\n" if agent == "observer" else "[[party]]\nindex = 1\n"
    return head + table + f'function = "{function}"\ngain = "{gain}"\n'


def run(args: list[str], timeout: float) -> tuple[float, subprocess.CompletedProcess | None]:
    start = time.perf_counter()
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, None
    return time.perf_counter() - start, done


def case(label: str, text: str, certify: bool, timeout: float, folder: Path) -> None:
    path = folder / "bench.toml"
    path.write_text(text)
    seconds, done = run([*DPVERIFY, "verify", "--json", str(path)], timeout)
    if done is None:
        print(f"| {label} | verify | timeout > {timeout:.0f} s | | | |", flush=True)
        return
    data = json.loads(done.stdout)[0]
    if not data["results"]:
        print(f"| {label} | verify | {seconds:.1f} | refused | | {data.get('reason', '')} |")
        return
    for r in data["results"]:
        print(f"| {label}, {r['agent']} {r['accuracy']} | verify | {seconds:.1f} | "
              f"{r['verdict']} | {r.get('method', '')} | {r['relaxed_optimum']!r} |",
              flush=True)
    if certify:
        certs = folder / "certs"
        seconds, done = run([*DPVERIFY, "certify", str(path), "-o", str(certs)], timeout)
        status = "timeout" if done is None else done.stdout.split()[0]
        check_s, checked = run([*DPVERIFY, "check-cert", str(path),
                                *map(str, certs.glob("*.cert.json"))], timeout)
        ok = "timeout" if checked is None else checked.stdout.split()[0]
        print(f"| {label} | certify + check-cert | {seconds:.1f} + {check_s:.1f} | "
              f"{status}, check {ok} | orbit | |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip k = 10000")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()
    sizes = [10, 100, 1000] + ([] if args.quick else [10000])
    print("| case | command | seconds | verdict | method | value |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        xor12 = ('[problem]\nname = "bench"\nparties = 12\nepsilon = 1\n[observer]\n'
                 'function = "xor"\n')
        case("k = 12 xor, epsilon = 1 (both accuracies)", xor12, False, args.timeout, folder)
        for k in sizes:
            case(f"k = {k} xor", problem(k, "xor"), True, args.timeout, folder)
            case(f"k = {k} majority", problem(k, "majority"), True, args.timeout, folder)
            t = max(1, (3 * k) // 10)
            case(f"k = {k} threshold:{t}, lambda = 3/2", problem(k, f"threshold:{t}", "3/2"),
                 True, args.timeout, folder)
            if k <= 100:
                both = ["average", "worst"]
                case(f"k = {k} majority (both)", problem(k, "majority", accuracy=both),
                     False, args.timeout, folder)
            accuracy = ["average", "worst"] if k <= 100 else "average"
            case(f"k = {k} party 1, sum under -abs", problem(k, "sum", agent="party",
                                                             gain="-abs", accuracy=accuracy),
                 False, args.timeout, folder)


if __name__ == "__main__":
    main()
