"""The `dpverify` command line: one module per command family, each a thin layer over
dpverify.api (parse the options, call the function of the command's name, print through
dpverify.console, exit). Click lives only in this package; the commands import nothing of
dpverify but the API, the console, `defaults`, `errors` and `status`.

A command's module is imported when the command is used (`cli/app.py` `COMMANDS`, click's
lazy loading of subcommands); `every_command()` imports them all.
"""

import gc

# The collector's young generation: a command's start-up imports many long-lived objects
# (modules, classes, the methods that dataclasses generate), which the default threshold
# of 700 allocations has the collector traverse again and again before they are promoted.
# A run of the command line collects its young objects after this many allocations
# instead (measured in benchmarks/bench_startup.py: 5-9 ms of CPU of a small `verify`,
# about 6% of it; the older generations keep their thresholds).
YOUNG_THRESHOLD = 50_000
gc.set_threshold(YOUNG_THRESHOLD, *gc.get_threshold()[1:])

from dpverify.cli.app import every_command, handle_errors, main  # noqa: E402

__all__ = ["every_command", "handle_errors", "main"]
