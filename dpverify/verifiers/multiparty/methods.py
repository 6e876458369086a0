"""Which method verifies an agent: the full corner LP, the orbit method, or the exact
certificate (docs/theory.md, "Methods"). `--method auto` (the default) takes the full LP
whenever it fits the size guard, so the LP stays the path for small problems; otherwise
the orbit method when the agent's problem is symmetric; otherwise the structure-based
exact certificate on all 2^k inputs. A problem is refused only when no path fits, with
the limits named.
"""

from __future__ import annotations

import time

from dpverify.errors import SizeLimitError
from dpverify.spec.model import Accuracy, AgentSpec, MultipartySpec
from dpverify.spec.symmetric import agent_symmetry
from dpverify.spec.tables import MAX_TABULATED_PARTIES
from dpverify.verifiers.options import VerifyOptions
from dpverify.verifiers.result import AgentResult, ProblemResult

METHOD_LP, METHOD_ORBIT, METHOD_PROOF = "lp", "orbit", "proof"

# The exact certificate on all 2^k inputs solves RR's worst-case LP in floats for hints;
# its LP may be larger than the verifier's own (it runs once per agent).
PROOF_HINT_NONZEROS = 600_000


def _lp_estimate(spec: MultipartySpec, agent: AgentSpec, options: VerifyOptions) -> int | None:
    """Non-zeros of the full corner LP, or None when 2^k inputs are too many to tabulate."""
    from dpverify.verifiers.multiparty.corner_lp import agent_nonzeros, num_outputs

    if spec.parties > MAX_TABULATED_PARTIES:
        return None
    return agent_nonzeros(spec, agent, options, num_outputs(spec, agent))


def _orbit_fit(spec: MultipartySpec, agent: AgentSpec, worst: bool,
               options: VerifyOptions) -> tuple[bool, str]:
    """Whether the orbit method applies (a symmetry that reduces the problem) and fits."""
    from dpverify.verifiers.multiparty.orbit import orbit_work

    symmetry = agent_symmetry(spec, agent)
    if symmetry is None or symmetry.orbit_count >= 2 ** min(spec.parties, 62):
        return False, "the function has no symmetry to reduce by"
    outputs = _outputs_estimate(spec, agent)
    work = orbit_work(symmetry, outputs, worst)
    if work > options.max_orbit_work:
        return False, (f"the orbit method needs about {work:.3g} units of exact work "
                       f"({symmetry.orbit_count:,} orbits); the limit is "
                       f"{options.max_orbit_work:.3g} (--max-orbit-work)")
    return True, ""


def _outputs_estimate(spec: MultipartySpec, agent: AgentSpec) -> int:
    from dpverify.spec.symmetric import count_values, is_count_function

    if agent.outputs is not None:
        return len(agent.outputs)
    if is_count_function(agent.function):
        return len(set(count_values(agent.function, spec.parties)))
    return 2


def choose(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
           options: VerifyOptions) -> tuple[str, str]:
    """(method, why): the method that verifies this agent and accuracy, and why it was
    taken when it is not the full LP. SizeLimitError when no path fits."""
    method, worst = options.method, accuracy is Accuracy.WORST
    estimate = _lp_estimate(spec, agent, options)
    lp_fits = estimate is not None and estimate <= options.max_nonzeros
    if method in ("auto", METHOD_LP) and lp_fits:
        return METHOD_LP, ""
    lp_why = (f"2^{spec.parties} inputs are too many for the full LP" if estimate is None else
              f"the full LP would have about {estimate:.3g} non-zeros (the limit is "
              f"{options.max_nonzeros:,} non-zeros; raise it with --max-nonzeros)")
    if method == METHOD_LP:
        raise SizeLimitError(f"{spec.source}: {agent.name}: {lp_why}")
    orbit_ok, orbit_why = _orbit_fit(spec, agent, worst, options)
    if method in ("auto", METHOD_ORBIT) and orbit_ok:
        return METHOD_ORBIT, lp_why
    if method == METHOD_ORBIT:
        raise SizeLimitError(f"{spec.source}: {agent.name}: {orbit_why}")
    if spec.parties <= MAX_TABULATED_PARTIES:
        return METHOD_PROOF, lp_why
    raise SizeLimitError(f"{spec.source}: {agent.name}: no method fits: {lp_why}; "
                         f"{orbit_why}; the exact certificate on all inputs needs at most "
                         f"{MAX_TABULATED_PARTIES} parties")


def verify_agent_by_method(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
                           options: VerifyOptions, method: str, why: str) -> AgentResult:
    from dpverify.verifiers.multiparty.corner_lp import verify_agent

    if method == METHOD_LP:
        return verify_agent(spec, agent, accuracy, options)
    if method == METHOD_ORBIT:
        from dpverify.verifiers.multiparty.orbit import verify_orbit_agent

        result = verify_orbit_agent(spec, agent, accuracy, options)
    else:
        result = _by_proof(spec, agent, accuracy, options, why)
    if why:
        reason = "; ".join(r for r in (f"{why}: method {method}", result.reason) if r)
        result = _with_reason(result, reason)
    return result


def _by_proof(spec: MultipartySpec, agent: AgentSpec, accuracy: Accuracy,
              options: VerifyOptions, why: str) -> AgentResult:
    """The structure-based exact certificate on all 2^k inputs, checked independently."""
    from dataclasses import replace

    from dpverify.spec.tables import tabulate
    from dpverify.verifiers.multiparty.settle import settle

    start = time.perf_counter()
    table = tabulate(spec, agent)
    budget = replace(options, max_nonzeros=max(options.max_nonzeros, PROOF_HINT_NONZEROS))
    settled = settle(spec, agent, accuracy, budget, "")
    return AgentResult(agent.name, accuracy.value, settled.relaxed, settled.rr,
                       settled.verdict, time.perf_counter() - start,
                       reason=settled.reason.removeprefix("; "), rule=settled.rule,
                       outputs=table.outputs, method=METHOD_PROOF,
                       extra={"proof": settled.proof})


def _with_reason(result: AgentResult, reason: str) -> AgentResult:
    from dataclasses import replace

    return replace(result, reason=reason)


def verify_problem(spec: MultipartySpec, options: VerifyOptions) -> ProblemResult:
    """Every agent and accuracy of a multi-party problem, each by its method; refused
    (SizeLimitError) before any work when one of them fits no method."""
    header = {"parties": spec.parties, "lambdas": list(spec.lambdas)}
    plan = [(agent, accuracy, *choose(spec, agent, accuracy, options))
            for agent in spec.agents for accuracy in spec.accuracies]
    results = [verify_agent_by_method(spec, agent, accuracy, options, method, why)
               for agent, accuracy, method, why in plan]
    return ProblemResult(spec.name, spec.source, spec.kind, tuple(results), header)
