"""Approximate privacy (delta > 0) benchmarks: closure of the bracket on random problems,
the family bars of issue 25, and k = 5 (issues 20, 25 and 27). Every member is one problem
file run as a whole command in a fresh process, start-up included:
`python -m dpverify verify FILE --json --witness-dir TMP [--certify]`.

* `closure` (issue 27, "Done when"): random 2- and 3-party problems drawn by `--seed`:
  xor, and, or, majority, threshold:t; epsilons 0.5-1.5 (one for all or one per party);
  deltas 1/20 to 1/5 (k/20); the observer or a party; average or worst (one agent and one
  accuracy per file). Per result: the verdict, whether `interaction-helps` is closed (the
  bound minus the best protocol within --tol, exact numbers), the bracket's width, the
  witness audited (`dpverify audit`: private and its verdict), the bound's certificate
  checked (`--certify`), the wall time. Prints the closed fraction of the
  `interaction-helps` results; exits 1 below `--bar` (0.9), or when a witness is not
  private or a certificate fails.
* `family` (issue 25, "Numbers"): delta > 0 up to k = 4, `--members` random members per k
  (the same draw as above, k parties): each must answer (a verdict, not `error`) within
  `--limit` seconds (5), and at each k the slowest at most `--ratio` (5) times the
  fastest. Prints per k the fastest, the slowest and their ratio.
* `cases` (issues 20 and 25): fixed problems at `--parties` (default 5) with epsilon 1 and
  delta 1/10, both accuracies in one file: the observer's majority and XOR, party 1's
  majority; each command within `--bar` seconds (30).

Timings depend on the machine's load: the load average is printed first.

Usage: python benchmarks/bench_approx.py closure [--seed 1] [--count 40] [--bar 0.9]
       python benchmarks/bench_approx.py family [--seed 1] [--members 8] [--ks 2,3,4]
       python benchmarks/bench_approx.py cases [--parties 5] [--bar 30]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

DPVERIFY = [sys.executable, "-m", "dpverify"]


@dataclass(frozen=True)
class Member:
    """One random problem: k parties, a function, levels, one agent and one accuracy."""

    name: str
    parties: int
    function: str
    epsilons: tuple[float, ...]
    deltas: tuple[Fraction, ...]
    agent: str  # "observer" or "party:i"
    accuracy: str

    def text(self) -> str:
        eps = self.epsilons[0] if len(set(self.epsilons)) == 1 else list(self.epsilons)
        deltas = [f"{d.numerator}/{d.denominator}" for d in self.deltas]
        delta = f'"{deltas[0]}"' if len(set(deltas)) == 1 else json.dumps(deltas)
        agent = "[observer]\n" if self.agent == "observer" else \
            f"[[party]]\nindex = {self.agent.split(':')[1]}\n"
        return (f'[problem]\nname = "{self.name}"\nparties = {self.parties}\n'
                f'epsilon = {eps}\ndelta = {delta}\naccuracy = ["{self.accuracy}"]\n'
                f'{agent}function = "{self.function}"\n')

    def label(self) -> str:
        eps = "/".join(f"{e:g}" for e in sorted(set(self.epsilons)))
        deltas = "/".join(str(d) for d in sorted(set(self.deltas)))
        return (f"k={self.parties} {self.function} eps {eps} delta {deltas} {self.agent} "
                f"{self.accuracy}")


def draw(rng: random.Random, k: int, index: int) -> Member:
    """A random member of issue 27's kind (module docstring)."""
    functions = ["xor", "and", "or"] if k <= 2 else \
        ["xor", "and", "or", "majority", f"threshold:{rng.randint(1, k)}"]
    same = rng.random() < 0.5
    eps = [round(rng.uniform(0.5, 1.5), 2)] * k if same else \
        [round(rng.uniform(0.5, 1.5), 2) for _ in range(k)]
    deltas = [Fraction(rng.randint(1, 4), 20)] * k if rng.random() < 0.5 else \
        [Fraction(rng.randint(1, 4), 20) for _ in range(k)]
    agent = "observer" if rng.random() < 0.5 else f"party:{rng.randint(1, k)}"
    return Member(f"m{index}-k{k}", k, rng.choice(functions), tuple(eps), tuple(deltas),
                  agent, rng.choice(["average", "worst"]))


