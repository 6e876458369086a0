"""What `dpverify certify` and `dpverify check-cert` print: one line per certificate, a
summary, and the JSON objects (exact rationals as "p/q" strings)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from dpverify.console.numbers import rational, short_rational

STATUS_STYLE = {"proved-optimal": "green", "bracket": "green", "unproved": "bold red"}


def certificate_line(record: Any) -> Text:
    """`<status> <path>  <what it proves>`."""
    if record.status == "proved-optimal":
        detail = f"value {short_rational(record.value)}"
    elif record.status == "bracket":
        detail = (f"[{float(record.value):.17g}, {float(record.bound):.17g}] "
                  f"width {float(record.width):.3g}")
    else:
        detail = "; ".join(record.notes) or "the certificate does not check"
    line = Text(f"{record.status:<14}", style=STATUS_STYLE.get(record.status, ""))
    line.append(f" {record.path}  {detail}")
    return line


def certificate_json(record: Any) -> dict[str, Any]:
    """`certify --json`'s object for one certificate (the record's own `to_dict`)."""
    return dict(record.to_dict())


def certify_summary(report: Any) -> str:
    n = len(report.certificates)
    counts = {s: sum(c.status == s for c in report.certificates)
              for s in ("proved-optimal", "bracket", "unproved")}
    parts = [f"{counts['proved-optimal']} proved optimal", f"{counts['bracket']} bracketed",
             f"{counts['unproved']} unproved"]
    if report.errors:
        parts.append(f"{report.errors} could not be built")
    if report.invalid:
        parts.append(f"{report.invalid} invalid file{'s' if report.invalid != 1 else ''}")
    return f"{n} certificate{'s' if n != 1 else ''}: {', '.join(parts)}"


# What a skipped file is, singular and plural (verify.paths.SkippedFile.kind)
SKIPPED_NOUNS = {"count": ("count problem", "count problems"),
                 "protocol": ("protocol file", "protocol files"),
                 "mechanism": ("mechanism file", "mechanism files"),
                 "foreign": ("TOML file without a [problem] table",
                             "TOML files without a [problem] table")}


def skipped_line(skipped: Sequence[Any]) -> str:
    """One line for the files `certify` skipped: the file and what it is when there is
    one, else how many of each kind (`skipped 15 files: 10 count problems, 5 protocol
    files; certificates cover multi-party problems only`)."""
    tail = "certificates cover multi-party problems only"
    if len(skipped) == 1:
        one = SKIPPED_NOUNS.get(skipped[0].kind, (skipped[0].kind, ""))[0]
        return f"skipped {skipped[0].source} (a {one}): {tail}"
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s.kind] = counts.get(s.kind, 0) + 1
    parts = [f"{n} {SKIPPED_NOUNS.get(kind, (kind, kind))[n != 1]}"
             for kind, n in counts.items()]
    return f"skipped {len(skipped)} files ({', '.join(parts)}): {tail}"


def check_line(check: Any) -> Text:
    """`OK <path>: <message>` or `FAIL <path>: <message>`."""
    line = Text("OK" if check.ok else "FAIL", style="green" if check.ok else "bold red")
    line.append(f" {check.path}: {check.message}")
    return line


def check_json(check: Any) -> dict[str, Any]:
    return {"path": check.path, "ok": check.ok, "message": check.message,
            "value": None if check.value is None else rational(check.value),
            "bound": None if check.bound is None else rational(check.bound)}


def check_summary(checks: Sequence[Any]) -> str:
    ok = sum(c.ok for c in checks)
    bad = sum(c.malformed for c in checks)
    tail = f", {bad} not certificates" if bad else ""
    return (f"{len(checks)} certificate{'s' if len(checks) != 1 else ''}: {ok} OK, "
            f"{len(checks) - ok - bad} failed{tail}")
