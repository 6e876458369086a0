"""How many examples the larger property tests draw: every one with --runslow, a quarter
(at least 25) in the default run. `conftest.pytest_configure` sets `FULL` before any test
module is imported; the examples stay derandomized either way (conftest's profile)."""

FULL = False


def examples(n: int) -> int:
    return n if FULL else max(25, n // 4)
