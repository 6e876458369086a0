"""`dpverify falsify PROBLEM`: search for protocols that beat the bound."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.options import (
    NO_COLOR,
    QUIET,
    TOL,
    Count,
    add_options,
    consoles,
    json_option,
    timeout_option,
)


@main.command(short_help="Search for protocols that beat the bound (random, hill climbing).")
@click.argument("problem", type=click.Path(exists=True, dir_okay=False))
@click.option("--protocols", type=Count(min=0), default=200, show_default=True,
              help="Random protocols to draw.")
@click.option("--rounds", type=Count(min=1, max=64), default=4, show_default=True,
              help="Each random protocol has 1..R rounds.")
@click.option("--messages", type=Count(min=2, max=4096), default=2,
              show_default=True,
              help="Messages per round.")
@click.option("--seed", type=Count(min=0), default=0, show_default=True,
              help="Seed of the search.")
@click.option("--climb", type=Count(min=0), default=100, show_default=True,
              help="Hill-climbing steps from RR and from the best random protocol, per "
                   "agent and accuracy.")
@click.option("--save-best", type=click.Path(dir_okay=False), default=None,
              help="Write the best protocol found as a protocol file (with several agents "
                   "or accuracies: FILE-<agent>-<accuracy>.toml).")
@click.option("--counterexamples", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Directory for counterexample protocol files.")
@add_options([TOL])
@timeout_option("Seconds for the search; a search still running then is undecided (exit "
                "status 3).")
@json_option("Print one JSON array (one object per agent and accuracy), nothing else.")
@add_options([QUIET, NO_COLOR])
@handle_errors
def falsify(problem, protocols, rounds, messages, seed, climb, save_best, counterexamples,
            tol, timeout, as_json, quiet, no_color):
    """Search for protocols that beat the relaxed bound of PROBLEM (a multi-party problem,
    or a protocol file for its claimed levels and agents).

    Random interactive protocols that meet the problem's levels (random adaptive kernels,
    each party's budget split over the rounds it speaks in), improved by hill climbing
    inside the DP set and seeded with RR too. Each protocol's value is what its optimal
    decision rule achieves on its transcripts, independently of the LP. A protocol above
    the bound by more than --tol is a counterexample to KOV Theorem 3.1: it is written
    as a protocol file.

    Exit status: 0 no counterexample; 1 a counterexample; 2 bad input; 3 the bound could
    not be decided, or the search ran out of time.
    """
    from dpverify.console import print_json
    from dpverify.console.falsify import SearchProgress, print_campaign

    out, err = consoles(no_color)
    with SearchProgress(err, enabled=not (as_json or quiet)) as progress:
        campaign = api.falsify(problem, protocols=protocols, rounds=rounds, messages=messages,
                               seed=seed, climb=climb, save_best=save_best or None,
                               counterexamples=counterexamples, tol=tol,
                               on_progress=progress.update, timeout=timeout or None)
    if as_json:
        print_json([r.to_json() for r in campaign.results])
    elif quiet:
        found = campaign.counterexamples
        out.print(f"{len(found)} counterexample(s)" if found else "no counterexample")
    else:
        print_campaign(out, campaign)
    sys.exit(campaign.exit_status())