@dataclass
class Outcome:
    member: Member
    seconds: float
    verdict: str = "error"
    closed: bool = False
    width: float | None = None
    witness: str | None = None
    proof: str = ""
    reason: str = ""
    private: bool | None = None
    audit_verdict: str = ""


def run_member(member: Member, folder: Path, certify: bool, audit: bool) -> Outcome:
    path = folder / f"{member.name}.toml"
    path.write_text(member.text(), encoding="utf-8")
    args = [*DPVERIFY, "verify", str(path), "--json", "--witness-dir", str(folder / "w")]
    if certify:
        args.append("--certify")
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    outcome = Outcome(member, time.perf_counter() - start)
    try:
        (r,) = json.loads(done.stdout)[0]["results"]
    except (ValueError, IndexError, KeyError, TypeError):
        outcome.reason = f"exit {done.returncode}: {done.stderr.strip()[-200:]}"
        return outcome
    outcome.verdict, outcome.closed = r["verdict"], bool(r.get("closed"))
    outcome.width, outcome.witness = r.get("bracket_width"), r.get("witness")
    outcome.proof = (r.get("proof") or {}).get("status", "")
    outcome.reason = r.get("reason", "")
    if audit and outcome.witness:
        got = subprocess.run([*DPVERIFY, "audit", outcome.witness, "--json"],
                             capture_output=True, text=True)
        try:
            header = json.loads(got.stdout)[0]
            outcome.private = bool(header.get("private"))
            outcome.audit_verdict = header["results"][0]["verdict"]
        except (ValueError, IndexError, KeyError, TypeError):
            outcome.private = False
    return outcome


def header(what: str) -> None:
    print(f"{platform.node()}: {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {what}\n")


def closure(args: argparse.Namespace) -> int:
    header(f"closure, seed {args.seed}, {args.count} random 2- and 3-party problems")
    rng = random.Random(args.seed)
    members = [draw(rng, rng.choice([2, 3]), i) for i in range(args.count)]
    print("| problem | verdict | closed | width | witness private | audit | proof | s |")
    print("|---|---|---|---|---|---|---|---|")
    outcomes = []
    with tempfile.TemporaryDirectory() as folder:
        for member in members:
            o = run_member(member, Path(folder), certify=True, audit=True)
            outcomes.append(o)
            width = "-" if o.width is None else f"{o.width:.1e}"
            private = "-" if o.private is None else ("yes" if o.private else "NO")
            print(f"| {member.label()} | {o.verdict} | {'yes' if o.closed else ''} | "
                  f"{width} | {private} | {o.audit_verdict or '-'} | {o.proof or '-'} | "
                  f"{o.seconds:.1f} |", flush=True)
    helps = [o for o in outcomes if o.verdict == "interaction-helps"]
    closed = [o for o in helps if o.closed]
    bad_witness = [o for o in outcomes if o.private is False]
    bad_proof = [o for o in outcomes if o.proof not in ("bracket", "proved-optimal")]
    errors = [o for o in outcomes if o.verdict == "error"]
    fraction = len(closed) / len(helps) if helps else 1.0
    times = sorted(o.seconds for o in outcomes)
    print(f"\n{len(helps)} interaction-helps, {len(closed)} closed ({fraction:.0%}); "
          f"{sum(o.verdict == 'optimal' for o in outcomes)} optimal, "
          f"{sum(o.verdict == 'open' for o in outcomes)} open, {len(errors)} error; "
          f"witnesses not private: {len(bad_witness)}; certificates not checked: "
          f"{len(bad_proof)}; seconds: median {times[len(times) // 2]:.2f}, "
          f"slowest {times[-1]:.2f}")
    ok = fraction >= args.bar and not bad_witness and not bad_proof and not errors
    print("closure bar met" if ok else f"closure bar of {args.bar:.0%} MISSED")
    return 0 if ok else 1


