"""The options of every verifier, in one place: `VerifyOptions`, whose fields carry their
own description (`Option`: the name the API and the command line give the option, its
flag, help, the values it takes, whether it enters the results store's key). The
command line's shared options (cli/options.py) and the API's keyword checks are made
from these descriptions, so an option is defined once; `VerifyOptions` validates itself
when it is built (OptionError, exit 2), and `solver()` gives the one solving context of a
run (verifiers/solving.py: backend, threads, tolerances, the time policy).
"""

from __future__ import annotations

import enum
import math
import numbers
from dataclasses import field, fields
from typing import TYPE_CHECKING, Any

from dpverify.defaults import (
    DEFAULT_RESTARTS,
    DEFAULT_TIMEOUT,
    DEFAULT_TOL,
    DEFAULT_WITNESS_DIR,
    SELECTABLE,
    Backend,
    LpForm,
    Method,
)
from dpverify.policy import (
    ALL_INPUTS_PARTIES,
    BYTES_PER_NONZERO,
    COUNT_MAX_BYTES,
    DEFAULT_MAX_NONZEROS,
    DEFAULT_MAX_ORBIT_WORK,
    DENSE_BELOW_PARTIES,
    LARGEST_LIMIT,
)
from dpverify.records import record

if TYPE_CHECKING:
    from dpverify.verifiers.solving import LpEngine, Solver


def check_limit(source: str, estimate: int, options: VerifyOptions, size: str) -> int:
    """Refuse (SizeLimitError, exit 3) an LP estimated above `options.nonzero_limit`,
    before anything is built; `size` names the problem's size (e.g. "parties = 12")."""
    from dpverify.errors import SizeLimitError

    if estimate > options.nonzero_limit:
        raise SizeLimitError(
            f"{source}: too large: the LP would have about {estimate:.3g} non-zeros "
            f"(~{show_bytes(estimate * BYTES_PER_NONZERO)}) with {size}; "
            f"the limit is {options.nonzero_limit:,} non-zeros (raise it with --max-nonzeros)"
        )
    return estimate


def show_bytes(n: float) -> str:
    """A number of bytes, for a message (`1,024 MiB`)."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024:
            return f"{n:,.0f} {unit}"
        n /= 1024
    return f"{n:,.0f} TiB"


# -- the description of an option ------------------------------------------------------------
class Key(enum.Enum):
    """Whether an option enters the results store's key (a result depends on it)."""

    ALWAYS = "always"
    UNLESS_DEFAULT = "unless-default"  # added later: absent at its default, so that the
    # keys of results stored before it existed stay the same
    NEVER = "never"  # threads, time limits: they change how long, not what


class Values(enum.Enum):
    """What values an option takes (its check, and its click type)."""

    NUMBER = "number"  # a finite float >= `low`
    COUNT = "count"  # an integer >= `low`
    FLAG = "flag"  # True or False
    CHOICE = "choice"  # one of `choices`
    PATH = "path"  # a directory path (a string)


@record
class Option:
    """One option as the API and the command line know it: `name` (the API's keyword and
    click's parameter name: `lp_form`), `flag` (`--lp-form`; None: the API's only), its
    help text, its values and their lower end, whether `--help` shows its default, and
    whether it enters the store's key."""

    name: str
    flag: str | None
    help: str
    values: Values
    key: Key = Key.ALWAYS
    low: float = 0
    high: int | None = None  # a whole number's upper end (the size limits), None: none
    choices: tuple[str, ...] = ()
    optional: bool = False  # None allowed (no limit, the solver's own choice)
    show_default: bool = True
    cli_default: Any = None  # the command line's default when it differs (witness_dir)
    key_unset: Any = None  # its value in the store's key when unset (None): the default
    # it had before it could be unset, so that the keys of results stored then stay the
    # same (a store serves only results, never refusals, which are retried)


def _meta(option: Option) -> dict[str, Option]:
    return {"option": option}


