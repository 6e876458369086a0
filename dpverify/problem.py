"""Problems in code: load, build and change problem files without writing them to disk.

A `Problem` is a validated spec together with the TOML text it was read from or built as.
The builders (`Problem.multiparty`, `Problem.count`) write that TOML document and pass it
through the file loader (`dpverify.spec.loads`): a problem built in code is validated
exactly like a file, and a mistake raises the same one-line `SpecError` a file would, with
the builder named as the source:

    SpecError: <Problem.multiparty>: `problem.epsilon` = -1: epsilon must be a number >= 0

`Problem.replace` changes the privacy level or the number of parties the same way (the
document is changed and loaded again); sweeps are built from it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpverify.errors import InputError, SpecError
from dpverify.records import record

if TYPE_CHECKING:
    from dpverify.spec import Spec

__all__ = ["Agent", "Consumer", "Number", "Problem"]

# A number where a problem file takes one: exact values (Fraction, "p/q") stay exact.
Number = int | float | Fraction | Decimal | str
_PRIVACY_KEYS = ("epsilon", "lambda", "alpha")


@record
class Agent:
    """The observer or a party of a multi-party problem: what it computes and how its
    decisions are scored (the `[observer]` and `[[party]]` tables of a problem file).

    `function`: a name (`"xor"`, `"majority"`, `"threshold:2"`, ...), `{"expr": "..."}` or
    `{"table": [...]}`. `gain`: `"indicator"`, `"-abs"`, `"-square"`, `{"expr": ...}` or
    `{"matrix": [[...]]}`. `outputs`: the decision alphabet (default: the function's
    values).
    """

    function: str | Mapping[str, Any]
    gain: str | Mapping[str, Any] = "indicator"
    outputs: Sequence[Number] | None = None

    def table(self) -> dict[str, Any]:
        out: dict[str, Any] = {"function": self.function, "gain": self.gain}
        if self.outputs is not None:
            out["outputs"] = list(self.outputs)
        return out


@record
class Consumer:
    """The consumer of a count problem (its `[consumer]` table): a `loss` (`"abs"`,
    `"square"`, `"indicator"`, `{"expr": ...}` over i, r, n, or `{"matrix": ...}`), the
    `side_information` (`[a, b]` or `{"set": [...]}`), the `model` (`"minimax"` or
    `"bayes"`) and, for `"bayes"`, the `prior` (`"uniform"`, equal weights on the side
    information, or n + 1 weights)."""

    loss: str | Mapping[str, Any] = "abs"
    side_information: Sequence[int] | Mapping[str, Any] | None = None
    model: str = "minimax"
    prior: str | Sequence[Number] | None = None

    def table(self) -> dict[str, Any]:
        out: dict[str, Any] = {"loss": self.loss}
        if self.side_information is not None:
            out["side_information"] = self.side_information
        out["model"] = self.model
        if isinstance(self.prior, str):
            out["prior"] = self.prior
        elif self.prior is not None:
            out["prior"] = list(self.prior)
        return out


@record(eq=False)
class Problem:
    """A validated problem of any kind: `spec` (what the verifiers take), the TOML `text`
    it was read from or built as, and its `source` (a path, or `<Problem.multiparty>`)."""

    spec: Spec
    text: str
    source: str

    # -- what it is ---------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def kind(self) -> str:
        return str(self.spec.kind)

    @property
    def description(self) -> str:
        return self.spec.description

    def document(self) -> dict[str, Any]:
        """The TOML document as plain data (a fresh copy)."""
        from dpverify.spec.reader import parse_toml

        return parse_toml(self.text, self.source)

    def __repr__(self) -> str:
        size = getattr(self.spec, "parties", None)
        what = f"parties={size}" if size is not None else f"n={getattr(self.spec, 'n', '?')}"
        return f"<Problem {self.name!r} kind={self.kind} {what} source={self.source!r}>"

    # -- reading ------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Problem:
        """Read and validate one problem file (SpecError when it is not a valid problem)."""
        from dpverify.spec.loader import loads
        from dpverify.spec.reader import read_data

        _, text = read_data(path)
        spec = loads(text, source=str(path), default_name=Path(path).stem)
        return cls(spec, text, str(path))

    @classmethod
    def loads(cls, text: str, *, source: str = "<string>",
              default_name: str = "problem") -> Problem:
        """Validate the text of one problem file; `source` names it in messages."""
        from dpverify.spec.loader import loads

        return cls(loads(text, source=source, default_name=default_name), text, source)

    @classmethod
    def from_document(cls, document: Mapping[str, Any], *, source: str = "<document>",
                      default_name: str = "problem") -> Problem:
        """A problem from a TOML document given as plain data (what `tomllib` returns),
        written by the TOML writer of the files dpverify writes (spec/documents.py)."""
        from dpverify.spec.documents import toml_text

        return cls.loads(toml_text(document, source), source=source, default_name=default_name)

    # -- building -----------------------------------------------------------------------
    @classmethod
    def multiparty(cls, parties: int, *, epsilon: Number | Sequence[Number] | None = None,
                   lambda_: Number | Sequence[Number] | None = None,
                   observer: Agent | str | Mapping[str, Any] | None = None,
                   party: Mapping[int, Agent | str | Mapping[str, Any]] | None = None,
                   accuracy: str | Sequence[str] | None = None, name: str | None = None,
                   description: str = "",
                   delta: Number | Sequence[Number] | None = None) -> Problem:
        """A multi-party problem (Kairouz-Oh-Viswanath): `parties` bits, each private at
        `epsilon` (or `lambda_ = e^epsilon`; one value, or one per party), an `observer`
        and party agents `party={index: Agent(...)}`. An agent given as a string is its
        function with the indicator gain. `delta` (one value or one per party) makes the
        privacy approximate, (epsilon, delta)-DP (docs/theory.md, section 7).

        >>> Problem.multiparty(parties=5, epsilon=1.0, observer=Agent(function="majority"))
        <Problem 'multiparty-5' kind=multiparty parties=5 source='<Problem.multiparty>'>
        """
        table: dict[str, Any] = {}
        if name is not None:
            table["name"] = name
        if description:
            table["description"] = description
        table["parties"] = parties
        _privacy(table, epsilon=epsilon, lambda_=lambda_, delta=delta)
        if accuracy is not None:
            table["accuracy"] = accuracy if isinstance(accuracy, str) else list(accuracy)
        document: dict[str, Any] = {"problem": table}
        if observer is not None:
            document["observer"] = _agent_table(observer)
        if party:
            document["party"] = [{"index": index, **_agent_table(agent)}
                                 for index, agent in party.items()]
        default = f"multiparty-{parties}" if isinstance(parties, int) else "multiparty"
        return cls.from_document(document, source="<Problem.multiparty>", default_name=default)

    @classmethod
    def count(cls, n: int, *, alpha: Number | None = None, epsilon: Number | None = None,
              consumer: Consumer | None = None, name: str | None = None,
              description: str = "", delta: Number | None = None) -> Problem:
        """A count-query problem (Gupte-Sundararajan): answers 0..n at privacy `alpha`
        (`= e^-epsilon`, or give `epsilon`), and one `consumer` (default: the minimax
        consumer with the absolute loss); `delta` makes the privacy (epsilon, delta)."""
        table: dict[str, Any] = {}
        if name is not None:
            table["name"] = name
        if description:
            table["description"] = description
        table["kind"] = "count"
        table["n"] = n
        if alpha is not None:
            table["alpha"] = alpha
        if epsilon is not None:
            table["epsilon"] = epsilon
        if delta is not None:
            table["delta"] = delta
        document = {"problem": table, "consumer": (consumer or Consumer()).table()}
        default = f"count-{n}" if isinstance(n, int) else "count"
        return cls.from_document(document, source="<Problem.count>", default_name=default)

    # -- changing -----------------------------------------------------------------------
    def replace(self, *, epsilon: Number | None = None, lambda_: Number | None = None,
                alpha: Number | None = None, parties: int | None = None,
                source: str | None = None) -> Problem:
        """The same problem at another privacy level (one `epsilon`, `lambda_` or `alpha`
        for every party) and/or another number of `parties`, validated again. Its
        `[expect]` tables are dropped: they held values for the old problem."""
        document = self.document()
        document.pop("expect", None)
        table = dict(document.get("problem") or {})
        table.setdefault("name", self.name)
        given = {"epsilon": epsilon, "lambda": lambda_, "alpha": alpha}
        if any(v is not None for v in given.values()):
            for key in _PRIVACY_KEYS:
                table.pop(key, None)
            table.update({k: v for k, v in given.items() if v is not None})
        if parties is not None:
            if table["name"] == f"multiparty-{table.get('parties')}":  # the builder's default
                table["name"] = f"multiparty-{parties}"
            table["parties"] = parties
            for key in ("epsilon", "lambda"):
                table[key] = _one_level(table, key, parties, self.source)
        document["problem"] = {k: v for k, v in table.items() if v is not None}
        where = source or self.source
        return Problem.from_document(document, source=where, default_name=self.name)

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the problem file (never over an existing file unless `overwrite`)."""
        target = Path(path)
        try:
            with open(target, "w" if overwrite else "x", encoding="utf-8") as handle:
                handle.write(self.text)
        except FileExistsError:
            raise InputError(f"{target}: exists; not overwritten (pass overwrite=True)"
                             ) from None
        except OSError as exc:
            raise InputError(f"{target}: cannot write: {exc.strerror}") from None
        return target


def _one_level(table: dict[str, Any], key: str, parties: int, source: str) -> Any:
    """A per-party list of privacy levels cannot follow a change of `parties`: a list of
    equal levels becomes one level; a list of different ones is refused."""
    value = table.get(key)
    if not isinstance(value, list) or len(value) == parties:
        return value
    if value and all(v == value[0] for v in value):
        return value[0]
    raise SpecError(source, f"problem.{key}", value,
                    f"one {key} per party is defined for {len(value)} parties only, not for "
                    f"parties = {parties}: give one level for every party")


def _privacy(table: dict[str, Any], *, epsilon: Any, lambda_: Any, delta: Any = None) -> None:
    for key, value in (("epsilon", epsilon), ("lambda", lambda_), ("delta", delta)):
        if value is None:
            continue
        is_list = isinstance(value, Sequence) and not isinstance(value, str)
        table[key] = list(value) if is_list else value


def _agent_table(agent: Agent | str | Mapping[str, Any]) -> Any:
    if isinstance(agent, Agent):
        return agent.table()
    if isinstance(agent, str):
        return Agent(function=agent).table()
    return dict(agent) if isinstance(agent, Mapping) else agent
