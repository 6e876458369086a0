"""Where each key of a TOML document is written: `key_lines(text)` maps every key path
(`("expect", "observer", "average")`) and every table header (`("expect", "observer")`)
to the 1-based line on which it stands.

`check` uses it to point a mismatch at the line of its expectation (the `line` of
`--json`, the GitHub annotations of `--format github`, the table's `at` column). Python's
TOML parsers keep no positions, so this is a small scanner of TOML's structure: table
headers, dotted and quoted keys, and values skipped whole (strings of the four kinds,
arrays and inline tables across lines, comments), the keys of inline tables included. It
reads text that the loader has already accepted; on anything it does not follow it stops
and returns what it found, so a line is a pointer for a person, never part of a verdict.
"""

from __future__ import annotations

import contextlib
import re

KeyPath = tuple[str, ...]
_BARE = re.compile(r"[A-Za-z0-9_-]+")
_SCALAR_END = re.compile(r"[,\]}\n#]")


class _Stop(Exception):
    """The scanner met something it does not follow: what was found so far stands."""


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.found: dict[KeyPath, int] = {}
        self._at, self._line = 0, 1  # the line at a position already passed

    # -- positions ------------------------------------------------------------------------
    @property
    def line(self) -> int:
        """The line at the position (counted on from the last one asked: the scanner only
        moves forward, so the whole document is counted once)."""
        self._line += self.text.count("\n", self._at, self.i)
        self._at = self.i
        return self._line

    def peek(self, n: int = 1) -> str:
        return self.text[self.i:self.i + n]

    def skip_blank(self, *, newlines: bool) -> None:
        """Spaces and tabs (and newlines and comments when `newlines`)."""
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif newlines and c == "#":
                end = text.find("\n", self.i)
                self.i = len(text) if end < 0 else end
            else:
                return

    def record(self, path: KeyPath, line: int) -> None:
        self.found.setdefault(path, line)

    # -- keys -----------------------------------------------------------------------------
    def key(self) -> KeyPath:
        parts = [self.simple_key()]
        while True:
            self.skip_blank(newlines=False)
            if self.peek() != ".":
                return tuple(parts)
            self.i += 1
            self.skip_blank(newlines=False)
            parts.append(self.simple_key())

    def simple_key(self) -> str:
        c = self.peek()
        if c == '"':
            return self.basic_string()
        if c == "'":
            return self.literal_string()
        match = _BARE.match(self.text, self.i)
        if match is None:
            raise _Stop
        self.i = match.end()
        return match.group()

    # -- values ---------------------------------------------------------------------------
    def basic_string(self) -> str:
        """A one-line "..." string (escapes kept as written: keys rarely have them)."""
        start = self.i + 1
        j = start
        while j < len(self.text):
            c = self.text[j]
            if c == "\\":
                j += 2
                continue
            if c == '"':
                self.i = j + 1
                return self.text[start:j]
            if c == "\n":
                break
            j += 1
        raise _Stop

    def literal_string(self) -> str:
        end = self.text.find("'", self.i + 1)
        if end < 0 or "\n" in self.text[self.i:end]:
            raise _Stop
        value = self.text[self.i + 1:end]
        self.i = end + 1
        return value

    def multiline(self, quote: str) -> None:
        j = self.i + 3
        while True:
            end = self.text.find(quote * 3, j)
            if end < 0:
                raise _Stop
            escaped = quote == '"' and _escaped(self.text, end)
            if not escaped:
                self.i = end + 3
                while self.peek() == quote:  # up to two quotes may end the content
                    self.i += 1
                return
            j = end + 1

    def value(self, prefix: KeyPath | None) -> None:
        """Skip one value; the keys of an inline table are recorded below `prefix` (None:
        inside an array, where keys have no path of their own)."""
        self.skip_blank(newlines=False)
        if self.peek(3) in ('"""', "'''"):
            self.multiline(self.peek())
        elif self.peek() == '"':
            self.basic_string()
        elif self.peek() == "'":
            self.literal_string()
        elif self.peek() == "[":
            self.array()
        elif self.peek() == "{":
            self.inline_table(prefix)
        else:
            match = _SCALAR_END.search(self.text, self.i)
            end = len(self.text) if match is None else match.start()
            if end == self.i:
                raise _Stop
            self.i = end

    def array(self) -> None:
        self.i += 1
        while True:
            self.skip_blank(newlines=True)
            if self.peek() == "]":
                self.i += 1
                return
            if not self.peek():
                raise _Stop
            self.value(None)
            self.skip_blank(newlines=True)
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "]":
                raise _Stop

    def inline_table(self, prefix: KeyPath | None) -> None:
        self.i += 1
        while True:
            self.skip_blank(newlines=False)
            if self.peek() == "}":
                self.i += 1
                return
            line = self.line
            key = self.key()
            path = None if prefix is None else prefix + key
            if path is not None:
                self.record(path, line)
            self.skip_blank(newlines=False)
            if self.peek() != "=":
                raise _Stop
            self.i += 1
            self.value(path)
            self.skip_blank(newlines=False)
            if self.peek() == ",":
                self.i += 1
            elif self.peek() != "}":
                raise _Stop

    # -- the document ---------------------------------------------------------------------
    def document(self) -> None:
        table: KeyPath = ()
        while True:
            self.skip_blank(newlines=True)
            if self.i >= len(self.text):
                return
            line = self.line
            if self.peek() == "[":
                array = self.peek(2) == "[["
                self.i += 2 if array else 1
                self.skip_blank(newlines=False)
                table = self.key()
                self.skip_blank(newlines=False)
                if self.peek(2 if array else 1) != ("]]" if array else "]"):
                    raise _Stop
                self.i += 2 if array else 1
                self.record(table, line)
                continue
            path = table + self.key()
            self.record(path, line)
            self.skip_blank(newlines=False)
            if self.peek() != "=":
                raise _Stop
            self.i += 1
            self.value(path)


def _escaped(text: str, at: int) -> bool:
    """Whether the character at `at` is escaped by an odd number of backslashes."""
    count = 0
    j = at - 1
    while j >= 0 and text[j] == "\\":
        count += 1
        j -= 1
    return count % 2 == 1


def key_lines(text: str) -> dict[KeyPath, int]:
    """The 1-based line of every key path and table header of the TOML `text` (the first
    time each is written); what comes after anything the scanner does not follow is
    left out."""
    scanner = _Scanner(text)
    with contextlib.suppress(_Stop, IndexError):  # what was found before it stands
        scanner.document()
    return scanner.found


def expectation_line(lines: dict[KeyPath, int], agent: str, accuracy: str,
                     *, verdict: bool = False) -> int | None:
    """The line of an `[expect]` entry: of its `verdict` key when `verdict` (falling back
    to the value), of the value `accuracy`, else of its table (`[expect.party.1]`), else
    of `[expect]`; None when the file has none of these."""
    table = ("expect", *agent.split(":"))
    keys = [(*table, "verdict")] if verdict else []
    keys += [(*table, accuracy), table, ("expect",)]
    for key in keys:
        if key in lines:
            return lines[key]
    return None