TOL_HELP = ("Verdict tolerance, relative to the range of the agent's gains (of the loss, "
            "for count problems): `optimal` when the bound and the value differ by at most "
            "tol x (max gain - min gain).")
MAX_NONZEROS_HELP = (
    "Refuse LPs estimated to have more non-zeros (exit 3), for every kind of problem. Unset, "
    f"an LP of parties is refused above {DEFAULT_MAX_NONZEROS:,}, and a count problem above "
    f"{COUNT_MAX_BYTES >> 30} GiB of estimated memory (or past --timeout by its estimated "
    "time) instead.")
METHOD_HELP = ("How to verify: the full corner LP (lp), the symmetry-reduced exact orbit "
               "method (orbit), the exact certificate on all inputs (proof), or auto: the "
               "exact routes first (proof, then orbit; orbit first for a symmetric problem "
               f"beyond {ALL_INPUTS_PARTIES} parties), then lp, each where it fits; the next "
               "one when a method does not decide.")


@record
class VerifyOptions:
    """The options of a run (module docstring). Strings are accepted for the enums
    (`method="lp"`); a bad value raises OptionError when the options are built."""

    tol: float = field(default=DEFAULT_TOL, metadata=_meta(Option(
        "tol", "--tol", TOL_HELP, Values.NUMBER)))
    backend: Backend = field(default=Backend.HIGHS, metadata=_meta(Option(
        "backend", "--backend", "LP backend (cvxpy solves the same LP through cvxpy, as a "
        "cross-check).", Values.CHOICE, choices=tuple(b.value for b in Backend))))
    form: LpForm = field(default=LpForm.AUTO, metadata=_meta(Option(
        "lp_form", "--lp-form", "How the corner points enter the LP (the same LP every way): "
        f"dense, chain, or auto: dense below {DENSE_BELOW_PARTIES} parties when it fits "
        "--max-nonzeros, else chain.", Values.CHOICE, choices=tuple(f.value for f in LpForm))))
    # None (the default): each kind's own guard (MAX_NONZEROS_HELP; `nonzero_limit`)
    max_nonzeros: int | None = field(default=None, metadata=_meta(Option(
        "max_nonzeros", "--max-nonzeros", MAX_NONZEROS_HELP, Values.COUNT, low=1,
        high=LARGEST_LIMIT, optional=True, show_default=False, key_unset=DEFAULT_MAX_NONZEROS)))
    threads: int | None = field(default=None, metadata=_meta(Option(
        "threads", None, "HiGHS threads (None: the solver's choice).", Values.COUNT,
        key=Key.NEVER, low=1, optional=True)))
    time_limit: float | None = field(default=None, metadata=_meta(Option(
        "time_limit", None, "Seconds per LP solve (None: the time policy of "
        "verifiers/solving.py).", Values.NUMBER, key=Key.NEVER, optional=True)))
    grid: int = field(default=0, metadata=_meta(Option(
        "grid", "--grid", "Add the rank-one points on an m-point grid of each party's "
        "segment (m >= 2; 0: off).", Values.COUNT, high=LARGEST_LIMIT, show_default=False)))
    samples: int = field(default=0, metadata=_meta(Option(
        "samples", "--samples", "Add N random rank-one DP points.", Values.COUNT,
        high=LARGEST_LIMIT, show_default=False)))
    seed: int = field(default=0, metadata=_meta(Option(
        "seed", "--seed", "Seed for --samples, and for the random starts of the protocol "
        "search (--restarts) on inputs with more than two symbols or with delta > 0.",
        Values.COUNT)))
    certify: bool = field(default=False, metadata=_meta(Option(
        "certify", "--certify", "Also build and check exact certificates (multi-party "
        "problems).", Values.FLAG, show_default=False)))
    method: Method = field(default=Method.AUTO, metadata=_meta(Option(
        "method", "--method", METHOD_HELP, Values.CHOICE,
        choices=tuple(m.value for m in SELECTABLE))))
    max_orbit_work: int = field(default=DEFAULT_MAX_ORBIT_WORK, metadata=_meta(Option(
        "max_orbit_work", "--max-orbit-work", "Refuse orbit problems needing more exact "
        "work (about orbits x parties x outputs integer operations).", Values.COUNT, low=1,
        high=LARGEST_LIMIT)))
    # inputs with more than two symbols (docs/theory.md, section 6) and delta > 0: random
    # starts of the protocol search (seeded by `seed`), and where witness protocol files
    # are written ("": .dpverify/witnesses)
    restarts: int = field(default=DEFAULT_RESTARTS, metadata=_meta(Option(
        "restarts", "--restarts", "Alphabets > 2 and delta > 0: random starts of the search "
        "for protocols that beat randomized response (besides RR itself, binary mechanisms "
        "and the LP's support).", Values.COUNT, high=LARGEST_LIMIT, key=Key.UNLESS_DEFAULT)))
    witness_dir: str = field(default="", metadata=_meta(Option(
        "witness_dir", "--witness-dir", "Alphabets > 2 and delta > 0: where the protocol "
        "files of witnesses that beat RR are written "
        f"(default {DEFAULT_WITNESS_DIR}).", Values.PATH, key=Key.UNLESS_DEFAULT,
        show_default=False)))
    # multi-party problems on bits: verify by the exact route and by the corner LP, and
    # report whether they agree (a disagreement is verdict `error`)
    cross_check: bool = field(default=False, metadata=_meta(Option(
        "cross_check", "--cross-check", "Parties with bits: verify by the exact proof and "
        "by the corner LP, and report whether they agree (a disagreement is verdict error, "
        "exit 3).", Values.FLAG, key=Key.UNLESS_DEFAULT, show_default=False)))
    # Not an option: the LP backend as a function, in place of the one `backend` names
    # (tests inject a fake solver here; verifiers/solving.py, LpEngine). Never stored.
    solve_with: LpEngine | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        from dpverify.errors import OptionError

        for f in fields(self):
            described = f.metadata.get("option")
            if described is None:
                continue
            value = getattr(self, f.name)
            problem = value_problem(described, value)
            if problem is not None:
                raise OptionError(f"{described.name} = {value!r}: {problem}")
            if described.values is Values.CHOICE:  # the enum member of its string
                object.__setattr__(self, f.name, _ENUMS[f.name](value))

    def key(self) -> dict:
        """The options that change a result (for the results store), as plain strings and
        numbers (`Key` of each field)."""
        out = {}
        for f in fields(self):
            described = f.metadata.get("option")
            if described is None or described.key is Key.NEVER:
                continue
            value = getattr(self, f.name)
            if described.key is Key.UNLESS_DEFAULT and value == f.default:
                continue
            if value is None and described.key_unset is not None:
                value = described.key_unset
            out[f.name] = value.value if isinstance(value, enum.Enum) else value
        return out

    @property
    def nonzero_limit(self) -> int:
        """The non-zeros an LP of parties may have: --max-nonzeros, or unset
        policy.DEFAULT_MAX_NONZEROS (count problems have their own guard when it is unset:
        verifiers/count/verifier.py, `check_size`)."""
        return DEFAULT_MAX_NONZEROS if self.max_nonzeros is None else self.max_nonzeros

    def solver(self) -> Solver:
        """The run's one solving context (verifiers/solving.py): the backend, threads,
        the time policy and the run's deadline; `solver(lp)` solves an LP."""
        from dpverify.verifiers.solving import Solver

        return Solver(self.backend, self.threads, self.time_limit, self.solve_with)

    def to_dict(self) -> dict[str, Any]:
        """Every option by its API name (plain values)."""
        out = {}
        for f in fields(self):
            described = f.metadata.get("option")
            if described is not None:
                value = getattr(self, f.name)
                out[described.name] = value.value if isinstance(value, enum.Enum) else value
        return out


