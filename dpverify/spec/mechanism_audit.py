"""Mechanism files with a consumer, for `dpverify audit` (docs/format.md, "Auditing a count
mechanism"): a `[mechanism]` table as for `dpverify derive` (the alpha it claims and its
matrix) and a `[consumer]` table as in a count problem (loss, side information, model,
prior). The consumer's count problem is posed at the claimed alpha."""

from __future__ import annotations

from dataclasses import dataclass

from dpverify.errors import SizeLimitError, SpecError
from dpverify.spec.count_loader import parse_mechanism
from dpverify.spec.count_model import CountSpec, MechanismSpec
from dpverify.spec.losses import loss_table
from dpverify.spec.reader import Table, parse_toml
from dpverify.spec.sections import consumer_table


@dataclass(frozen=True, eq=False)
class MechanismAudit:
    """An explicit mechanism and the consumer whose loss it is audited for. `consumer` is
    the count problem (same n, the mechanism's claimed alpha) of that consumer."""

    mechanism: MechanismSpec
    consumer: CountSpec

    def __post_init__(self) -> None:
        if self.consumer.n != self.mechanism.n:
            raise ValueError("the consumer's count problem must have the mechanism's n")

    @property
    def name(self) -> str:
        return self.mechanism.name

    @property
    def source(self) -> str:
        return self.mechanism.source


def loads_mechanism_audit(text: str, *, source: str = "<string>",
                          default_name: str = "mechanism") -> MechanismAudit:
    """A mechanism file with a `[consumer]` table (module docstring)."""
    document = parse_toml(text, source)
    root = Table(document, source, "")
    root.done(("mechanism", "consumer"))
    if not root.has("mechanism"):
        raise SpecError(source, "mechanism", None, "is required: a [mechanism] table with "
                        "`alpha` (or `epsilon`) and `matrix`")
    if not root.has("consumer"):
        raise SpecError(source, "consumer", None, "is required to audit a mechanism: a "
                        "[consumer] table with `loss` (and optionally side_information, "
                        "model, prior); `dpverify derive` needs none")
    mechanism = parse_mechanism(root.table("mechanism"), default_name=default_name)
    if mechanism.approximate:
        raise SizeLimitError(
            f"{source}: a mechanism that claims delta > 0 is not audited against a consumer: "
            "`dpverify derive` checks its (epsilon, delta) privacy and the consumers of two "
            "adjacent answers, and a count problem with `delta` gives a consumer's "
            "(epsilon, delta) optimum")
    n = mechanism.n
    loss, side, model, prior = consumer_table(root.table("consumer"), n)
    consumer = CountSpec(name=mechanism.name, description=mechanism.description,
                         source=source, n=n, alpha=mechanism.alpha,
                         alpha_exact=mechanism.alpha_exact,
                         epsilon_exact=mechanism.epsilon_exact, loss=loss,
                         side_information=side, model=model, prior=prior)
    loss_table(consumer)  # surface expression errors at load time
    return MechanismAudit(mechanism, consumer)
