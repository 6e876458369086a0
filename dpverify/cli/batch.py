"""`dpverify batch`, `dpverify results` and `dpverify check`."""

from __future__ import annotations

import functools
import sys

import click

from dpverify.batch.check import DEFAULT_CHECK_TOL
from dpverify.batch.runner import DEFAULT_TIMEOUT
from dpverify.batch.store import DEFAULT_STORE
from dpverify.cli import handle_errors, main
from dpverify.cli.verify import add_options, common_options
from dpverify.lp import BACKENDS
from dpverify.verify.options import DEFAULT_MAX_NONZEROS, VerifyOptions

run_options = [
    click.option("--jobs", "-j", type=click.IntRange(min=1), default=None,
                 help="Worker processes (default: the number of CPUs). With --scheduler local, "
                      "the number of Dask workers."),
    click.option("--store", "store_path", type=click.Path(dir_okay=False),
                 default=str(DEFAULT_STORE), show_default=True,
                 help="The SQLite results store; problems stored there are skipped."),
    click.option("--timeout", type=click.FloatRange(min=0), default=DEFAULT_TIMEOUT,
                 show_default=True,
                 help="Seconds per problem (0: none); past it the verdict is `error`, reason "
                      "`timeout`, and the worker is replaced."),
    click.option("--force", is_flag=True, help="Recompute problems already in the store."),
    click.option("--scheduler", metavar="ADDRESS", default=None,
                 help="Run on a Dask cluster: a scheduler address (tcp://host:8786), or "
                      "`local` for a LocalCluster. Needs pip install 'dpverify[dask]'."),
    click.option("--quiet", "-q", is_flag=True, help="No progress; only the summary."),
    click.option("--no-color", is_flag=True, help="No colours."),
]


def interruptible(fn):
    """Ctrl-C outside the batch loop (which handles it itself): one line, exit 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("dpverify: interrupted", err=True)
            sys.exit(130)

    return wrapper


def _consoles(no_color: bool):
    from dpverify.console import make_console

    return make_console(no_color=no_color), make_console(stderr=True, no_color=no_color)


def _store(path: str):
    from dpverify.batch.store import Store

    return Store(path)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(run_options)
@add_options(common_options)
@click.option("--lp-form", type=click.Choice(["chain", "dense"]), default="chain",
              show_default=True, help="How the corner points enter the LP (same LP either way).")
@click.option("--json", "as_json", is_flag=True,
              help="JSON Lines on stdout: one spec.md result object per problem, as each "
                   "finishes (stored ones too), and nothing else.")
@handle_errors
@interruptible
def batch(paths, jobs, store_path, timeout, force, scheduler, quiet, no_color, tol, backend,
          max_nonzeros, lp_form, as_json):
    """Verify every problem file under PATHS in parallel worker processes.

    Directories are searched recursively for *.toml. Each result is saved in the results
    store as it finishes, so a re-run skips what is done and a killed run resumes. Exit
    status: 0 all optimal, 1 a gap, 2 an invalid problem file, 3 could not decide (an
    error or a timeout), 130 interrupted.
    """
    from dpverify.batch.runner import run_batch
    from dpverify.console.batch import BatchProgress, print_batch_summary

    options = VerifyOptions(tol=tol, backend=backend, form=lp_form, max_nonzeros=max_nonzeros)
    out, err = _consoles(no_color)
    with _store(store_path) as store, BatchProgress(out, err, as_json=as_json,
                                                    quiet=quiet) as progress:
        report = run_batch(paths, options, store=store, jobs=jobs, timeout=timeout or None,
                           force=force, scheduler=scheduler, listener=progress)
    if as_json:
        if err.is_terminal:
            print_batch_summary(err, report, store_path)
    else:
        print_batch_summary(out, report, store_path)
    sys.exit(report.exit_code())


@main.command()
@click.option("--store", "store_path", type=click.Path(dir_okay=False),
              default=str(DEFAULT_STORE), show_default=True, help="The SQLite results store.")
@click.option("--format", "fmt_name", type=click.Choice(["table", "json", "csv"]),
              default="table", show_default=True,
              help="table; json (one array of spec.md result objects); csv (one row per "
                   "problem, agent and accuracy).")
@click.option("--verdict", type=click.Choice(["optimal", "gap", "error"]), default=None,
              help="Only problems with this verdict.")
@click.option("--no-color", is_flag=True, help="No colours.")
@handle_errors
def results(store_path, fmt_name, verdict, no_color):
    """List or export what the results store holds (every version and option set)."""
    from dpverify.batch.store import Store
    from dpverify.console.batch import print_results

    out, _ = _consoles(no_color)
    with Store(store_path, readonly=True) as store:
        rows = store.all(verdict=verdict)
    print_results(out, rows, fmt_name)


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(run_options)
@click.option("--tol", type=click.FloatRange(min=0), default=DEFAULT_CHECK_TOL,
              show_default=True,
              help="Tolerance for an expected value; a value written with fewer digits is "
                   "checked to the digits written (half a unit in the last place).")
@click.option("--strict", is_flag=True, help="A problem without [expect] is a failure.")
@click.option("--update", is_flag=True,
              help="Write the current optimal values into the [expect] tables (comments and "
                   "order kept).")
@click.option("--backend", type=click.Choice(BACKENDS), default="highs", show_default=True,
              help="LP backend.")
@click.option("--max-nonzeros", type=click.IntRange(min=1), default=DEFAULT_MAX_NONZEROS,
              show_default=True, help="Refuse LPs estimated to have more non-zeros.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON object (mismatches, unchecked, updated) and nothing else.")
@handle_errors
@interruptible
def check(paths, jobs, store_path, timeout, force, scheduler, quiet, no_color, tol, strict,
          update, backend, max_nonzeros, as_json):
    """Run the problems under PATHS like `batch` and compare with their [expect] tables.

    For CI: exit 0 when every expectation holds and every verdict is optimal; 1 on a
    mismatch or a gap (with a table: problem, agent, accuracy, expected, got, difference);
    2 an invalid problem file; 3 could not decide. A problem without [expect] is reported
    as unchecked (a failure with --strict).
    """
    from dpverify.batch.check import run_check
    from dpverify.console import print_json
    from dpverify.console.batch import BatchProgress, check_json, print_check

    options = VerifyOptions(backend=backend, max_nonzeros=max_nonzeros)
    out, err = _consoles(no_color)
    with _store(store_path) as store, BatchProgress(out, err, quiet=quiet or as_json,
                                                    label="checking") as progress:
        report = run_check(paths, options, store=store, tol=tol, strict=strict, update=update,
                           jobs=jobs, timeout=timeout or None, force=force, scheduler=scheduler,
                           listener=progress)
    if as_json:
        print_json(check_json(report))
    else:
        print_check(out, report)
    sys.exit(report.exit_code())
