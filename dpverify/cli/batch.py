"""`dpverify batch`, `dpverify results` and `dpverify check`."""

from __future__ import annotations

import functools
import math
import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.figures import FIGURE_OPTIONS, figure_options
from dpverify.cli.options import (
    EXCLUDE,
    METHOD_OPTIONS,
    NO_COLOR,
    POINT_OPTIONS,
    QUIET,
    SEARCH_OPTIONS,
    SOLVER_OPTIONS,
    Count,
    add_options,
    chosen,
    consoles,
    given,
    json_option,
    note,
    timeout_option,
)
from dpverify.defaults import DEFAULT_CHECK_TOL, DEFAULT_STORE, MEMORY_STORE
from dpverify.errors import InputError
from dpverify.policy import MAX_JOBS
from dpverify.status import ExitStatus


def _scheduler(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A malformed --scheduler fails at once (exit 2), before anything tries to connect."""
    if value is None:
        return None
    try:
        return api.check_scheduler(value)
    except InputError as exc:
        raise click.BadParameter(str(exc).partition(": ")[2]) from None


STORE_OPTIONS = [  # the results store of a run (batch, sweep, survey)
    click.option("--store", "store_path", type=click.Path(dir_okay=False),
                 default=str(DEFAULT_STORE), show_default=True,
                 help="The SQLite results store; problems stored there are skipped. Its "
                      "folder .dpverify/ is made with a .gitignore and a CACHEDIR.TAG."),
    click.option("--no-store", is_flag=True,
                 help="Run on a results store in memory: nothing is read from or saved to "
                      "disk (a killed run does not resume)."),
    click.option("--force", is_flag=True, help="Recompute problems already in the store."),
]
RUN_OPTIONS = [
    click.option("--jobs", "-j", type=Count(min=1, max=MAX_JOBS), default=None,
                 help="Worker processes (default: one per idle CPU, the CPUs less the load "
                      "average, at most one per problem, at least one). With --scheduler local, "
                      "the number of Dask workers."),
    *STORE_OPTIONS[:2],
    timeout_option("Seconds per problem; past it the verdict is `error`, reason `timeout`, "
                   "and the worker is replaced."),
    STORE_OPTIONS[2],
    click.option("--scheduler", metavar="ADDRESS", default=None, callback=_scheduler,
                 help="Run on a Dask cluster: `local` for a LocalCluster, or a scheduler "
                      f"address tcp://HOST:PORT or HOST:PORT. Needs {api.install_hint('dask')}."),
    QUIET,
    NO_COLOR,
]


CHECK_FORMATS = ("table", "github", "json")


def _finite(value: float) -> float:
    """`--expect-tol` is a finite number (an infinite one would match every value)."""
    if not math.isfinite(value):
        raise click.BadParameter("must be a finite number >= 0")
    return value


def plot_path_option(ctx: click.Context, param: click.Parameter,
                     value: str | None) -> str | None:
    """A --plot FILE of the wrong kind, or without matplotlib, fails at once (exit 2)."""
    if value is None:
        return None
    try:
        api.check_plot(value)
    except InputError as exc:
        click.echo(f"dpverify: {exc}", err=True)
        ctx.exit(exc.exit_code)
    return value


def interruptible(fn):
    """Ctrl-C outside the batch loop (which handles it itself): one line, exit 130."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except KeyboardInterrupt:
            click.echo("dpverify: interrupted", err=True)
            sys.exit(ExitStatus.INTERRUPTED)

    return wrapper


def store_of(ctx: click.Context, store_path: str, no_store: bool) -> str:
    """The store a run uses: `--store` (or the configuration's), or with `--no-store` one
    in memory; both on the command line contradict each other."""
    if not no_store:
        return store_path
    if given(ctx, "store_path"):
        raise click.UsageError("--store and --no-store contradict each other: choose one")
    return MEMORY_STORE


def _notes(report) -> None:
    """The library's notes: options that did not apply to some problems, files skipped."""
    for line in report.notes:
        note(str(line))


@main.command(short_help="Verify many problems in parallel, with a results store.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(RUN_OPTIONS)
@add_options(SOLVER_OPTIONS)
@add_options(METHOD_OPTIONS)
@add_options(POINT_OPTIONS)
@add_options(SEARCH_OPTIONS)
@EXCLUDE
@json_option("JSON Lines on stdout: one spec.md result object per problem, as each finishes "
             "(stored ones too), and nothing else.")
@click.pass_context
@handle_errors
@interruptible
def batch(ctx, paths, jobs, store_path, no_store, timeout, force, scheduler, quiet, no_color,
          tol, backend, max_nonzeros, lp_form, method, max_orbit_work, grid, samples, seed,
          certify, restarts, witness_dir, exclude, as_json):
    """Verify every problem file under PATHS in parallel worker processes.

    Directories are searched recursively for *.toml. Each result is saved in the results
    store as it finishes, so a re-run skips what is done and a killed run resumes. Exit
    status: 0 all optimal, 1 a gap, 2 an invalid problem file, 3 could not decide (an
    error or a timeout), 130 interrupted.
    """
    from dpverify.console.batch import BatchProgress, print_batch_summary, resume_hint

    options = chosen(ctx, tol=tol, backend=backend, max_nonzeros=max_nonzeros,
                     lp_form=lp_form, grid=grid, samples=samples, seed=seed, certify=certify,
                     method=method, max_orbit_work=max_orbit_work, restarts=restarts,
                     witness_dir=witness_dir)
    store_path = store_of(ctx, store_path, no_store)
    saved = None if no_store else store_path
    out, err = consoles(no_color)
    # stdout carries the results only: progress lines and the resume hint go to stderr
    with api.open_store(store_path) as store, BatchProgress(out, err, as_json=as_json,
                                                           quiet=quiet) as progress:
        report = api.batch(paths, store=store, jobs=jobs, timeout=timeout or None,
                           force=force, scheduler=scheduler, listener=progress,
                           exclude=exclude, **options)
    if as_json:
        if err.is_terminal:
            print_batch_summary(err, report, saved, err)
        elif report.interrupted:  # JSON Lines alone on stdout; the hint still said
            err.print(resume_hint(report, saved))
    else:
        print_batch_summary(out, report, saved, err)
    _notes(report)
    sys.exit(report.exit_status())


@main.command(short_help="List or export what the results store holds.")
@click.option("--store", "store_path", type=click.Path(dir_okay=False),
              default=str(DEFAULT_STORE), show_default=True, help="The SQLite results store.")
@click.option("--format", "fmt_name", type=click.Choice(["table", "json", "csv"]),
              default="table", show_default=True,
              help="table; json (one array of spec.md result objects); csv (one row per "
                   "problem, agent and accuracy).")
@json_option("The same as --format json.")
@click.option("--verdict", type=click.Choice(["optimal", "gap", "error", "suboptimal",
                                              "not-private", "contradiction", "open"]),
              default=None,
              help="Only problems with this verdict.")
@click.option("--plot", "plot_path", metavar="FILE", type=click.Path(dir_okay=False),
              callback=plot_path_option,
              help="Draw one problem family (every stored result of one problem name, such "
                   "as a sweep's points) against its varying level or size, into FILE.png, "
                   f".svg or .pdf. Needs {api.install_hint('plot')}.")
@click.option("--problem", metavar="NAME",
              help="With --plot: the family to draw, a problem name or a glob (needed when "
                   "the store holds several).")
@add_options(FIGURE_OPTIONS)
@add_options([NO_COLOR])
@click.pass_context
@handle_errors
def results(ctx, store_path, fmt_name, as_json, verdict, plot_path, problem, plot_style,
            figsize, plot_title, no_color):
    """List or export what the results store holds (every build and option set), with
    each result's privacy level (epsilon, lambda; alpha), size (parties; n) and method.

    The `version` column names the build of dpverify that computed each result (the
    version and a hash of its source); results of another build are listed, and said to
    be, but `batch` and `check` recompute them. With --plot only the figure is made
    (and one line says where), unless --format or --json asks for the rows too."""
    from click.core import ParameterSource

    from dpverify.console.results import other_builds, print_results

    if as_json:
        if ctx.get_parameter_source("fmt_name") is ParameterSource.COMMANDLINE \
                and fmt_name != "json":
            raise click.UsageError(f"--json and --format {fmt_name} contradict each other")
        fmt_name = "json"
    if problem is not None and plot_path is None:
        raise click.UsageError("--problem chooses the family that --plot draws: give --plot")
    figure = figure_options(ctx, plot_path, plot_style=plot_style, figsize=figsize,
                            plot_title=plot_title)
    out, err = consoles(no_color)
    rows = api.results(store_path, verdict=verdict)
    # With --plot the table is printed only when asked for (--format table); the figure is
    # what was asked for, and one line says where it went.
    asked = ctx.get_parameter_source("fmt_name") is ParameterSource.COMMANDLINE or as_json
    build = api.build_id()
    table = fmt_name == "table" and (plot_path is None or asked)
    if plot_path is None or asked:
        print_results(out, rows, fmt_name, build=build)
    if not table and other_builds(rows, build):
        note(other_builds(rows, build))
    if plot_path is not None:
        family = api.family(rows, problem)
        if figure["title"] is None and figure["style"] == "screen":
            figure["title"] = f"{family.problem}: stored results against {family.x}"
        family.plot(plot_path, **figure)
        for message in family.notes:
            note(message)
        click.echo(f"wrote {plot_path} ({len(family.points)} stored results of "
                   f"{family.problem})", err=fmt_name != "table")


@main.command(short_help="CI: run problems like batch and compare with their [expect].")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@add_options(RUN_OPTIONS)
@add_options(SOLVER_OPTIONS)
@add_options(METHOD_OPTIONS)
@add_options(POINT_OPTIONS)
@add_options(SEARCH_OPTIONS)
@click.option("--expect-tol", type=click.FloatRange(min=0), default=DEFAULT_CHECK_TOL,
              show_default=True, callback=lambda ctx, param, value: _finite(value),
              help="Tolerance of an expected value: |got - expected| <= T * max(1, "
                   "|expected|) (absolute near 0, relative beyond).")
@click.option("--digits", is_flag=True,
              help="Also accept any value that rounds to the digits written (0.5493 holds "
                   "within 5e-5; 0.5 within 0.05).")
@click.option("--strict/--no-strict", default=False,
              help="A problem without [expect] is a failure (--no-strict: it is listed "
                   "as unchecked, whatever the configuration says).")
@click.option("--update", is_flag=True,
              help="Write the current optimal values that do not hold (or are missing) into "
                   "the [expect] tables, in full precision (comments and order kept).")
@click.option("--diff", is_flag=True,
              help="Print what --update would write, as a unified diff, and change nothing.")
@EXCLUDE
@click.option("--format", "fmt_name", type=click.Choice(CHECK_FORMATS), default="table",
              show_default=True,
              help="table; github (one GitHub Actions annotation per mismatch, at the line "
                   "of its expectation, then the summary line); json (as --json).")
@click.option("--junit", "junit_path", metavar="FILE", type=click.Path(dir_okay=False),
              help="Also write a JUnit XML report to FILE (one test case per expectation; "
                   "what GitLab, Jenkins and Azure Pipelines show as test results).")
@json_option("Print one JSON object (mismatches with expected and got verdicts and the "
             "line of each expectation, invalid files, unchecked, updated) and nothing "
             "else. The same as --format json.")
@click.pass_context
@handle_errors
@interruptible
def check(ctx, paths, jobs, store_path, no_store, timeout, force, scheduler, quiet, no_color,
          tol, backend, max_nonzeros, lp_form, method, max_orbit_work, grid, samples, seed,
          certify, restarts, witness_dir, expect_tol, digits, strict, update, diff, exclude,
          fmt_name, junit_path, as_json):
    """Run the problems under PATHS like `batch` and compare with their [expect] tables.

    For CI: exit 0 when every expectation holds and every verdict is optimal; 1 on a
    mismatch or a gap (with a table: problem, file and line, agent, accuracy, expected,
    got, difference); 2 an invalid problem file; 3 could not decide. A problem without
    [expect] is reported as unchecked (a failure with --strict). --tol is the verdict
    tolerance, as in `verify`; --expect-tol the tolerance of the expected values. A named
    file that is not a problem file (a pyproject.toml from a pre-commit hook) is skipped
    with a note. Defaults may come from [tool.dpverify] in pyproject.toml.
    """
    from dpverify.console import print_json
    from dpverify.console.batch import (
        BatchProgress,
        check_json,
        print_check,
        print_github,
        resume_hint,
    )

    if as_json:
        if given(ctx, "fmt_name") and fmt_name != "json":
            raise click.UsageError(f"--json and --format {fmt_name} contradict each other")
        fmt_name = "json"
    if update and diff:
        raise click.UsageError("--update writes and --diff only shows: choose one")
    options = chosen(ctx, tol=tol, backend=backend, max_nonzeros=max_nonzeros,
                     lp_form=lp_form, grid=grid, samples=samples, seed=seed, certify=certify,
                     method=method, max_orbit_work=max_orbit_work, restarts=restarts,
                     witness_dir=witness_dir)
    store_path = store_of(ctx, store_path, no_store)
    out, err = consoles(no_color)
    quiet_progress = quiet or fmt_name == "json"
    with api.open_store(store_path) as store, BatchProgress(out, err, quiet=quiet_progress,
                                                           label="checking") as progress:
        report = api.check(paths, store=store, expect_tol=expect_tol, digits=digits,
                           strict=strict, update=update, diff=diff, jobs=jobs,
                           timeout=timeout or None, force=force, scheduler=scheduler,
                           listener=progress, exclude=exclude, **options)
    if junit_path is not None:
        _write_report(junit_path, api.junit_xml(report))
    if fmt_name == "json":
        print_json(check_json(report))
    elif fmt_name == "github":
        print_github(report, api.github_annotations(report))
    else:
        print_check(out, report)
    hint = resume_hint(report.batch, None if no_store else store_path)
    if hint is not None:  # a message, on stderr, whatever the format
        err.print(hint)
    _notes(report.batch)
    sys.exit(report.exit_status())


def _write_report(path: str, text: str) -> None:
    """Write a report file (exit 2 with one line when it cannot be written)."""
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise InputError(f"{path}: cannot write the report: {exc.strerror or exc}") from None
