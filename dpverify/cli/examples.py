"""`dpverify examples DIR`: write the problem files that ship with dpverify into DIR."""

from __future__ import annotations

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main


@main.command(short_help="Write the shipped example problems into a folder.")
@click.argument("folder", metavar="DIR", type=click.Path(file_okay=False))
@handle_errors
def examples(folder):
    """Write the problem files that ship with dpverify into DIR: DIR/problems/ (the
    theorems' instances, the counterexamples, protocols to audit, research instances)
    and DIR/examples/ (mechanism files). Every example of the README and of docs/ runs
    from DIR, with dpverify installed from a wheel as from the checkout. Nothing is
    overwritten: a file already there with other content is exit 2, nothing written.
    """
    done = api.examples(folder)
    there = f", {len(done.unchanged)} already there" if done.unchanged else ""
    click.echo(f"wrote {len(done.written)} files into {folder}{there} (problems/, "
               f"examples/); try: cd {folder} && dpverify verify problems/and-3.toml")
