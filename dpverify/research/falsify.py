"""Falsifying the bound with protocols (`dpverify falsify`; docs/theory.md, "Falsifying the
bound").

The corner LP and "RR with its best randomised rule" are the same optimisation, so their
agreement checks the code, not the relaxation. This search tests the upper bound at the
level of protocols, independently of the LP: random interactive protocols that meet the
problem's levels (theory/protocols/random.py), improved by hill climbing inside the DP
set, seeded with RR too (a valid protocol). Each protocol's value is what an explicit
decision rule achieves on its transcripts (verifiers/protocol_value.py). A protocol whose
value beats the relaxed optimum by more than --tol (normalised units) contradicts KOV
Theorem 3.1: it is checked to meet the levels, written as a protocol file, and reported.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dpverify.filenames import file_stem, output_path, write_output
from dpverify.notebook import Notebook
from dpverify.records import record
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.protocol_writer import protocol_text
from dpverify.spec.setting import Setting
from dpverify.spec.tables import tabulate
from dpverify.status import ExitStatus, exit_status
from dpverify.theory.protocols.random import (
    FloatProtocol,
    perturb,
    random_protocol,
    rr_protocol,
)
from dpverify.theory.protocols.transcripts import achieved_lambdas, level_epsilon
from dpverify.theory.units import Units, units_of
from dpverify.verifiers.audit.result import efficiency
from dpverify.verifiers.multiparty.corner_lp import check_size
from dpverify.verifiers.multiparty.planner import verify_by_lp as verify_agent
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.protocol_value import protocol_value
from dpverify.verifiers.result import Verdict

MAX_SEARCH_TRANSCRIPTS = 4096  # messages^rounds: each protocol's transcripts
CLIMB_STEP = 0.5  # the largest mixing weight of one move


@record
class SearchOptions:
    protocols: int = 200
    rounds: int = 4
    messages: int = 2
    seed: int = 0
    climb: int = 40  # hill-climbing steps from each seed (RR and the best random protocol)


@dataclass
class _Objective:
    agent: AgentSpec
    accuracy: Accuracy
    units: Units  # the gains normalised to [0, 1]
    bound: float | None = None  # normalised
    why: str = ""
    best: float = -math.inf
    best_protocol: FloatProtocol | None = None
    best_searched: float = -math.inf  # the best protocol not derived from RR
    tried: int = 0
    failures: int = 0

    @property
    def name(self) -> str:
        return f"{self.agent.name} {self.accuracy.value}"

    @property
    def unit(self) -> np.ndarray:
        return self.units.unit

    def user(self, v: float) -> float | None:
        return self.units.user(v)


@record(eq=False, repr=False)
class FalsifyResult(Notebook):
    """One agent and accuracy of a campaign (values in the user's units)."""

    notebook_columns = ("agent", "accuracy", "protocols", "best_value", "bound", "ratio",
                        "verdict", "counterexample")

    agent: str
    accuracy: str
    protocols: int
    best_value: float | None
    bound: float | None
    ratio: float | None
    counterexample: str | None
    best_origin: str
    best_searched: float | None
    verdict: Verdict
    reason: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"agent": self.agent, "accuracy": self.accuracy, "protocols": self.protocols,
                "best_value": self.best_value, "bound": self.bound, "ratio": self.ratio,
                "counterexample": self.counterexample, "best_origin": self.best_origin,
                "best_searched": self.best_searched, "verdict": self.verdict.value,
                **({"reason": self.reason} if self.reason else {})}


