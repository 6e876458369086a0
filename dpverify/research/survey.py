"""`dpverify survey`: a research table over many problems, with more than two symbols
(docs/theory.md, section 6.7) or under approximate privacy (`deltas`, bits: section 7.12;
docs/format.md, "Survey output").

The observer computes f on {0..m-1}^k, every party at the same level. `--functions all`
enumerates every function with `values` values (V^(m^k) of them), `random:N` draws N. Each
is verified for each epsilon (and delta) and accuracy by `verify`: for more than two
symbols verifiers/multisymbol/verifier.py (bound, m-ary RR, search, verdict), with delta > 0
verifiers/approximate/verifier.py (the envelope bound, RR(epsilon, delta), the witness;
verdicts optimal, interaction-helps, open). With a store the results are kept there, and a
survey run again reads what it holds (resumable).

Symmetry: relabelling one party's symbols, exchanging two parties (same alphabet, same
level) and relabelling the function's values where the gain allows it (any permutation for
the indicator gain, the reversal v -> V - 1 - v for -abs and -square) map a problem to one
with the same bound, the same m-ary RR value and the same best protocols (the DP cone, RR
and the uniform weights over inputs are all invariant; theory.md 6.6). So the functions
are grouped into classes, one representative is verified, and its verdict counts once per
function of its class. `symmetry=False` verifies every function (the tests compare both).
Under delta > 0 the same relabellings keep the verdicts and values: a party's bit flipped
(its hockey-stick sums are the same both ways, RR(epsilon, delta) is symmetric), two
parties exchanged (every party at the same (epsilon, delta)), the values relabelled.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpverify.defaults import DEFAULT_TIMEOUT
from dpverify.errors import InputError, OptionError
from dpverify.filenames import file_stem, make_directory, output_path, write_output
from dpverify.notebook import Notebook
from dpverify.reasons import ReasonCode
from dpverify.records import record
from dpverify.spec.documents import number, toml_text
from dpverify.spec.numbers import NumberError, parse_exact
from dpverify.spec.setting import Setting
from dpverify.status import ExitStatus, verdict_status

if TYPE_CHECKING:
    from dpverify.verifiers.result import ProblemResult

MAX_ENUMERATED = 1 << 16  # `--functions all` refuses more functions than this
FINDINGS = ("gap", "interaction-helps")  # the witness beats RR


@record
class SurveyKind:
    """What a survey of one setting counts and writes: the verdict that is its finding (a
    witness beats m-ary RR: `gap`; an interactive protocol beats RR(epsilon, delta):
    `interaction-helps`), and whether its rows carry a `delta` and the `closed` count."""

    finding: str
    with_delta: bool

    @property
    def verdicts(self) -> tuple[str, ...]:
        return ("optimal", self.finding, "open", "error")


# The survey of each setting (SurveyPlan.setting; tests/test_codebase.py checks that the
# table covers them): more than two symbols under pure DP, or bits under delta > 0.
SURVEYS: dict[Setting, SurveyKind] = {
    Setting.SYMBOLS: SurveyKind("gap", with_delta=False),
    Setting.DELTA: SurveyKind("interaction-helps", with_delta=True),
}
VERDICTS = ("optimal", "gap", "interaction-helps", "open", "error")
SAVED = ("gap", "interaction-helps", "open")
MAX_EPSILON = 700  # e^epsilon must be a finite float


def exact_levels(text: str, within: Callable[[Fraction], bool], allowed: str
                 ) -> tuple[Fraction, ...]:
    """A comma-separated list of exact numbers, each once, in order; OptionError (exit 2)
    naming a bad item and `allowed` (what `within` accepts)."""
    out: list[Fraction] = []
    for item in text.split(","):
        try:
            level = parse_exact(item.strip())
        except NumberError as exc:
            raise OptionError(f"{item.strip()!r}: {exc}") from None
        if not within(level):
            raise OptionError(f"{item.strip()!r}: {allowed}")
        out.append(level)
    return tuple(dict.fromkeys(out))


def parse_deltas(text: str) -> tuple[Fraction, ...]:
    """`--delta 1/20,1/10`: exact levels in (0, 1)."""
    return exact_levels(text, lambda d: 0 < d < 1, "delta must be in (0, 1)")


def parse_epsilons(text: str) -> tuple[Fraction, ...]:
    """`--epsilon 0.5,1,2`: exact levels in 0..700 (e^epsilon a finite float)."""
    return exact_levels(text, lambda e: 0 <= e <= MAX_EPSILON,
                        f"epsilon must be in 0..{MAX_EPSILON}")


@record
class SurveyPlan:
    alphabet: int
    parties: int
    epsilons: tuple[Fraction, ...]
    functions: str = "all"  # "all" or "random:N"
    values: int = 2
    gains: tuple[str, ...] = ("indicator",)
    accuracies: tuple[str, ...] = ("average", "worst")
    seed: int = 0
    symmetry: bool = True
    deltas: tuple[Fraction, ...] = ()  # approximate privacy (bits): every case at each

    @property
    def inputs(self) -> int:
        return self.alphabet ** self.parties

    @property
    def setting(self) -> Setting:
        """Bits under delta > 0 (`deltas` given), else more than two symbols (__post_init__
        refuses the other two)."""
        return Setting.DELTA if self.deltas else Setting.SYMBOLS

    @property
    def kind(self) -> SurveyKind:
        return SURVEYS[self.setting]

    def __post_init__(self) -> None:
        if self.deltas and self.alphabet != 2:
            raise OptionError(f"--delta: approximate privacy is surveyed on bits (alphabet "
                              f"2), not alphabet {self.alphabet}")
        if not self.deltas and self.alphabet < 3:
            raise OptionError("alphabet 2 (bits) is surveyed under approximate privacy: "
                              "give --delta (pure epsilon-DP on bits is KOV's theorem, "
                              "`verify` proves it)")

    def levels(self) -> list[tuple[Fraction, Fraction]]:
        """Every (epsilon, delta) the plan verifies at (delta 0 without `deltas`)."""
        return [(eps, d) for eps in self.epsilons for d in (self.deltas or (Fraction(0),))]


@record
class Case:
    """One verification: a representative function at one level, gain and accuracy, with
    the number of functions its class stands for."""

    table: tuple[int, ...]
    epsilon: Fraction
    gain: str
    accuracy: str
    weight: int
    delta: Fraction = Fraction(0)


@dataclass
class CaseResult:
    case: Case
    verdict: str
    bound: float | None
    rr: float | None
    best: float | None
    seconds: float
    reason: str = ""
    saved: str = ""
    closed: bool = False  # interaction-helps with the bracket [best, bound] within --tol
    stored: bool = False  # read from the results store, not computed in this run

    @property
    def gap(self) -> float:
        """best - RR: how much the witness beats RR by (m-ary RR, or RR(epsilon, delta)),
        user units."""
        return (self.best or 0.0) - (self.rr or 0.0) \
            if self.verdict in FINDINGS else 0.0

    @property
    def interval(self) -> float:
        """bound - best: the width of an open instance's interval."""
        return (self.bound or 0.0) - (self.best or 0.0) if self.verdict == "open" else 0.0


