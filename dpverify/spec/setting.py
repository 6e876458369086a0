"""The setting of a problem: which theorem's question it asks, computed once on the spec
(issue 24: "settings as types").

A multi-party problem (and a protocol, by the levels it claims) is on bits with pure
epsilon-DP (KOV Theorem 3.1), on more than two symbols (research mode, docs/theory.md
section 6), with some delta > 0 (approximate privacy, section 7), or both of the last two
(refused: the envelope bound is built for bits). A count problem (and a mechanism file)
is pure alpha-DP (GS Theorem 1) or has delta > 0. The verifier, the certificate `certify`
writes and the view of a result are chosen by tables keyed by (kind, setting)
(verifiers/dispatch.py, console/views.py); nothing outside spec/ branches on the flags a
setting is made from.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

__all__ = ["SETTINGS", "Setting", "count_setting", "keys", "multiparty_setting",
           "result_setting"]


class Setting(enum.StrEnum):
    BITS = "bits"  # every party holds a bit, pure epsilon-DP (KOV Theorem 3.1)
    SYMBOLS = "symbols"  # some party holds more than two symbols, pure epsilon-DP
    DELTA = "delta"  # some delta > 0 (parties holding bits; a count with delta > 0)
    DELTA_SYMBOLS = "delta-symbols"  # delta > 0 and more than two symbols: refused
    PURE = "pure"  # a count query (or mechanism) under pure alpha-DP (GS Theorem 1)


# The settings each kind of file can be in (the keys of every dispatch table). A
# mechanism file (`derive`, or `audit` with a [consumer]) is kind `mechanism` in results.
SETTINGS: dict[str, tuple[Setting, ...]] = {
    "multiparty": (Setting.BITS, Setting.SYMBOLS, Setting.DELTA, Setting.DELTA_SYMBOLS),
    "protocol": (Setting.BITS, Setting.SYMBOLS, Setting.DELTA, Setting.DELTA_SYMBOLS),
    "count": (Setting.PURE, Setting.DELTA),
    "mechanism": (Setting.PURE, Setting.DELTA),
}


def keys(*kinds: str) -> list[tuple[str, Setting]]:
    """Every (kind, setting) of the kinds given (all kinds when none), in order."""
    return [(kind, setting) for kind in (kinds or tuple(SETTINGS))
            for setting in SETTINGS[kind]]


def multiparty_setting(binary: bool, approximate: bool) -> Setting:
    """The setting of a multi-party problem or protocol."""
    if approximate:
        return Setting.DELTA if binary else Setting.DELTA_SYMBOLS
    return Setting.BITS if binary else Setting.SYMBOLS


def count_setting(approximate: bool) -> Setting:
    """The setting of a count problem or mechanism."""
    return Setting.DELTA if approximate else Setting.PURE


def result_setting(kind: str, header: Mapping[str, Any]) -> Setting | None:
    """The setting of a result read back from its JSON (docs/format.md: a `delta` field
    in the header with delta > 0, `alphabets` with more than two symbols); None for a kind
    without settings (an invalid file)."""
    if kind not in SETTINGS:
        return None
    delta = header.get("delta")
    deltas = delta if isinstance(delta, list) else [delta] if delta is not None else []
    approximate = any(str(d) not in ("0", "0.0", "0/1") for d in deltas)
    if kind in ("count", "mechanism"):
        return count_setting(approximate)
    alphabets = header.get("alphabets") or ()
    return multiparty_setting(all(m == 2 for m in alphabets), approximate)


def multiparty_header(spec: Any) -> dict[str, object]:
    """The fields a result object of a multi-party problem carries before its results
    (docs/format.md): parties and lambdas; the alphabets with more than two symbols; the
    deltas (exact strings) with some delta > 0."""
    from dpverify.spec.numbers import rational_text

    out: dict[str, object] = {"parties": spec.parties, "lambdas": list(spec.lambdas)}
    if not spec.binary:
        out["alphabets"] = list(spec.alphabets)
    if spec.approximate:
        out["delta"] = [rational_text(d) for d in spec.deltas]
    return out
