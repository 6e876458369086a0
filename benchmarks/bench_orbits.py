"""Time symmetric problems at k = 10, 100, 1000 and 10000 parties (the orbit method).

Each case runs the whole command in a fresh process (start-up included) on the machine it
runs on, with the default options: `dpverify verify --json` (its verdict, method and value)
and, for the observer's average-case cases (rational lambdas), `dpverify certify` then
`dpverify check-cert` (the exact value proved; the method column says which certificate
format was written: `orbit` for dpverify-orbit-certificate/1, `all inputs` for
dpverify-certificate/1). A refusal (a size limit) or a timeout is reported as such, with
its reason. The cases of issue 10 (2-core machine):

* k = 1000, lambda = 2, observer majority / xor / threshold:300 (lambda = 3/2), average:
  verify optimal and certify proves the exact value, 30 s each (goal: 10 s);
* k = 100, lambda = 2: observer majority, and party 1 with sum under -abs, both
  accuracies: verify optimal in 30 s;
* k = 12, observer XOR, epsilon = 1: plain `dpverify verify` exits 0 within 5 s;
* k = 10, 100, 1000, 10000: xor, majority, threshold, and sum under -abs for a party.

With `--raised`, the cases that the default --max-orbit-work refuses are tried once more
with `--max-orbit-work 10000000000` and `--raised-timeout` seconds.

Usage: python benchmarks/bench_orbits.py [--quick] [--sizes 10,100,1000,10000] [--no-xor12]
       [--timeout S] [--raised [--raised-timeout S]]
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

DPVERIFY = [sys.executable, "-m", "dpverify"]
RAISED_WORK = "10000000000"


def problem(k: int, function: str, lam: str = "2", agent: str = "observer",
            gain: str = "indicator", accuracy: str | list[str] = "average") -> str:
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


def row(label: str, command: str, seconds: str, verdict: str, method: str, value: str) -> None:
    print(f"| {label} | {command} | {seconds} | {verdict} | {method} | {value} |", flush=True)


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return short(lines[-1].removeprefix("dpverify: ")) if lines else ""


def short(reason: str) -> str:
    """A reason without the temporary file's path."""
    return reason.split("bench.toml: ", 1)[-1]


def verify(label: str, path: Path, timeout: float, extra: list[str]) -> str:
    """One `verify --json` row per result. Returns "done" (results, whatever their
    verdicts), "refused" (a size limit: `--raised` may try again) or "failed"."""
    seconds, done = run([*DPVERIFY, "verify", "--json", *extra, str(path)], timeout)
    command = " ".join(["verify", *extra])
    if done is None:
        row(label, command, f"> {timeout:.0f}", "timeout", "", "")
        return "failed"
    try:
        data = json.loads(done.stdout)[0]
    except (ValueError, IndexError):
        row(label, command, f"{seconds:.1f}", f"exit {done.returncode}", "",
            last_line(done.stderr))
        return "failed"
    if not data["results"]:
        row(label, command, f"{seconds:.1f}", "refused", "", short(data.get("reason", "")))
        return "refused"
    for r in data["results"]:
        row(f"{label}, {r['agent']} {r['accuracy']}", command, f"{seconds:.1f}",
            r["verdict"], r.get("method", ""), f"{r['relaxed_optimum']!r}")
    return "done"


def certify(label: str, path: Path, timeout: float, folder: Path) -> None:
    """`certify` into a fresh folder, then `check-cert` on what it wrote."""
    certs = folder / f"certs-{time.monotonic_ns()}"
    seconds, done = run([*DPVERIFY, "certify", str(path), "-o", str(certs), "--json"], timeout)
    if done is None:
        row(label, "certify", f"> {timeout:.0f}", "timeout", "", "")
        return
    records = json.loads(done.stdout) if done.stdout.strip() else []
    if not records:
        row(label, "certify", f"{seconds:.1f}", "refused", "", last_line(done.stderr))
        return
    files = [r["path"] for r in records]
    formats = {json.loads(Path(f).read_text())["format"] for f in files}
    method = ", ".join("orbit" if "orbit" in f else "all inputs" for f in sorted(formats))
    check_s, checked = run([*DPVERIFY, "check-cert", str(path), *files], timeout)
    ok = "timeout" if checked is None else ("OK" if checked.returncode == 0 else "FAIL")
    statuses = ", ".join(sorted({r["status"] for r in records}))
    width = max(float(r["width"]) for r in records)
    row(label, "certify + check-cert", f"{seconds:.1f} + {check_s:.1f}",
        f"{statuses}, check {ok}", method, f"width {width:.3g}")


def case(label: str, text: str, certify_too: bool, args, folder: Path) -> None:
    path = folder / "bench.toml"
    path.write_text(text)
    outcome = verify(label, path, args.timeout, [])
    if outcome == "done" and certify_too:
        certify(label, path, args.timeout, folder)
    if outcome == "refused" and args.raised:
        verify(label, path, args.raised_timeout, ["--max-orbit-work", RAISED_WORK])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip k = 10000")
    parser.add_argument("--sizes", default="10,100,1000,10000",
                        help="the k of the sweep (comma-separated)")
    parser.add_argument("--no-xor12", action="store_true", help="skip the k = 12 xor case")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--raised", action="store_true",
                        help=f"retry refused cases with --max-orbit-work {RAISED_WORK}")
    parser.add_argument("--raised-timeout", type=float, default=300.0)
    args = parser.parse_args()
    sizes = [int(k) for k in args.sizes.split(",") if not (args.quick and int(k) > 1000)]
    print(f"{datetime.date.today()}, {os.cpu_count()} CPUs, Python "
          f"{platform.python_version()}, {platform.machine()}; seconds are whole commands, "
          "start-up included\n")
    print("| case | command | seconds | verdict | method | value |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        xor12 = ('[problem]\nname = "bench"\nparties = 12\nepsilon = 1\n[observer]\n'
                 'function = "xor"\n')
        if not args.no_xor12:
            case("k = 12 xor, epsilon = 1 (both accuracies)", xor12, False, args, folder)
        for k in sizes:
            case(f"k = {k} xor", problem(k, "xor"), True, args, folder)
            case(f"k = {k} majority", problem(k, "majority"), True, args, folder)
            t = max(1, (3 * k) // 10)
            case(f"k = {k} threshold:{t}, lambda = 3/2", problem(k, f"threshold:{t}", "3/2"),
                 True, args, folder)
            if k <= 100:
                both = ["average", "worst"]
                case(f"k = {k} majority (both)", problem(k, "majority", accuracy=both),
                     False, args, folder)
            accuracy = ["average", "worst"] if k <= 100 else "average"
            case(f"k = {k} party 1, sum under -abs",
                 problem(k, "sum", agent="party", gain="-abs", accuracy=accuracy),
                 False, args, folder)


if __name__ == "__main__":
    main()
