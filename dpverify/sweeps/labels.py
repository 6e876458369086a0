"""What a sweep's figure says about its values (plotting.py draws them): the y label of
each agent, from its gain (maximised) or the consumer's loss (minimised), and the range
of that gain or loss, the scale of the verdict's tolerance (`--tol` is relative to it,
theory/units.py), so that a figure draws the band `|gap| <= tol` that the verdicts used.
"""

from __future__ import annotations

from collections.abc import Iterable

from dpverify.spec.count_model import CountSpec
from dpverify.spec.model import AgentSpec, MultipartySpec

# Named gains (spec.md, "gain") and losses: what is averaged (or minimised over inputs)
GAIN_LABELS = {"indicator": "accuracy", "-abs": "expected −|f − y|",
               "-square": "expected −(f − y)²"}
LOSS_LABELS = {"abs": "expected loss |i − r|", "square": "expected loss (i − r)²",
               "indicator": "P(r ≠ i)"}
# parties, and inputs (2^12: bits at 12 parties): a larger problem's gain range is not
# tabulated for a figure
MAX_TABULATED = 12
MAX_LOSS_TABLE = 500  # n: a larger count's loss range comes from its named loss alone


def gain_label(agent: AgentSpec) -> str:
    """The y label of a multi-party agent: `accuracy` (the probability of y = f) for the
    indicator gain,
    `expected −|f − y|` for -abs, ..., `expected gain` for an expression or a matrix."""
    gain = agent.gain
    return GAIN_LABELS.get(gain.name, "expected gain") if gain.kind == "named" \
        else "expected gain"


def loss_label(spec: CountSpec) -> str:
    loss = spec.loss
    return LOSS_LABELS.get(loss.name, "expected loss") if loss.kind == "named" \
        else "expected loss"


def gain_span(spec: MultipartySpec, agent: AgentSpec) -> float | None:
    """max - min of the agent's gains (the unit of its tolerance); None when finding it
    would need a table too large to build for a figure."""
    if agent.gain.kind == "named" and agent.gain.name == "indicator":
        return 1.0
    if spec.parties > MAX_TABULATED or spec.num_inputs > 2 ** MAX_TABULATED:
        return None
    from dpverify.spec.tables import tabulate

    values = [float(v) for row in tabulate(spec, agent).gain_exact for v in row]
    return max(values) - min(values) if values else None


def loss_span(spec: CountSpec) -> float | None:
    """max - min of the consumer's loss over the answers that matter (as the verifier
    normalises it); for a large n, that of a named loss over every answer."""
    if spec.n > MAX_LOSS_TABLE:
        named = {"abs": float(spec.n), "square": float(spec.n) ** 2, "indicator": 1.0}
        return named.get(spec.loss.name) if spec.loss.kind == "named" else None
    from dpverify.spec.losses import loss_table

    table = loss_table(spec)
    rows = spec.side_information if spec.prior is None else \
        [i for i, p in enumerate(spec.prior) if p > 0]
    values = [float(v) for i in rows for v in table[i]]
    return max(values) - min(values) if values else None


def figure_scales(specs: Iterable[object]) -> tuple[dict[str, str], dict[str, float]]:
    """Over the specs of a sweep's points: each agent's y label, and the largest range of
    its gain or loss (agents whose range is unknown are left out)."""
    labels: dict[str, str] = {}
    spans: dict[str, float] = {}
    for spec in specs:
        if isinstance(spec, CountSpec):
            pairs = [("consumer", loss_label(spec), loss_span(spec))]
        elif isinstance(spec, MultipartySpec):
            pairs = [(a.name, gain_label(a), gain_span(spec, a)) for a in spec.agents]
        else:
            continue
        for name, label, span in pairs:
            labels.setdefault(name, label)
            if span is not None:
                spans[name] = max(spans.get(name, 0.0), span)
    return labels, spans
