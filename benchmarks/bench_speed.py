"""The speed bars (whole commands on this machine): one row per case, the default route
against the old one (`--method lp`) where the old route still exists; and families of
problems (issue 25), where the bar is the slowest member, not an example.

Usage: python benchmarks/bench_speed.py [--cases a,b,...] [--old] [--timeout S]
       python benchmarks/bench_speed.py --families
              [symmetric,nonsymmetric,nonsymmetric-worst,count] [--members 6]
              [--ks 10,20,30,40] [--seed 0] [--bar 5] [--ratio 5] [--timeout S] [--list]

Each case writes its problem files into a temporary directory, runs `dpverify` as a user
would (process start-up included), and prints the seconds, the verdicts and the bar. With
`--old` it also runs the same command with `--method lp` (where that route applies), so
the before and after of one run sit side by side.

With `--families`, each family draws `--members` random members at every k of `--ks` (its
own default sizes otherwise): class sizes, levels, gains, functions and agents drawn from
`--seed`, one `dpverify verify --json` per member, one member at a time, after one untimed
run that puts the packages' files in the page cache (`warm_up`). It prints every
member, then per family and k the fastest and slowest member and their ratio, and checks
the bars: every member answers (a verdict, not `error`) within `--bar` seconds (the
family's own by default: 5 s, the worst case at k = 13 60 s), and the
slowest member at equal k is at most `--ratio` times the fastest. `--list` writes the
members' files into ./bench-families and runs nothing. Exits 1 when a bar is missed.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DPVERIFY = [sys.executable, "-m", "dpverify"]


@dataclass(frozen=True)
class Case:
    name: str
    title: str
    bar: float  # seconds
    build: Callable[[Path], list[str]]  # writes files, returns the dpverify arguments
    old: bool = False  # whether `--method lp` is a meaningful "before"


def _table(rng: random.Random, k: int, values: int = 3) -> list[int]:
    return [rng.randrange(values) for _ in range(2 ** k)]


def _epsilons(rng: random.Random, k: int) -> list[float]:
    return [round(rng.uniform(0.5, 2.0), 2) for _ in range(k)]


def random_9(folder: Path) -> list[str]:
    rng = random.Random(9)
    path = folder / "random-9.toml"
    path.write_text(f"""[problem]
name = "random-9"
parties = 9
epsilon = {_epsilons(rng, 9)}

[observer]
function = {{ table = {_table(rng, 9)} }}
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


SIX = """[problem]
name = "majority-sum-6"
parties = 6
epsilon = 1.0

[observer]
function = "majority"

[[party]]
index = 2
function = "sum"
gain = "-abs"
"""


def sweep_6(folder: Path) -> list[str]:
    path = folder / "majority-sum-6.toml"
    path.write_text(SIX, encoding="utf-8")
    return ["sweep", str(path), "--epsilon", "0.1:4:40", "--jobs", "2", "--json",
            "--store", str(folder / "store.sqlite")]


