"""The `dpverify` command line: one module per command family, each a thin layer over
dpverify.api (parse the options, call the function of the command's name, print through
dpverify.console, exit). Click lives only in this package; the commands import nothing of
dpverify but the API, the console, `defaults`, `errors` and `status`.

A command's module is imported when the command is used (`cli/app.py` `COMMANDS`, click's
lazy loading of subcommands); `every_command()` imports them all.
"""

from dpverify.cli.app import every_command, handle_errors, main

__all__ = ["every_command", "handle_errors", "main"]
