"""`verify` on a multi-party problem with some delta_i > 0 (issue 20; docs/theory.md,
"Approximate privacy"): every agent and accuracy through `approximate_result`, witness
files under `--witness-dir`, one ProblemResult.

Parties holding more than two symbols are refused (exit status 3): RR(epsilon, delta), the
envelope bound and the grid protocols are built for bits (the rays of a factor (u, v) lie
along one line, which an m-ary factor's cone does not; and no dominance result like KOV's
for one bit is used there).
"""

from __future__ import annotations

from pathlib import Path

from dpverify.defaults import DEFAULT_WITNESS_DIR, Method
from dpverify.spec.model import Accuracy, MultipartySpec
from dpverify.spec.numbers import rational_text
from dpverify.spec.tables import tabulate
from dpverify.verifiers.approximate.envelope import envelope_nonzeros
from dpverify.verifiers.approximate.verifier import approximate_result
from dpverify.verifiers.options import VerifyOptions, check_limit
from dpverify.verifiers.progress import stage
from dpverify.verifiers.result import ProblemResult


def check_sizes(spec: MultipartySpec, options: VerifyOptions) -> None:
    """Refuse (SizeLimitError) before any work when one agent's envelope LP is too large."""
    for agent in spec.agents:
        outputs = len(tabulate(spec, agent).outputs)
        labels = outputs ** (1 if agent.party == 0 else 2)
        worst = Accuracy.WORST in spec.accuracies
        check_limit(spec.source, envelope_nonzeros(spec.parties, spec.deltas, labels, worst),
                    options, f"parties = {spec.parties} and {labels} labels (four rays per "
                             "party, delta > 0)")


def witness_directory(options: VerifyOptions) -> Path:
    return Path(options.witness_dir) if options.witness_dir else DEFAULT_WITNESS_DIR


def delta_list(spec: MultipartySpec) -> list[str]:
    """The deltas as exact strings, one per party ("1/10", "0")."""
    return [rational_text(d) for d in spec.deltas]


def verify_approximate(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    """Every agent and accuracy of a problem on bits with some delta_i > 0."""
    check_sizes(spec, options)
    directory = witness_directory(options)
    results = []
    for agent in spec.agents:
        for accuracy in spec.accuracies:
            stage(spec.name, agent.name, accuracy.value, Method.ENVELOPE)
            results.append(approximate_result(spec, agent, accuracy, spec.deltas, options,
                                              directory=directory))
    header = {"parties": spec.parties, "lambdas": list(spec.lambdas),
              "delta": delta_list(spec)}
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), header,
                         setting=spec.setting)
