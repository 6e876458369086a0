"""Options shared by every verifier (and by the batch runner, which stores them with results)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from dpverify.defaults import (
    BACKENDS,
    DEFAULT_MAX_NONZEROS,
    DEFAULT_MAX_ORBIT_WORK,
    DEFAULT_RESTARTS,
    DEFAULT_TOL,
    LP_FORMS,
    METHODS,
    LpForm,
    Method,
)

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
    form: str = LpForm.AUTO  # how product point families enter an LP: auto, chain, dense
    max_nonzeros: int = DEFAULT_MAX_NONZEROS
    threads: int | None = None
    time_limit: float | None = None
    grid: int = 0  # interior rank-one points on an m-point grid (0: off)
    samples: int = 0
    seed: int = 0
    certify: bool = False
    method: str = Method.AUTO  # auto, lp, orbit or proof (docs/theory.md, "Methods")
    max_orbit_work: int = DEFAULT_MAX_ORBIT_WORK
    # inputs with more than two symbols (docs/theory.md, section 6): random starts of the
    # protocol search (seeded by `seed`), and where witness protocol files are written
    # ("": .dpverify/witnesses)
    restarts: int = DEFAULT_RESTARTS
    witness_dir: str = ""
    # multi-party problems on bits: verify by the exact route and by the corner LP, and
    # report whether they agree (a disagreement is verdict `error`)
    cross_check: bool = False

    def key(self) -> dict:
        """The options that change a result (for the results store), as plain strings and
        numbers. The options added later (the m-ary search, the cross-check) enter only
        when they differ from their defaults, so that the keys of results stored before
        they existed stay the same."""
        out = {name: value.value if isinstance(value, Method | LpForm) else value
               for name, value in asdict(self).items()}
        for name in ("threads", "time_limit"):
            out.pop(name)
        for name, default in (("restarts", DEFAULT_RESTARTS), ("witness_dir", ""),
                              ("cross_check", False)):
            if out[name] == default:
                out.pop(name)
        return out


def lp_form(options: VerifyOptions, default: LpForm = LpForm.CHAIN) -> LpForm:
    """The LP form to build: the one `--lp-form` names, or `default` for `auto` (the
    verifiers whose size does not choose it: count problems, more than two symbols, the
    audit's bounds; the multi-party corner LP chooses by size, corner_lp.lp_form)."""
    return default if options.form == LpForm.AUTO else LpForm(options.form)


# -- options by name (the Python API, and the command line's shared options) ---------------
# The command line's names: `lp_form` is the field `form`.
OPTION_NAMES = {"tol": "tol", "backend": "backend", "max_nonzeros": "max_nonzeros",
                "lp_form": "form", "grid": "grid", "samples": "samples", "seed": "seed",
                "certify": "certify", "time_limit": "time_limit", "threads": "threads",
                "method": "method", "max_orbit_work": "max_orbit_work",
                "restarts": "restarts", "witness_dir": "witness_dir",
                "cross_check": "cross_check"}


def _number_problem(value: object, low: float, integer: bool) -> str | None:
    import math
    import numbers

    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) \
            or not (math.isfinite(float(value)) and float(value) >= low):
        return f"must be an integer >= {int(low)}" if integer else \
            f"must be a finite number >= {low:g}"
    return None


def option_problem(name: str, value: object) -> str | None:
    """Why `value` is not valid for the option `name` (None when it is): the one place
    the API and the command line check an option's value."""
    if value is None and name in ("time_limit", "threads"):
        return None
    if name in ("tol", "time_limit"):
        return _number_problem(value, 0, integer=False)
    if name in ("max_nonzeros", "threads", "max_orbit_work"):
        return _number_problem(value, 1, integer=True)
    if name == "witness_dir":
        return None if isinstance(value, str) else "must be a directory path (a string)"
    if name in ("grid", "samples", "seed", "restarts"):
        if name == "grid" and value == 1:
            return "must be 0 (off) or at least 2"
        return _number_problem(value, 0, integer=True)
    flags = ("certify", "cross_check")
    choices = {"backend": BACKENDS, "lp_form": LP_FORMS, "method": METHODS,
               **dict.fromkeys(flags, (True, False))}.get(name)
    if choices is not None and (value not in choices or isinstance(value, bool)
                                != (name in flags)):
        return "allowed: " + ", ".join(map(str, choices))
    return None


def make_options(**options: object) -> VerifyOptions:
    """VerifyOptions from the command line's option names (`tol`, `backend`,
    `max_nonzeros`, `lp_form`, `grid`, `samples`, `seed`, `certify`, `cross_check`, and
    `time_limit`, `threads`); OptionError (exit 2) names an unknown option or a bad
    value."""
    from dataclasses import fields

    from dpverify.errors import OptionError

    known = {f.name for f in fields(VerifyOptions)}
    chosen: dict[str, object] = {}
    for name, value in options.items():
        if name not in OPTION_NAMES and name not in known:
            raise OptionError(f"unknown option {name!r}; options: {', '.join(OPTION_NAMES)}")
        problem = option_problem(name, value)
        if problem is not None:
            raise OptionError(f"{name} = {value!r}: {problem}")
        chosen[OPTION_NAMES.get(name, name)] = value  # a field added later passes as is
    return VerifyOptions(**chosen)  # type: ignore[arg-type]
