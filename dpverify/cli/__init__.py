"""The `dpverify` command line: one module per command family, each a thin layer over
dpverify.api (parse the options, call the function of the command's name, print through
dpverify.console, exit). Click lives only in this package; the commands import nothing of
dpverify but the API, the console, `defaults`, `errors` and `status`.
"""

from dpverify.cli import (  # noqa: F401  (each command registers itself with `main`)
    audit,
    batch,
    certify,
    count,
    examples,
    falsify,
    new,
    survey,
    sweep,
    verify,
)
from dpverify.cli.app import handle_errors, main

__all__ = ["handle_errors", "main"]
