"""Options shared by every verifier (and by the batch runner, which stores them with results)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

# About a minute on a 2-core machine (benchmarks/bench_xor.py): observer XOR at k = 10
# (66,560 non-zeros) verifies both accuracies in ~45 s; k = 11 (145,408) takes ~8 minutes.
DEFAULT_MAX_NONZEROS = 70_000
DEFAULT_TOL = 1e-9


@dataclass(frozen=True)
class VerifyOptions:
    tol: float = DEFAULT_TOL
    backend: str = "highs"
    form: str = "chain"  # how product point families enter the LP: chain or dense
    max_nonzeros: int = DEFAULT_MAX_NONZEROS
    threads: int | None = None
    time_limit: float | None = None
    grid: int = 0  # issue: interior rank-one points on an m-point grid (0: off)
    samples: int = 0
    seed: int = 0
    certify: bool = False

    def key(self) -> dict:
        """The options that change a result (for the results store)."""
        out = asdict(self)
        for name in ("threads", "time_limit"):
            out.pop(name)
        return out
