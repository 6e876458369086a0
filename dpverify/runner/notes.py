"""Notes on a run: an option that was given but does not apply to some of the files (and
so did nothing there), a file skipped. The library makes them, on the report, from the
files' kinds and settings (spec/setting.py); a caller (the command line) prints them.

Which options apply where is a table keyed by (kind, setting), so that no caller branches
on a setting: `NOT_FOR` names, for each (kind, setting), the group of options that do not
apply there (delta > 0: the corner LP's options; count problems: those of multi-party
problems), and `SEEDED` where `--seed` seeds something without `--samples`.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence

from dpverify.defaults import Method
from dpverify.records import record
from dpverify.spec.setting import Setting, keys

__all__ = ["Note", "NoteCode", "certify_notes", "option_notes"]


class NoteCode(enum.StrEnum):
    """What a note is about (the text says it in words)."""

    NOT_APPLICABLE = "not-applicable"  # an option given that does nothing for some files
    SEED_UNUSED = "seed-unused"  # --seed without --samples where nothing else uses it
    SKIPPED = "skipped"  # a file found in a directory that the command does not take
    METHOD_MAKES_NO_CERTIFICATE = "method-makes-no-certificate"  # certify --method lp


@record
class Note:
    """One note: its code and the line the command line prints after `dpverify: note: `."""

    code: NoteCode
    text: str

    def __str__(self) -> str:
        return self.text


@record
class Group:
    """Options that do not apply to the files of some settings, and how a note says so."""

    options: tuple[str, ...]  # API names, in the order the note names them
    each: bool  # one note per option (True) or one for all of them (False)
    why: str


DELTA_GROUP = Group(("method", "grid", "samples", "cross_check", "lp_form"), False,
                    "delta > 0 (the envelope bound and a protocol search)")
COUNT_GROUP = Group(("certify", "cross_check"), True,
                    "multi-party problems only")

# The group of options that do not apply to each (kind, setting) (None: every option
# applies); tests/test_codebase.py checks that it covers every key.
NOT_FOR: dict[tuple[str, Setting], Group | None] = {
    **{key: None for key in keys("multiparty", "protocol")},
    ("multiparty", Setting.DELTA): DELTA_GROUP,
    ("multiparty", Setting.DELTA_SYMBOLS): DELTA_GROUP,
    ("protocol", Setting.DELTA): DELTA_GROUP,
    ("protocol", Setting.DELTA_SYMBOLS): DELTA_GROUP,
    ("count", Setting.PURE): COUNT_GROUP,
    ("count", Setting.DELTA): COUNT_GROUP,
    ("mechanism", Setting.PURE): None,
    ("mechanism", Setting.DELTA): None,
}
# Where --seed seeds something without --samples (a protocol search).
SEEDED: dict[tuple[str, Setting], bool] = {
    **{key: False for key in keys()},
    ("multiparty", Setting.SYMBOLS): True,
    ("multiparty", Setting.DELTA): True,
    ("multiparty", Setting.DELTA_SYMBOLS): True,
    ("protocol", Setting.DELTA): True,
    ("protocol", Setting.DELTA_SYMBOLS): True,
}


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def given_flags(given: Mapping[str, object], names: Iterable[str]) -> list[str]:
    """The options of `names` that were given (booleans: given as true), as flags."""
    return [flag(n) for n in names if n in given
            and not (isinstance(given[n], bool) and not given[n])]


def option_notes(files: Sequence[tuple[str, tuple[str, Setting] | None]],
                 given: Mapping[str, object],
                 skipped: Sequence[tuple[str, str]] = ()) -> list[Note]:
    """The notes of options in `given` (by API name, with their values) that do not apply
    to some of `files` ((source, (kind, setting)), None for a file that did not load), and
    of the files `skipped` ((source, why)), in the order the command line prints them."""
    notes = []
    loaded = [(source, key) for source, key in files if key is not None]
    samples = given.get("samples", 0)
    if "seed" in given and not samples and not any(SEEDED[key] for _, key in loaded):
        notes.append(Note(NoteCode.SEED_UNUSED, "--seed has no effect without --samples"))
    for group in (DELTA_GROUP, COUNT_GROUP):
        if group is COUNT_GROUP:
            notes += [Note(NoteCode.SKIPPED, f"skipped {source}: {why}")
                      for source, why in skipped]
        sources = [source for source, key in loaded if NOT_FOR[key] is group]
        flags = given_flags(given, group.options)
        if not sources or not flags:
            continue
        if group.each:
            plural = "s" if len(sources) != 1 else ""
            notes += [Note(NoteCode.NOT_APPLICABLE,
                           f"{f} applies to {group.why}, not to the count problem{plural} "
                           f"{', '.join(sources)}") for f in flags]
        else:
            verb = "does" if len(flags) == 1 else "do"
            notes.append(Note(NoteCode.NOT_APPLICABLE, f"{', '.join(flags)} {verb} not apply "
                              f"to {group.why}: {', '.join(sources)}"))
    return notes


# The settings whose certificate `--method` does not choose (one certificate there).
ONE_CERTIFICATE: dict[tuple[str, Setting], bool] = {
    **{key: False for key in keys()},
    ("multiparty", Setting.DELTA): True,
}


def certify_notes(problems: Sequence[tuple[str, tuple[str, Setting]]],
                  given: Mapping[str, object]) -> list[Note]:
    """`certify`'s notes: `--method` given for problems with one certificate (delta > 0:
    the envelope bound's), and `--method lp`, which makes no certificate (the certificate
    routes are taken in the order of `auto`)."""
    notes: list[Note] = []
    if "method" not in given:
        return notes
    one = sorted({name for name, key in problems if ONE_CERTIFICATE[key]})
    if one:
        notes.append(Note(NoteCode.NOT_APPLICABLE, "--method does not apply to delta > 0 (one "
                          f"certificate: the envelope bound's): {', '.join(one)}"))
    if given["method"] == Method.LP:
        notes.append(Note(NoteCode.METHOD_MAKES_NO_CERTIFICATE,
                          "--method lp makes no certificate (the corner LP proves nothing "
                          "exactly): the certificate routes are taken in the order of auto"))
    return notes