@dataclass(repr=False)
class SurveyReport(Notebook):
    """A survey (what `dpverify.survey` returns): its rows, one per epsilon, gain and
    accuracy (`rows()`, the records in a notebook)."""

    plan: SurveyPlan
    results: list[CaseResult] = field(default_factory=list)
    functions: int = 0
    classes: int = 0
    seconds: float = 0.0

    def rows(self) -> list[dict[str, Any]]:
        """One row per epsilon (and delta), gain and accuracy: counts (weighted by class
        sizes), the largest gap (best - RR: the exact optimum minus RR(epsilon, delta)
        where the bracket is closed) and the largest open interval (bound - best), with
        their functions; with delta, how many `interaction-helps` are closed."""
        out = []
        kind = self.plan.kind
        verdicts = kind.verdicts
        keys = sorted({(r.case.epsilon, r.case.delta, r.case.gain, r.case.accuracy)
                       for r in self.results},
                      key=lambda t: (t[0], t[1], t[2], self.plan.accuracies.index(t[3])))
        for eps, delta, gain, accuracy in keys:
            group = [r for r in self.results if (r.case.epsilon, r.case.delta, r.case.gain,
                                                 r.case.accuracy) == (eps, delta, gain,
                                                                      accuracy)]
            counts = {v: sum(r.case.weight for r in group if r.verdict == v)
                      for v in verdicts}
            gap = max(group, key=lambda r: r.gap)
            wide = max(group, key=lambda r: r.interval)
            row: dict[str, Any] = {"epsilon": float(eps)}
            if kind.with_delta:
                row["delta"] = float(delta)
            row.update({"gain": gain, "accuracy": accuracy,
                        "functions": sum(r.case.weight for r in group),
                        "classes": len(group), **counts})
            if kind.with_delta:
                row["closed"] = sum(r.case.weight for r in group if r.closed)
            row.update({"largest_gap": gap.gap, "largest_gap_function": _name(gap.case)
                        if gap.gap > 0 else None,
                        "largest_open": wide.interval, "largest_open_function":
                        _name(wide.case) if wide.interval > 0 else None})
            out.append(row)
        return out

    def exit_status(self) -> ExitStatus:
        """As `verify` over every instance: 0 all optimal, 1 a gap (or interaction
        helps), 3 open or an error."""
        return verdict_status(r.verdict for r in self.results)

    def errors(self) -> dict[str, int]:
        """Why instances ended `error` (a timeout naming --timeout, a refusal naming its
        limit): each reason with its number of verifications."""
        out: dict[str, int] = {}
        for r in self.results:
            if r.verdict == "error":
                out[r.reason or "error"] = out.get(r.reason or "error", 0) + 1
        return out

    def to_json(self) -> dict[str, Any]:
        plan = self.plan
        out: dict[str, Any] = {"alphabet": plan.alphabet, "parties": plan.parties}
        if plan.kind.with_delta:
            out["deltas"] = [float(d) for d in plan.deltas]
        errors = [{"reason": reason, "verifications": n}
                  for reason, n in self.errors().items()]
        return {**out,
                "functions": self.functions, "classes": self.classes,
                "symmetry": plan.symmetry, "seconds": round(self.seconds, 2),
                "rows": self.rows(),
                "saved": [r.saved for r in self.results if r.saved],
                **({"errors": errors} if errors else {})}