_ENUMS: dict[str, type[enum.StrEnum]] = {"backend": Backend, "form": LpForm, "method": Method}


# The run's time limit (dpverify/clock.py): described as the options are, so that every
# command's --timeout is made from one description, but taken beside them (api.verify(...,
# timeout=...)), not a field: it bounds a run and never changes its result.
TIMEOUT = Option("timeout", "--timeout", "Seconds per problem file; a problem still running "
                 "then has verdict `error`, reason `timeout` (exit status 3).", Values.NUMBER,
                 key=Key.NEVER, optional=True)
RUN_LIMITS: dict[str, tuple[Option, Any]] = {"timeout": (TIMEOUT, DEFAULT_TIMEOUT)}


def described_options() -> dict[str, tuple[Option, Any]]:
    """Every option by its API name: its description and its default (the command line's
    shared options and the API's keyword types are made from these)."""
    out = {}
    for f in fields(VerifyOptions):
        described = f.metadata.get("option")
        if described is not None:
            default = f.default.value if isinstance(f.default, enum.Enum) else f.default
            out[described.name] = (described, default)
    return out


FIELD_OF = {described.name: f.name for f in fields(VerifyOptions)
            if (described := f.metadata.get("option")) is not None}


def lp_form(options: VerifyOptions, default: LpForm = LpForm.CHAIN) -> LpForm:
    """The LP form to build: the one `--lp-form` names, or `default` for `auto` (the
    verifiers whose size does not choose it: count problems, more than two symbols, the
    audit's bounds; the multi-party corner LP chooses by size, corner_lp.lp_form)."""
    return default if options.form == LpForm.AUTO else LpForm(options.form)


