"""One progress line for the commands that work on one problem at a time (`verify`,
`audit`, `certify`): a spinner, the seconds since the file started, the stage the
verifiers last reported (`observer worst, method proof`: dpverify.verifiers.progress) and
what is being done (`verifying problems/xor-2.toml`), redrawn while it runs. Only on a
terminal and never with --json or --quiet: `Activity(enabled=False)` does nothing, so a
pipe, a file or click's CliRunner gets no extra byte. It is transient: taken down before
the results are printed (`stop`, or leaving the `with` block). Batches show their own bar
(console/batch.py), since their stages happen in worker processes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Self

if TYPE_CHECKING:  # rich is imported when a line is drawn (never for JSON output)
    from rich.console import Console
    from rich.status import Status
    from rich.text import Text


class _Line:
    """The line under the spinner, rendered afresh on every refresh (so the seconds run)."""

    def __init__(self) -> None:
        self.what = ""
        self.stage = ""
        self.since = time.monotonic()

    def __rich__(self) -> Text:
        from rich.text import Text

        # the seconds first and the stage before the file: a narrow terminal cuts the path
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"{time.monotonic() - self.since:3.0f} s", style="dim")
        if self.stage:
            line.append(f"  {self.stage}", style="cyan")
            line.append(f"  ({self.what})")
        else:
            line.append(f"  {self.what}")
        return line


class Activity:
    """A spinner with what is being done, the current stage and the elapsed time, on
    `console` when `enabled` (the caller decides: a terminal, not --json, not --quiet).
    `start(what)` at each file, `stage(s)` at each stage, `stop()` (or the `with` block's
    end) to take it down; `print` writes a line above it."""

    def __init__(self, console: Console, *, enabled: bool) -> None:
        self.console = console
        self.enabled = enabled
        self._line = _Line()
        self._status: Status | None = None

    @property
    def running(self) -> bool:
        return self._status is not None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, what: str) -> None:
        """A new file (or task): its description, no stage yet, the clock from zero."""
        if not self.enabled:
            return
        self._line.what, self._line.stage = what, ""
        self._line.since = time.monotonic()
        if self._status is None:
            self._status = self.console.status(self._line)
            self._status.start()

    def stage(self, stage: Any) -> None:
        """A stage the verifiers reported (a Stage; anything with `describe()`)."""
        if self.enabled and self._status is not None:
            self._line.stage = stage.describe()

    def stop(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def text(self) -> str:
        """The line as it is drawn now (for tests and logs)."""
        return self._line.__rich__().plain
