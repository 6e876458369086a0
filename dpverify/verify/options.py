"""Options shared by every verifier (and by the batch runner, which stores them with results)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

# Under a minute on a 2-core machine (benchmarks/bench_xor.py): observer XOR at k = 10
# (66,560 non-zeros) verifies both accuracies in ~17 s; k = 11 (141,312) takes ~96 s.
DEFAULT_MAX_NONZEROS = 70_000
DEFAULT_TOL = 1e-9


BYTES_PER_NONZERO = 80  # COO build, CSC copy and HiGHS's own copies, measured roughly


def check_limit(source: str, estimate: int, options: VerifyOptions, size: str) -> int:
    """Refuse (SizeLimitError, exit 3) an LP estimated above `options.max_nonzeros`,
    before anything is built; `size` names the problem's size (e.g. "parties = 12")."""
    from dpverify.errors import SizeLimitError

    if estimate > options.max_nonzeros:
        raise SizeLimitError(
            f"{source}: too large: the LP would have about {estimate:.3g} non-zeros "
            f"(~{_bytes(estimate * BYTES_PER_NONZERO)}) with {size}; "
            f"the limit is {options.max_nonzeros:,} non-zeros (raise it with --max-nonzeros)"
        )
    return estimate


def _bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}"
        n /= 1024
    return f"{n:,.0f} TiB"


@dataclass(frozen=True)
class VerifyOptions:
    tol: float = DEFAULT_TOL
    backend: str = "highs"
    form: str = "chain"  # how product point families enter the LP: chain or dense
    max_nonzeros: int = DEFAULT_MAX_NONZEROS
    threads: int | None = None
    time_limit: float | None = None
    grid: int = 0  # interior rank-one points on an m-point grid (0: off)
    samples: int = 0
    seed: int = 0
    certify: bool = False

    def key(self) -> dict:
        """The options that change a result (for the results store)."""
        out = asdict(self)
        for name in ("threads", "time_limit"):
            out.pop(name)
        return out