def _name(case: Case) -> str:
    """A function as its values in input order (x1 most significant): "011010001"."""
    sep = "" if max(case.table) < 10 else ","
    return sep.join(str(v) for v in case.table)


# -- functions and their classes ------------------------------------------------------------
def functions(plan: SurveyPlan) -> Iterator[tuple[int, ...]]:
    """The surveyed functions (tables in input order), as the plan says."""
    n, V = plan.inputs, plan.values
    if plan.functions == "all":
        if V ** n > MAX_ENUMERATED:
            raise InputError(f"--functions all: {V}^{n} = {V ** n:,} functions; at most "
                             f"{MAX_ENUMERATED:,} are enumerated (use --functions random:N)")
        yield from itertools.product(range(V), repeat=n)
        return
    count = int(plan.functions.partition(":")[2])
    rng = np.random.default_rng(plan.seed)
    for _ in range(count):
        yield tuple(int(v) for v in rng.integers(0, V, size=n))


def _symmetries(plan: SurveyPlan, gain: str) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """(input permutation, value map) for every element of the symmetry group."""
    m, k, V = plan.alphabet, plan.parties, plan.values
    symbols = np.indices((m,) * k).reshape(k, -1).T
    maps = (list(itertools.permutations(range(V))) if gain == "indicator"
            else [tuple(range(V)), tuple(range(V - 1, -1, -1))])
    out = []
    for order in itertools.permutations(range(k)):
        for relabel in itertools.product(itertools.permutations(range(m)), repeat=k):
            moved = np.stack([np.asarray(relabel[i])[symbols[:, order[i]]]
                              for i in range(k)], axis=1)
            index = np.ravel_multi_index(tuple(moved.T), (m,) * k)
            for values in maps:
                out.append((index, values))
    return out


def cases(plan: SurveyPlan) -> tuple[list[Case], int]:
    """The verifications to run (one per class and epsilon, gain, accuracy), and the
    number of functions surveyed."""
    tables = list(functions(plan))
    out = []
    for gain in plan.gains:
        classes: dict[tuple[int, ...], int] = {}
        group = _symmetries(plan, gain) if plan.symmetry else []
        for table in tables:
            key = table
            if group:
                arr = np.asarray(table)
                key = min(tuple(int(values[v]) for v in arr[index]) for index, values in group)
            classes[key] = classes.get(key, 0) + 1
        for eps, delta in plan.levels():
            for accuracy in plan.accuracies:
                out += [Case(key, eps, gain, accuracy, weight, delta)
                        for key, weight in classes.items()]
    return out, len(tables)


# -- running -----------------------------------------------------------------------------------
def case_name(plan: SurveyPlan, case: Case) -> str:
    """The problem name of one case (its file is named after it)."""
    level = f"e{float(case.epsilon):g}" + (f"-d{float(case.delta):g}" if case.delta else "")
    return (f"survey-m{plan.alphabet}-k{plan.parties}-{level}-{case.gain}-"
            f"{case.accuracy}-f{_name(case)}").replace(",", "_")


