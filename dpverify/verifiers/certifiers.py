"""Which certificate `certify` writes for an agent and accuracy, chosen once by the
problem's kind and setting (spec/setting.py), through one table; the certificate's JSON
text and its file name (docs/format.md, "Certificates").

* bits: RR's exact certificate on all inputs or on orbits, by the multi-party planner
  (verifiers/multiparty/planner.py: `dpverify-certificate/1`,
  `dpverify-orbit-certificate/1`);
* more than two symbols: `dpverify-mary-certificate/1` (verifiers/multisymbol);
* delta > 0: `dpverify-envelope-certificate/1`, the envelope bound (verifiers/approximate);
* delta > 0 with more than two symbols: refused, as `verify` refuses it;
* count problems and protocol files: no certificate (`certify` skips them).

Every certificate is checked exactly by its construction before it is returned; the
independent checker (dpverify.checker, by the certificate's `format`) checks it again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from dpverify.defaults import Method
from dpverify.filenames import file_stem
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.setting import Setting
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.progress import stage
from dpverify.verifiers.result import AgentResult

# (spec, agent, accuracy, float hints of `verify` or None, options, fine) -> a certificate
Certifier = Callable[[MultipartySpec, AgentSpec, Accuracy, AgentResult | None, VerifyOptions,
                      bool], Any]


def _bits(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
          hint: AgentResult | None, options: VerifyOptions, fine: bool) -> Any:
    from dpverify.verifiers.multiparty.planner import certificate_for

    return certificate_for(spec, agent, accuracy, hint, options, fine=fine)


def _symbols(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
             hint: AgentResult | None, options: VerifyOptions, fine: bool) -> Any:
    from dpverify.verifiers.multisymbol.verifier import symbol_certificate

    stage(spec.name, agent.name, accuracy.value, Method.RAYS)
    return symbol_certificate(spec, agent, accuracy, options)


def _delta(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
           hint: AgentResult | None, options: VerifyOptions, fine: bool) -> Any:
    from dpverify.verifiers.approximate.certify import delta_certificate

    stage(spec.name, agent.name, accuracy.value, Method.ENVELOPE)
    return delta_certificate(spec, agent, accuracy, options)


def _delta_symbols(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                   hint: AgentResult | None, options: VerifyOptions, fine: bool) -> Any:
    from dpverify.verifiers.approximate.envelope import symbols_refusal

    raise symbols_refusal(spec)


# The certifier of every (kind, setting): None where `certify` writes no certificate
# (tests/test_codebase.py checks that it covers every key).
CERTIFIERS: dict[tuple[str, Setting], Certifier | None] = {
    ("multiparty", Setting.BITS): _bits,
    ("multiparty", Setting.SYMBOLS): _symbols,
    ("multiparty", Setting.DELTA): _delta,
    ("multiparty", Setting.DELTA_SYMBOLS): _delta_symbols,
    ("count", Setting.PURE): None,
    ("count", Setting.DELTA): None,
    ("protocol", Setting.BITS): None,
    ("protocol", Setting.SYMBOLS): None,
    ("protocol", Setting.DELTA): None,
    ("protocol", Setting.DELTA_SYMBOLS): None,
}


def certifiable(spec: Any) -> bool:
    """Whether `certify` writes certificates for the problem (multi-party problems)."""
    return CERTIFIERS[(spec.kind, spec.setting)] is not None


def certificate(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy | str,
                options: VerifyOptions | None = None, hint: AgentResult | None = None, *,
                fine: bool = True) -> Any:
    """The exact certificate (typed) of one agent and accuracy, by its setting (module
    docstring): at the fine brackets of e^eps (64 bits), or (not `fine`) the coarse ones
    the tolerance allows (theory/exact.py). SizeLimitError (a limit) or SolverError (a
    failed LP) when there is none."""
    certifier = CERTIFIERS[(spec.kind, spec.setting)]
    assert certifier is not None, "certify takes multi-party problems"
    return certifier(spec, agent, Accuracy(accuracy), hint, options or VerifyOptions(), fine)


def certify_agent(spec: MultipartySpec, agent_spec: AgentSpec, accuracy: Accuracy | str,
                  agent_result: AgentResult | None = None,
                  options: VerifyOptions | None = None) -> dict:
    """The certificate JSON object (docs/format.md) for one agent and accuracy: what
    `certify` writes (`certificate`, as JSON).

    Checked exactly before it is returned; when the exact construction could not close the
    gap the status is `bracket` (a valid, weaker certificate) or `unproved` (with `notes`).
    `agent_result` (from verify_agent) supplies float hints for the worst case when the
    problem has no symmetry to reduce by; otherwise RR's decision LP is solved here.
    """
    return certificate(spec, agent_spec, accuracy, options, agent_result).to_json(spec.name)


def certificate_filename(problem: str, agent: str, accuracy: str) -> str:
    """`<problem>.<agent>.<accuracy>.cert.json`, agent `observer` or `party-i`; the problem's
    name made a plain file name (`dpverify.filenames.file_stem`)."""
    return f"{file_stem(problem)}.{agent.replace(':', '-')}.{accuracy}.cert.json"


def dump_certificate(cert: dict) -> str:
    """The certificate as JSON text: one key per line, one matrix row per line (one line
    per row of scalars nested in a list, such as a delta certificate's nu rows)."""

    def scalar_list(v: Any) -> bool:
        return isinstance(v, list) and not any(isinstance(x, (list, dict)) for x in v)

    def flat_dict(v: Any) -> bool:
        return isinstance(v, dict) and scalar_list(list(v.values()))

    def row(v: Any) -> str:
        return json.dumps(v, separators=(", ", ": "))

    def render(v: Any, indent: str) -> str:
        inner = indent + "  "
        if isinstance(v, dict):
            items = [f"{inner}{json.dumps(key)}: {render(val, inner)}" for key, val in v.items()]
            return "{\n" + ",\n".join(items) + "\n" + indent + "}"
        if isinstance(v, list) and not scalar_list(v):
            return "[\n" + ",\n".join(inner + (row(x) if flat_dict(x) else render(x, inner))
                                       for x in v) + "\n" + indent + "]"
        return json.dumps(v, separators=(", ", ": "))

    return render(cert, "") + "\n"


__all__ = ["CERTIFIERS", "certifiable", "certificate", "certificate_filename", "certify_agent",
           "dump_certificate"]
