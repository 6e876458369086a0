"""`dpverify new multiparty|count NAME`: write a commented problem file to start from."""

from __future__ import annotations

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.defaults import TEMPLATE_KINDS


@main.command(short_help="Write a commented problem file to start from.")
@click.argument("kind", type=click.Choice(TEMPLATE_KINDS))
@click.argument("name")
@handle_errors
def new(kind, name):
    """Write NAME.toml, a commented KIND problem file (multiparty or count) that verifies
    as it is: a starting point that explains every key. An existing file is never
    overwritten (exit 2).
    """
    path = api.new(kind, name)
    click.echo(f"wrote {path}; verify it with: dpverify verify {path}")