def problem_text(plan: SurveyPlan, case: Case, expect: dict[str, Any] | None = None,
                 description: str = "") -> str:
    """The problem file of one case (with an [expect] table when given)."""
    head: dict[str, Any] = {
        "name": case_name(plan, case),
        "description": description or "dpverify survey instance",
        "parties": plan.parties}
    if plan.alphabet != 2:
        head["alphabet"] = plan.alphabet
    head["epsilon"] = number(case.epsilon)
    if case.delta:
        head["delta"] = number(case.delta)
    head["accuracy"] = case.accuracy
    doc: dict[str, Any] = {"problem": head,
                           "observer": {"function": {"table": list(case.table)},
                                        "gain": case.gain}}
    if expect:
        doc["expect"] = {"observer": expect}
    return toml_text(doc, "<survey>")


def case_result(case: Case, result: ProblemResult, seconds: float) -> CaseResult:
    """A case's row from its problem's result (a SymbolResult or an ApproxResult: the bound
    is `relaxed_optimum`, RR's value `rr_value`, the best protocol found `best_value`); a
    problem that timed out or could not be run is an `error` with its reason."""
    if not result.results:
        return CaseResult(case, str(result.verdict), None, None, None, seconds, result.reason)
    r = result.results[0]
    return CaseResult(case, str(r.verdict), getattr(r, "relaxed_optimum", None),
                      getattr(r, "rr_value", None), getattr(r, "best_value", None), seconds,
                      r.reason or result.reason, closed=bool(getattr(r, "closed", False)))


def save_case(plan: SurveyPlan, result: CaseResult, directory: Path) -> str:
    """An interesting case (gap, interaction-helps or open) as a problem file with its
    [expect] table."""
    make_directory(directory)  # a `.dpverify` folder is marked as a cache
    expect = {result.case.accuracy: result.bound, "verdict": result.verdict}
    text = problem_text(plan, result.case, expect,
                        f"Found by `dpverify survey`: {result.verdict}. {result.reason}")
    path = output_path(directory, f"{file_stem(case_name(plan, result.case))}.toml")
    write_output(path, text)
    return str(path)


def run_survey(plan: SurveyPlan, options: Any, *, jobs: int | None = 1,
               save_dir: Path | None = None,
               on_result: Callable[[CaseResult, int, int], None] | None = None,
               timeout: float | None = DEFAULT_TIMEOUT, store: Any = None,
               force: bool = False) -> SurveyReport:
    """Every case of the plan, through the batch runner (runner/batch.py: spawned workers,
    a time limit per case, dead workers and Ctrl-C handled as in `batch`; `jobs` None:
    batch's default, one worker per idle CPU, runner/executors/base.py; with a `store`,
    the cases it holds are read from it, unless `force`, and the others stored as they
    finish: a survey run again resumes); the gap, interaction-helps and open ones saved
    into `save_dir`.
    The witness protocols the verifiers write go to a temporary directory (with a store,
    to the default witness folder, so that the options, and the store's key, are the same
    every run): a survey keeps only the problem files it saves."""
    import dataclasses
    import tempfile

    from dpverify.runner.batch import problem_text as problem_file
    from dpverify.runner.batch import run_problems
    from dpverify.runner.files import timeout_reason

    start = time.perf_counter()
    todo, count = cases(plan)
    report = SurveyReport(plan, functions=count,
                          classes=len({(c.table, c.gain) for c in todo}))
    by_source = {f"<survey {i}>": case for i, case in enumerate(todo)}
    files = [problem_file(source, problem_text(plan, case), name=case_name(plan, case),
                          kind="multiparty") for source, case in by_source.items()]

    class Collect:
        def started(self, total: int, skipped: int, workers: int) -> None:
            pass

        def finished(self, item: Any) -> None:
            result = case_result(by_source[item.source], item.result, item.seconds)
            if item.result.code is ReasonCode.TIMEOUT:  # the limit and the option
                result.reason = timeout_reason(timeout)
            result.stored = bool(getattr(item, "cached", False))
            if save_dir is not None and result.verdict in SAVED:
                result.saved = save_case(plan, result, save_dir)
            report.results.append(result)
            if on_result is not None:
                on_result(result, len(report.results), len(todo))

    if store is not None:  # the default witness folder: the same options key every run
        run_problems(files, dataclasses.replace(options, witness_dir=""), store=store,
                     jobs=jobs, timeout=timeout, listener=Collect(), force=force)
    else:
        with tempfile.TemporaryDirectory(prefix="dpverify-survey-") as witnesses:
            run_problems(files, dataclasses.replace(options, witness_dir=witnesses),
                         store=None, jobs=jobs, timeout=timeout, listener=Collect())
    order = {id(case): i for i, case in enumerate(todo)}
    report.results.sort(key=lambda r: order[id(r.case)])
    report.seconds = time.perf_counter() - start
    return report