def sum_8(folder: Path) -> list[str]:
    path = folder / "sum-8.toml"
    path.write_text("""[problem]
name = "sum-8"
parties = 8
epsilon = [1.07, 1.25, 1.87, 1.09, 1.16, 1.3, 0.61, 1.17]

[[party]]
index = 1
function = "sum"
gain = "-abs"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def average(k: int) -> Callable[[Path], list[str]]:
    def build(folder: Path) -> list[str]:
        rng = random.Random(k)
        path = folder / f"average-{k}.toml"
        path.write_text(f"""[problem]
name = "average-{k}"
parties = {k}
epsilon = {_epsilons(rng, k)}
accuracy = "average"

[observer]
function = {{ table = {_table(rng, k)} }}
""", encoding="utf-8")
        return ["verify", str(path), "--json"]

    return build


def majority_1000(folder: Path) -> list[str]:
    path = folder / "majority-1000.toml"
    path.write_text("""[problem]
name = "majority-1000"
parties = 1000
epsilon = 0.1

[observer]
function = "majority"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def symmetric_10000(folder: Path) -> list[str]:
    path = folder / "xor-10000.toml"
    path.write_text("""[problem]
name = "xor-10000"
parties = 10000
lambda = "2"

[observer]
function = "xor"
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def parity_19(folder: Path) -> list[str]:
    levels = [0.05, 1.0, 2.0]
    epsilons = [levels[i % 3] for i in range(19)]
    path = folder / "parity-19.toml"
    path.write_text(f"""[problem]
name = "parity-19"
parties = 19
epsilon = {epsilons}
accuracy = "worst"

[observer]
function = "parity"
gain = {{ expr = "2 if f == y else (0 if y == 0 else -1)" }}
""", encoding="utf-8")
    return ["verify", str(path), "--json"]


def version(folder: Path) -> list[str]:
    return ["--version"]


CASES = [
    Case("random-9", "9 parties, distinct epsilons, random 3-valued table, both accuracies",
         3.0, random_9, old=True),
    Case("sweep-6", "40-point sweep of 6 parties (majority + party sum under -abs), 2 jobs",
         15.0, sweep_6, old=True),
    Case("sum-8", "8 parties, distinct float epsilons, party sum under -abs, both accuracies",
         2.0, sum_8, old=True),
    Case("average-16", "average case, distinct epsilons, random table, k = 16", 5.0,
         average(16)),
    Case("average-20", "average case, distinct epsilons, random table, k = 20", 30.0,
         average(20)),
    Case("majority-1000", "majority, k = 1000, epsilon = 0.1", 10.0, majority_1000),
    Case("xor-10000", "symmetric XOR, k = 10,000, one privacy class", 30.0, symmetric_10000),
    Case("parity-19", "19-party parity worst case, epsilons in {0.05, 1, 2}", 60.0, parity_19),
    Case("version", "`dpverify --version`", 0.2, version),
]


# --------------------------------------------------------------------------- families

GAINS = {"indicator": '"indicator"', "-abs": '"-abs"',
         "asymmetric": '{ expr = "2 if f == y else (0 if y == 0 else -1)" }',
         "over-under": '{ expr = "3 if f == y else (-1 if y > f else 0)" }'}
FUNCTIONS = ("parity", "majority", "threshold", "sum")
EPSILONS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0)
LAMBDAS = ("5/4", "4/3", "3/2", "2", "5/2", "3", "4")


@dataclass(frozen=True)
class Family:
    name: str
    title: str
    ks: tuple[int, ...]
    member: Callable[[random.Random, int], tuple[str, str]]  # (description, problem text)
    args: tuple[str, ...] = ()  # more `dpverify verify` arguments
    bar: float = 5.0  # seconds, every member (--bar overrides)


def _split(rng: random.Random, k: int, classes: int) -> list[int]:
    cuts = sorted(rng.sample(range(1, k), classes - 1))
    return [b - a for a, b in zip([0, *cuts], [*cuts, k], strict=True)]


def symmetric_member(rng: random.Random, k: int) -> tuple[str, str]:
    """The symmetric worst case: 2-4 classes of random sizes, float epsilons or exact
    lambdas, gains indicator / -abs / asymmetric, functions parity, majority, threshold,
    sum; the observer or party 1."""
    classes = rng.randint(2, min(4, k))
    sizes = _split(rng, k, classes)
    exact = rng.random() < 0.4
    levels = rng.sample(LAMBDAS if exact else EPSILONS, classes)
    function = rng.choice(FUNCTIONS)
    if function == "threshold":
        function = f"threshold:{rng.randint(1, k)}"
    gain = rng.choice(sorted(GAINS))
    values = [v for n, v in zip(sizes, levels, strict=True) for _ in range(n)]
    level = ("lambda = [" + ", ".join(f'"{v}"' for v in values) + "]" if exact
             else f"epsilon = {values}")
    party = rng.random() < 0.25
    agent = "[[party]]\nindex = 1" if party else "[observer]"
    text = (f'[problem]\nname = "member"\nparties = {k}\n{level}\naccuracy = "worst"\n\n'
            f'{agent}\nfunction = "{function}"\ngain = {GAINS[gain]}\n')
    what = (f"{'party 1' if party else 'observer'} {function} {gain}, classes {sizes} at "
            f"{'lambda' if exact else 'epsilon'} {levels}")
    return what, text


NAMED = ("xor", "and", "or", "majority", "sum", "bit:1")
NONSYMMETRIC_GAINS = ('"indicator"', '"-abs"', '"-square"')
# the levels of issue 25's families: 0 and 0.01 beside extreme ones (20-30), each nudged
# by up to 0.01 half the time so that no two parties share a level by chance
LEVELS = (0, 0.01, 0.1, 0.5, 1, 2, 5, 10, 20, 25, 30)


def _levels(rng: random.Random, k: int) -> list[float]:
    mode = rng.choice(("pool", "uniform", "mixed", "extreme"))
    epsilons = []
    for _ in range(k):
        if mode == "pool":
            e = rng.choice(LEVELS) + (rng.random() * 0.01 if rng.random() < 0.5 else 0)
        elif mode == "uniform":
            e = rng.uniform(0, 30)
        elif mode == "mixed":
            e = rng.choice((rng.uniform(0, 3), rng.uniform(0, 30)))
        else:
            e = rng.choice((rng.uniform(20, 30), rng.uniform(0, 0.05), rng.uniform(0.5, 3)))
        epsilons.append(round(e, 4))
    return epsilons


def nonsymmetric_member(rng: random.Random, k: int, accuracies: tuple[str, ...] = (
        '"worst"', '"average"', '["average", "worst"]')) -> tuple[str, str]:
    """Without symmetry: epsilons from 0 to 30 (a pool with 0, 0.01 and 20-30, uniform,
    mixed with small ones, or extreme beside tiny ones), a random table of 2-4 values or a
    named function (xor, and, or, majority, sum, bit:1), gains indicator / -abs / -square,
    either accuracy or both; the observer or a party."""
    epsilons = _levels(rng, k)
    if rng.random() < 0.5:
        values = rng.choice((2, 3, 4))
        function = "{ table = " + str([rng.randrange(values) for _ in range(2 ** k)]) + " }"
        named = f"{values}-valued table"
    else:
        named = rng.choice(NAMED)
        function = f'"{named}"'
    gain = rng.choice(NONSYMMETRIC_GAINS)
    accuracy = rng.choice(accuracies)
    party = rng.random() < 0.5
    index = rng.randint(1, k)
    agent = f"[[party]]\nindex = {index}" if party else "[observer]"
    text = (f'[problem]\nname = "member"\nparties = {k}\nepsilon = {epsilons}\n'
            f'accuracy = {accuracy}\n\n{agent}\nfunction = {function}\ngain = {gain}\n')
    what = (f"{f'party {index}' if party else 'observer'}, {named}, {gain.strip(chr(34))}, "
            f"{accuracy}, epsilons {min(epsilons):g}..{max(epsilons):g}")
    return what, text


def nonsymmetric_worst_member(rng: random.Random, k: int) -> tuple[str, str]:
    """The non-symmetric worst case alone (issue 25, point 6: k = 13 within 60 s)."""
    return nonsymmetric_member(rng, k, ('"worst"',))


COUNT_LOSSES = ('"abs"', '"square"', '"indicator"', '{ expr = "2 * (r - i) if r > i else i - r" }',
                '{ expr = "min(abs(i - r), 5)" }')


def count_member(rng: random.Random, n: int) -> tuple[str, str]:
    """Count queries at n (the family's k): a minimax consumer (no side information, a
    random range, or a random set) or a Bayesian one (binomial or uniform prior), losses
    abs / square / indicator / asymmetric / truncated abs, epsilon or an exact alpha."""
    loss = rng.choice(COUNT_LOSSES)
    exact = rng.random() < 0.3
    level = (f'alpha = "{rng.choice(("1/2", "2/3", "9/10", "19/20"))}"' if exact
             else f"epsilon = {rng.choice((0.05, 0.1, 0.3, 0.5, 1.0, 2.0))}")
    bayes = rng.random() < 0.3
    lines = [f"loss = {loss}"]
    if bayes:
        lines += ['model = "bayes"', 'prior = "uniform"']
        what = "bayes uniform"
    else:
        side = rng.choice(("none", "range", "set"))
        if side == "range":
            a = rng.randint(0, n // 2)
            lines.append(f"side_information = [{a}, {rng.randint(a + 1, n)}]")
        elif side == "set":
            lines.append(f"side_information = {{ set = {sorted(rng.sample(range(n + 1), 5))} }}")
        what = f"minimax side {side}"
    text = (f'[problem]\nname = "member"\nkind = "count"\nn = {n}\n{level}\n\n'
            "[consumer]\n" + "\n".join(lines) + "\n")
    return f"{what}, loss {loss}, {level}", text


FAMILIES = [
    Family("symmetric", "symmetric worst case (2-4 classes, random sizes)", (10, 20, 30, 40),
           symmetric_member),
    Family("nonsymmetric", "no symmetry, epsilons 0 to 30, observer and parties",
           (5, 7, 9), nonsymmetric_member),
    Family("nonsymmetric-worst", "the worst case without symmetry at k = 13", (13,),
           nonsymmetric_worst_member, bar=60.0),
    # k is n here; by default (no --max-nonzeros: a count problem is guarded by its
    # memory and time, policy.COUNT_MAX_BYTES), as a user runs it
    Family("count", "count queries, minimax and Bayes consumers (k = n)", (50, 100, 200),
           count_member),
]


@dataclass(frozen=True)
class Member:
    family: str
    k: int
    what: str
    seconds: float
    found: str
    status: int

    @property
    def answered(self) -> bool:
        return self.status in (0, 1) and "error" not in self.found


WARM_UP = ('[problem]\nname = "warm-up"\nparties = 5\n'
           'epsilon = [0.5, 1.0, 2.0, 25.0, 3.0]\naccuracy = ["average", "worst"]\n'
           '[observer]\nfunction = "majority"\n')


def warm_up(timeout: float) -> None:
    """One untimed run first, whose imports (numpy, highspy, scipy's dense linear algebra)
    read the files that every member then finds in the page cache: without it the first
    member measured paid 1-1.5 s more than when run again (issue 25's k = 5 members:
    1.78 s, then 0.5 s)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "warm-up.toml"
        path.write_text(WARM_UP, encoding="utf-8")
        run(["verify", str(path), "--json"], timeout)
    subprocess.run([sys.executable, "-c", "import scipy.linalg, scipy.sparse"], check=False)


def run_families(args) -> int:
    names = args.families.split(",")
    known = {f.name for f in FAMILIES}
    if unknown := [n for n in names if n not in known]:
        raise SystemExit(f"bench_speed.py: no family {', '.join(unknown)} (known: "
                         f"{', '.join(sorted(known))}; delta > 0 is `bench_approx.py "
                         "family`)")
    chosen = [f for f in FAMILIES if f.name in names]
    rng = random.Random(args.seed)
    if not args.list:
        warm_up(args.timeout)
    members: list[Member] = []
    print("| family | k | member | seconds | verdicts |")
    print("|---|---|---|---|---|")
    for family in chosen:
        ks = tuple(int(v) for v in args.ks.split(",")) if args.ks else family.ks
        for k in ks:
            for i in range(args.members):
                what, text = family.member(rng, k)
                if args.list:
                    folder = Path("bench-families")
                    folder.mkdir(exist_ok=True)
                    (folder / f"{family.name}-{k}-{i}.toml").write_text(text, encoding="utf-8")
                    continue
                with tempfile.TemporaryDirectory() as tmp:
                    path = Path(tmp) / "member.toml"
                    path.write_text(text, encoding="utf-8")
                    seconds, found, status = run(["verify", str(path), "--json",
                                                  *family.args], args.timeout)
                member = Member(family.name, k, what, seconds, found, status)
                members.append(member)
                print(f"| {family.name} | {k} | {what} | {seconds:.2f} | {found} |", flush=True)
    if args.list:
        return 0
    bars = {f.name: f.bar if args.bar is None else args.bar for f in chosen}
    return report_families(members, bars, args.ratio)


def report_families(members: list[Member], bars: dict[str, float], ratio: float) -> int:
    """Per family and k: the fastest and slowest member and their ratio, against the bars."""
    print()
    print("| family | k | members | fastest (s) | slowest (s) | slowest / fastest | "
          "unanswered | bars |")
    print("|---|---|---|---|---|---|---|---|")
    missed = 0
    groups: dict[tuple[str, int], list[Member]] = {}
    for m in members:
        groups.setdefault((m.family, m.k), []).append(m)
    for (family, k), group in groups.items():
        fastest = min(m.seconds for m in group)
        slowest = max(m.seconds for m in group)
        spread = slowest / fastest if fastest > 0 else float("inf")
        unanswered = sum(not m.answered for m in group)
        ok = unanswered == 0 and slowest <= bars[family] and spread <= ratio
        missed += not ok
        print(f"| {family} | {k} | {len(group)} | {fastest:.2f} | {slowest:.2f} | "
              f"{spread:.1f}x | {unanswered} | {'met' if ok else 'missed'} |", flush=True)
    return 1 if missed else 0


def run(args: list[str], timeout: float) -> tuple[float, str, int]:
    """(seconds, what it found, exit status; -1 for a timeout)."""
    start = time.perf_counter()
    try:
        done = subprocess.run([*DPVERIFY, *args], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, f"timeout ({timeout:g} s)", -1
    seconds = time.perf_counter() - start
    return seconds, summary(done.stdout, done.returncode), done.returncode


def summary(stdout: str, status: int) -> str:
    """The verdicts (and methods) of a --json run, or the exit status."""
    verdicts: dict[str, int] = {}
    methods: set[str] = set()
    try:
        documents = [json.loads(stdout)]
    except json.JSONDecodeError:  # JSON Lines
        documents = []
        for line in stdout.splitlines():
            try:
                documents.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    for data in documents:
        rows = data if isinstance(data, list) else [data]
        for row in rows:
            for point in row.get("points", [row]) if isinstance(row, dict) else []:
                if "verdict" in point:
                    verdicts[point["verdict"]] = verdicts.get(point["verdict"], 0) + 1
                for r in point.get("results", []):
                    methods.add(str(r.get("method", "")))
    if not verdicts:
        return f"exit {status}"
    text = ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
    return text + (f" ({'/'.join(sorted(m for m in methods if m))})" if methods else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(c.name for c in CASES))
    parser.add_argument("--old", action="store_true", help="also time --method lp")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--families", nargs="?", const="symmetric,nonsymmetric,count", default=None,
                        help="run the families (comma-separated names) instead of the cases")
    parser.add_argument("--members", type=int, default=6, help="members per family and k")
    parser.add_argument("--ks", default="", help="the k of every family (default its own)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bar", type=float, default=None,
                        help="seconds, every member (default: the family's, 5 s; 60 s at k = 13)")
    parser.add_argument("--ratio", type=float, default=5.0,
                        help="slowest / fastest member at equal k")
    parser.add_argument("--list", action="store_true",
                        help="write the members into ./bench-families, run nothing")
    args = parser.parse_args()
    if args.families:
        return run_families(args)
    chosen = [c for c in CASES if c.name in args.cases.split(",")]
    print("| case | bar | now | verdicts | before (`--method lp`) |")
    print("|---|---|---|---|---|")
    missed = 0
    for case in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            command = case.build(Path(tmp))
            seconds, what, status = run(command, args.timeout)
            before = ""
            if args.old and case.old:
                old = [*command, "--method", "lp"] + (["--force"] if command[0] == "sweep" else [])
                old_seconds, old_what, _ = run(old, args.timeout)
                before = f"{old_seconds:.2f} s, {old_what}"
        ok = seconds <= case.bar and status == 0
        missed += not ok
        print(f"| {case.title} | {case.bar:g} s | {seconds:.2f} s{'' if ok else ' (missed)'} "
              f"| {what} | {before} |", flush=True)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