# -- checking values -------------------------------------------------------------------------
def _number_problem(value: object, low: float, integer: bool,
                    high: int | None = None) -> str | None:
    if integer:  # compared as integers: a whole number beyond floats is no overflow
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) \
                or int(value) < low or (high is not None and int(value) > high):
            return f"must be an integer >= {int(low)}" + (
                f" and <= {high:.0e}" if high is not None else "")
        return None
    try:
        finite = isinstance(value, numbers.Real) and not isinstance(value, bool) \
            and math.isfinite(float(value)) and float(value) >= low
    except OverflowError:  # an integer too large for a float
        finite = False
    return None if finite else f"must be a finite number >= {low:g}"


def value_problem(option: Option, value: object) -> str | None:
    """Why `value` is not valid for `option` (None when it is)."""
    if value is None and option.optional:
        return None
    if option.values is Values.NUMBER:
        return _number_problem(value, option.low, integer=False)
    if option.values is Values.COUNT:
        if option.name == "grid" and value == 1:
            return "must be 0 (off) or at least 2"
        return _number_problem(value, option.low, integer=True, high=option.high)
    if option.values is Values.PATH:
        return None if isinstance(value, str) else "must be a directory path (a string)"
    choices: tuple[object, ...] = (True, False) if option.values is Values.FLAG \
        else option.choices
    if value not in choices or isinstance(value, bool) != (option.values is Values.FLAG):
        return "allowed: " + ", ".join(map(str, choices))
    return None


def option_problem(name: str, value: object) -> str | None:
    """Why `value` is not valid for the option `name` (an API name; None when it is): the
    one check of an option's value, for the API and the command line's callbacks alike."""
    described = {**described_options(), **RUN_LIMITS}.get(name)
    if described is None:
        return None
    return value_problem(described[0], value)


def make_options(**options: object) -> VerifyOptions:
    """VerifyOptions from the options' API names (`tol`, `backend`, `max_nonzeros`,
    `lp_form`, `method`, ...: `described_options`); OptionError (exit 2) names an unknown
    option or a bad value."""
    from dpverify.errors import OptionError

    chosen: dict[str, object] = {}
    for name, value in options.items():
        field_name = FIELD_OF.get(name, name if name in FIELD_OF.values() else None)
        if field_name is None:
            raise OptionError(f"unknown option {name!r}; options: {', '.join(FIELD_OF)}")
        chosen[field_name] = value
    return VerifyOptions(**chosen)  # type: ignore[arg-type]

