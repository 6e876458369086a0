"""`dpverify new multiparty|count NAME`: write a commented problem file to start from."""

from __future__ import annotations

import click

from dpverify.cli import handle_errors, main
from dpverify.spec.templates import KINDS


@main.command(short_help="Write a commented problem file to start from.")
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("name")
@handle_errors
def new(kind, name):
    """Write NAME.toml, a commented KIND problem file (multiparty or count) that verifies
    as it is: a starting point that explains every key. An existing file is never
    overwritten (exit 2).
    """
    from dpverify.spec.templates import write_template

    path = write_template(kind, name)
    click.echo(f"wrote {path}; verify it with: dpverify verify {path}")