def family(args: argparse.Namespace) -> int:
    ks = [int(v) for v in args.ks.split(",")]
    header(f"family, seed {args.seed}, {args.members} members per k in {ks}")
    rng = random.Random(args.seed)
    missed = 0
    print("| k | members | fastest s | slowest s | slowest / fastest | verdicts | "
          "slowest member |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for k in ks:
            outcomes = [run_member(draw(rng, k, i), Path(folder), certify=False,
                                   audit=False) for i in range(args.members)]
            fastest = min(outcomes, key=lambda o: o.seconds)
            slowest = max(outcomes, key=lambda o: o.seconds)
            ratio = slowest.seconds / fastest.seconds
            verdicts = {}
            for o in outcomes:
                verdicts[o.verdict] = verdicts.get(o.verdict, 0) + 1
            shown = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
            print(f"| {k} | {len(outcomes)} | {fastest.seconds:.2f} | {slowest.seconds:.2f} | "
                  f"{ratio:.1f} | {shown} | {slowest.member.label()} |", flush=True)
            late = [o for o in outcomes if o.seconds > args.limit or o.verdict == "error"]
            for o in late:
                print(f"  missed: {o.member.label()}: {o.verdict} in {o.seconds:.2f} s "
                      f"{o.reason[:160]}")
            missed += len(late) + (ratio > args.ratio)
    print(f"\n{'every bar met' if not missed else f'{missed} bar(s) missed'} (each member "
          f"within {args.limit:g} s with a verdict; slowest / fastest at most "
          f"{args.ratio:g} at each k)")
    return 1 if missed else 0


CASES = {"observer:majority": ("[observer]\n", "majority"),
         "observer:xor": ("[observer]\n", "xor"),
         "party:majority": ("[[party]]\nindex = 1\n", "majority")}


def cases(args: argparse.Namespace) -> int:
    header(f"k = {args.parties}, epsilon = 1, delta = 1/10, both accuracies per file")
    print("| case | accuracy | bound | non-interactive | best found | verdict | closed | "
          "command s |")
    print("|---|---|---|---|---|---|---|---|")
    missed = 0
    with tempfile.TemporaryDirectory() as folder:
        for case in args.cases.split(","):
            table, function = CASES[case]
            path = Path(folder) / f"{case.replace(':', '-')}.toml"
            path.write_text(f'[problem]\nname = "bench-{case.replace(":", "-")}"\n'
                            f'parties = {args.parties}\nepsilon = 1\ndelta = "1/10"\n'
                            f'accuracy = ["average", "worst"]\n{table}'
                            f'function = "{function}"\n', encoding="utf-8")
            start = time.perf_counter()
            done = subprocess.run([*DPVERIFY, "verify", str(path), "--json", "--witness-dir",
                                   str(Path(folder) / "w")], capture_output=True, text=True)
            seconds = time.perf_counter() - start
            try:
                results = json.loads(done.stdout)[0]["results"]
            except (ValueError, IndexError, KeyError):
                print(f"| {case} | - | - | - | - | failed (exit {done.returncode}: "
                      f"{done.stderr.strip()[-120:]}) | - | {seconds:.1f} |")
                missed += 1
                continue
            for r in results:
                print(f"| {case} | {r['accuracy']} | {r['relaxed_optimum']:.10f} | "
                      f"{r['rr_value']:.10f} | {r['best_value']:.10f} | {r['verdict']} | "
                      f"{'yes' if r.get('closed') else ''} | {seconds:.1f} |", flush=True)
            missed += seconds > args.bar or any(r["verdict"] == "error" for r in results)
    print(f"\n{'every command within' if not missed else f'{missed} case(s) missed'} the bar "
          f"of {args.bar:.0f} s")
    return 1 if missed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    c = sub.add_parser("closure")
    c.add_argument("--seed", type=int, default=1)
    c.add_argument("--count", type=int, default=40)
    c.add_argument("--bar", type=float, default=0.9)
    f = sub.add_parser("family")
    f.add_argument("--seed", type=int, default=1)
    f.add_argument("--members", type=int, default=8)
    f.add_argument("--ks", default="2,3,4")
    f.add_argument("--limit", type=float, default=5.0)
    f.add_argument("--ratio", type=float, default=5.0)
    k = sub.add_parser("cases")
    k.add_argument("--parties", type=int, default=5)
    k.add_argument("--bar", type=float, default=30.0)
    k.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    return {"closure": closure, "family": family, "cases": cases}[args.mode](args)


if __name__ == "__main__":
    sys.exit(main())
