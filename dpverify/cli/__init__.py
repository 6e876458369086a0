"""The `dpverify` command line. Click lives only in this package; each command is a module.

Library exceptions become one line on stderr and spec.md's exit status here, at the edge:
never a traceback.
"""

from __future__ import annotations

import functools
import os
import sys

import click

from dpverify import __version__
from dpverify.errors import DpverifyError


def handle_errors(fn):
    """Turn a DpverifyError into one line on stderr and its exit status."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except DpverifyError as exc:
            click.echo(f"dpverify: {exc}", err=True)
            sys.exit(exc.exit_code)
        except MemoryError:
            click.echo("dpverify: out of memory (try a smaller problem)", err=True)
            sys.exit(3)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click reports these itself (a bad command line is exit 2)
        except Exception as exc:  # a bug: exit 3 (could not decide), never a pass
            if os.environ.get("DPVERIFY_DEBUG"):
                raise
            click.echo(f"dpverify: internal error: {type(exc).__name__}: {exc} "
                       "(set DPVERIFY_DEBUG=1 for the traceback)", err=True)
            sys.exit(3)

    return wrapper


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="dpverify")
def main() -> None:
    """Verify optimality theorems in differential privacy.

    Randomized response is optimal for multi-party computation on bits (Kairouz, Oh,
    Viswanath 2015); the geometric mechanism is universally optimal for count queries
    (Gupte, Sundararajan 2010). Exit status: 0 all optimal, 1 a gap or a mismatch,
    2 bad input, 3 could not decide.
    """


def _register() -> None:
    from dpverify.cli import verify as _verify  # noqa: F401  (commands register themselves)

    for name in ("certify", "batch", "count"):
        try:
            __import__(f"dpverify.cli.{name}")
        except ModuleNotFoundError as exc:  # a command module not present in this build
            if exc.name != f"dpverify.cli.{name}":
                raise


_register()