@dataclass(repr=False)
class Campaign(Notebook):
    """A falsification campaign (what `dpverify.falsify` returns): one result per agent
    and accuracy, the counterexamples saved."""

    notebook_columns = FalsifyResult.notebook_columns

    problem: str
    source: str
    results: list[FalsifyResult] = field(default_factory=list)
    saved: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The problem, each result (`falsify --json`'s objects), the files saved."""
        return {"problem": self.problem, "source": self.source,
                "seconds": round(self.seconds, 4),
                "results": [r.to_json() for r in self.results], "saved": list(self.saved)}

    @property
    def counterexamples(self) -> list[str]:
        return [r.counterexample for r in self.results if r.counterexample]

    @property
    def undecided(self) -> bool:
        return any(r.verdict is Verdict.ERROR for r in self.results)

    def exit_status(self) -> ExitStatus:
        """0 no counterexample; 1 a counterexample; 3 the bound could not be decided."""
        return exit_status(failed=len(self.counterexamples), undecided=self.undecided)


Progress = Callable[[int, int], None]


def _objectives(spec: MultipartySpec, options: VerifyOptions) -> list[_Objective]:
    out = []
    for agent in spec.agents:
        table = tabulate(spec, agent)
        units = units_of(table.gain_exact)
        for accuracy in spec.accuracies:
            obj = _Objective(agent, accuracy, units)
            bound = verify_agent(spec, agent, accuracy, options)
            if bound.verdict is Verdict.OPTIMAL and bound.bound is not None:
                obj.bound = units.normalised(bound.bound)
            else:
                obj.why = f"the relaxed bound is undecided: {bound.reason}"
            out.append(obj)
    return out


def _evaluate(protocol: FloatProtocol, obj: _Objective, options: VerifyOptions,
              cache: dict[int, Any]) -> float:
    tr = cache.get(id(protocol))
    if tr is None:
        tr = cache[id(protocol)] = protocol.transcripts()
    value = protocol_value(tr, obj.unit, None, obj.agent.party,
                           obj.accuracy is Accuracy.WORST, options)
    obj.tried += 1
    if not value.ok:
        obj.failures += 1
        return -math.inf
    if value.value > obj.best + 1e-12:  # a tie keeps the earlier (RR first) protocol
        obj.best, obj.best_protocol = value.value, protocol
    if not protocol.origin.startswith("rr"):
        obj.best_searched = max(obj.best_searched, value.value)
    return value.value


def _climb(rng: np.random.Generator, seed: FloatProtocol, value: float, obj: _Objective,
           steps: int, options: VerifyOptions, tick: Callable[[], None]) -> None:
    """Hill climbing from `seed`: accept a random move inside the DP set when it raises
    the objective."""
    current, origin = seed, f"{seed.origin.split('+')[0]}+climb"
    for _ in range(steps):
        candidate = perturb(rng, current, CLIMB_STEP)
        candidate = FloatProtocol(candidate.alphabets, candidate.speakers, candidate.kernels,
                                  candidate.budgets, origin=origin)
        v = _evaluate(candidate, obj, options, {})
        if v > value + 1e-12:
            current, value = candidate, v
        tick()


_SYMBOLS = ("falsify tests the bound of KOV Theorem 3.1 on bits; with alphabets > 2, "
            "`dpverify verify` searches protocols itself and writes witnesses "
            "(docs/theory.md, section 6)")
# What falsify refuses, by setting (it tests the bound of KOV Theorem 3.1: bits, pure
# epsilon-DP); tests/test_codebase.py checks that it covers every setting.
REFUSALS: dict[Setting, str | None] = {
    Setting.BITS: None,
    Setting.SYMBOLS: _SYMBOLS,
    Setting.DELTA: ("falsify tests the pure epsilon-DP bound of KOV Theorem 3.1; with delta > "
                    "0, `dpverify verify` searches interactive protocols itself and writes "
                    "witnesses (docs/theory.md, \"Approximate privacy\")"),
    Setting.DELTA_SYMBOLS: _SYMBOLS,
}


def _transcripts_over(messages: int, rounds: int, limit: int) -> bool:
    """Whether messages^rounds > limit, without the power (rounds may be any integer: at
    most about log2(limit) multiplications)."""
    count = 1
    for _ in range(rounds):
        count *= messages
        if count > limit:
            return True
    return False


def search(spec: MultipartySpec, search_options: SearchOptions, options: VerifyOptions,
           on_progress: Progress | None = None) -> list[_Objective]:
    """Random protocols, RR, and hill climbing from RR and from each objective's best
    random protocol. Returns the objectives with their best protocols."""
    from dpverify.errors import InputError

    refusal = REFUSALS[spec.setting]
    if refusal is not None:
        raise InputError(f"{spec.source}: {refusal}")
    messages, rounds = search_options.messages, search_options.rounds
    if _transcripts_over(messages, rounds, MAX_SEARCH_TRANSCRIPTS):
        raise InputError(f"--messages {messages} and --rounds {rounds} give up to "
                         f"{messages}^{rounds} transcripts per protocol; at most "
                         f"{MAX_SEARCH_TRANSCRIPTS:,} are searched")
    check_size(spec, options)
    objectives = _objectives(spec, options)
    live = [o for o in objectives if o.bound is not None]
    rng = np.random.default_rng(search_options.seed)
    total = (search_options.protocols + 1) + 2 * len(live) * search_options.climb
    done = 0

    def tick() -> None:
        nonlocal done
        done += 1
        if on_progress is not None:
            on_progress(done, total)

    lambdas = list(spec.lambdas)
    population = [rr_protocol(lambdas)]
    population += [random_protocol(rng, lambdas, search_options.rounds,
                                   search_options.messages)
                   for _ in range(search_options.protocols)]
    values: list[list[float]] = []
    for protocol in population:
        cache: dict[int, Any] = {}
        values.append([_evaluate(protocol, obj, options, cache) for obj in live])
        tick()
    for j, obj in enumerate(live):
        best_random = max(range(1, len(population)), key=lambda i: values[i][j], default=0)
        for i in (0, best_random):
            _climb(rng, population[i], values[i][j], obj, search_options.climb, options, tick)
    return objectives


def _is_private(protocol: FloatProtocol, lambdas: tuple[float, ...], tol: float) -> bool:
    levels = achieved_lambdas(protocol.transcripts())
    return all(level_epsilon(a) <= math.log(c) + tol for a, c in zip(levels, lambdas,
                                                                      strict=True))


def _file_name(base: Path, obj: _Objective, several: bool) -> Path:
    if not several:
        return base
    tag = f"{obj.agent.name.replace(':', '-')}-{obj.accuracy.value}"
    return base.with_name(f"{base.stem}-{tag}{base.suffix or '.toml'}")


def _write(path: Path, spec: MultipartySpec, document: dict[str, Any], protocol: FloatProtocol,
           description: str, comment: str) -> str:
    text = protocol_text(document, name=path.stem, description=description,
                         speakers=protocol.speakers, kernels=protocol.kernels,
                         comment=comment)
    write_output(path, text)
    return str(path)


def falsify(spec: MultipartySpec, document: dict[str, Any], search_options: SearchOptions,
            options: VerifyOptions, *, counterexample_dir: Path = Path("."),
            save_best: Path | None = None, on_progress: Progress | None = None) -> Campaign:
    """Run a campaign on one problem; write counterexamples (and the best protocols)."""
    start = time.perf_counter()
    objectives = search(spec, search_options, options, on_progress)
    campaign = Campaign(spec.name, spec.source)
    several = len(objectives) > 1
    for obj in objectives:
        campaign.results.append(_result(spec, document, obj, options, counterexample_dir,
                                        several))
        if save_best is not None and obj.best_protocol is not None:
            campaign.saved.append(_write(
                _file_name(save_best, obj, several), spec, document, obj.best_protocol,
                f"The best protocol found by `dpverify falsify` for {obj.name} of "
                f"{spec.name} (seed {search_options.seed}).",
                f"dpverify falsify: best protocol for {obj.name}, value "
                f"{obj.user(obj.best)!r}, bound {obj.user(obj.bound or math.nan)!r}"))
    campaign.seconds = time.perf_counter() - start
    return campaign


def _result(spec: MultipartySpec, document: dict[str, Any], obj: _Objective,
            options: VerifyOptions, directory: Path, several: bool) -> FalsifyResult:
    best, bound = obj.user(obj.best), obj.user(obj.bound if obj.bound is not None else math.nan)
    origin = obj.best_protocol.origin if obj.best_protocol is not None else "-"
    ratio = efficiency(best, bound)
    searched = obj.user(obj.best_searched)
    common = (obj.agent.name, obj.accuracy.value, obj.tried, best, bound, ratio)
    if obj.bound is None:
        return FalsifyResult(*common, None, origin, searched, Verdict.ERROR, obj.why)
    if obj.failures:
        return FalsifyResult(*common, None, origin, searched, Verdict.ERROR,
                             f"{obj.failures} protocols could not be evaluated")
    if obj.best <= obj.bound + options.tol or obj.best_protocol is None:
        return FalsifyResult(*common, None, origin, searched, Verdict.OPTIMAL)
    if not _is_private(obj.best_protocol, spec.lambdas, options.tol):
        return FalsifyResult(*common, None, origin, searched, Verdict.ERROR,
                             "a protocol above the bound does not meet the levels: a bug in "
                             "the search, not a counterexample")
    path = output_path(directory, f"{file_stem(spec.name)}-counterexample-"
                                  f"{obj.agent.name.replace(':', '-')}-{obj.accuracy.value}.toml")
    written = _write(path, spec, document, obj.best_protocol, (
        f"COUNTEREXAMPLE found by `dpverify falsify`: its {obj.name} accuracy "
        f"{best!r} exceeds the relaxed optimum {bound!r} of {spec.name}."),
        "dpverify falsify: a protocol that beats the bound; audit it with `dpverify audit`")
    return FalsifyResult(*common, written, origin, searched, Verdict.CONTRADICTION,
                         f"the protocol in {written} beats the bound by "
                         f"{obj.units.user_width(obj.best - obj.bound):.3g}")
