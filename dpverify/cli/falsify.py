"""`dpverify falsify PROBLEM`: search for protocols that beat the bound."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import click

from dpverify.cli import handle_errors, main
from dpverify.cli.options import NO_COLOR, QUIET, TOL, add_options, json_option, verify_options


@main.command(short_help="Search for protocols that beat the bound (random, hill climbing).")
@click.argument("problem", type=click.Path(exists=True, dir_okay=False))
@click.option("--protocols", type=click.IntRange(min=0), default=200, show_default=True,
              help="Random protocols to draw.")
@click.option("--rounds", type=click.IntRange(min=1), default=4, show_default=True,
              help="Each random protocol has 1..R rounds.")
@click.option("--messages", type=click.IntRange(min=2), default=2, show_default=True,
              help="Messages per round.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the search.")
@click.option("--climb", type=click.IntRange(min=0), default=100, show_default=True,
              help="Hill-climbing steps from RR and from the best random protocol, per "
                   "agent and accuracy.")
@click.option("--save-best", type=click.Path(dir_okay=False), default=None,
              help="Write the best protocol found as a protocol file (with several agents "
                   "or accuracies: FILE-<agent>-<accuracy>.toml).")
@click.option("--counterexamples", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Directory for counterexample protocol files.")
@add_options([TOL])
@json_option("Print one JSON array (one object per agent and accuracy), nothing else.")
@add_options([QUIET, NO_COLOR])
@handle_errors
def falsify(problem, protocols, rounds, messages, seed, climb, save_best, counterexamples,
            tol, as_json, quiet, no_color):
    """Search for protocols that beat the relaxed bound of PROBLEM (a multi-party problem,
    or a protocol file for its claimed levels and agents).

    Random interactive protocols that meet the problem's levels (random adaptive kernels,
    each party's budget split over the rounds it speaks in), improved by hill climbing
    inside the DP set and seeded with RR too. Each protocol's value is what its optimal
    decision rule achieves on its transcripts, independently of the LP. A protocol above
    the bound by more than --tol is a counterexample to KOV Theorem 3.1: it is written
    as a protocol file.

    Exit status: 0 no counterexample; 1 a counterexample; 2 bad input; 3 the bound could
    not be decided.
    """
    from dpverify.console import make_console, print_json
    from dpverify.console.falsify import SearchProgress, print_campaign
    from dpverify.errors import InputError
    from dpverify.research.falsify import SearchOptions
    from dpverify.research.falsify import falsify as run
    from dpverify.spec import CountSpec, ProtocolSpec, load
    from dpverify.spec.reader import read_text
    from dpverify.status import exit_status

    spec = load(problem)
    if isinstance(spec, CountSpec):
        raise InputError(f"{problem}: a count problem: falsify takes a multi-party problem "
                         "(or a protocol file)")
    if isinstance(spec, ProtocolSpec):
        spec = spec.claimed()
    document = tomllib.loads(read_text(problem).removeprefix("\ufeff"))
    directory = Path(counterexamples)
    directory.mkdir(parents=True, exist_ok=True)
    out = make_console(no_color=no_color)
    err = make_console(stderr=True, no_color=no_color)
    options = verify_options(tol=tol)
    with SearchProgress(err, enabled=not (as_json or quiet)) as progress:
        campaign = run(spec, document, SearchOptions(protocols, rounds, messages, seed, climb),
                       options, counterexample_dir=directory,
                       save_best=Path(save_best) if save_best else None,
                       on_progress=progress.update)
    if as_json:
        print_json([r.to_json() for r in campaign.results])
    elif quiet:
        found = campaign.counterexamples
        out.print(f"{len(found)} counterexample(s)" if found else "no counterexample")
    else:
        print_campaign(out, campaign)
    sys.exit(exit_status(failed=len(campaign.counterexamples), undecided=campaign.undecided))
