"""`dpverify certify SPEC...` and `dpverify check-cert SPEC CERT...` (docs/theory.md,
"Certificates")."""

from __future__ import annotations

import sys

import click

from dpverify import api
from dpverify.cli.app import handle_errors, main
from dpverify.cli.options import (
    BACKEND,
    MAX_NONZEROS,
    METHOD_OPTIONS,
    OUTPUT_OPTIONS,
    add_options,
    chosen,
    consoles,
    json_option,
    note,
    timeout_option,
)


@main.command(short_help="Write exact certificates (proofs) for multi-party problems.")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Directory for the certificates (created if missing).")
@add_options([BACKEND, MAX_NONZEROS])
@add_options(METHOD_OPTIONS)
@json_option("Print one JSON array, one object per certificate written (path, problem, agent, "
             "accuracy, status, value, bound, width), and nothing else.")
@add_options(OUTPUT_OPTIONS)
@timeout_option("Seconds per problem file; a problem still being certified then counts as "
                "could not decide (exit status 3), its certificates written before then "
                "kept.")
@click.pass_context
@handle_errors
def certify(ctx, paths, out_dir, backend, max_nonzeros, method, max_orbit_work, as_json,
            quiet, no_color, timeout):
    """Write exact certificates for the multi-party problems PATHS (directories are
    searched for *.toml): one `<problem>.<agent>.<accuracy>.cert.json` per agent and
    accuracy, each an exact proof of an upper bound (a prior and mu over the inputs) and a
    lower bound (randomized response with an explicit decision rule).

    With delta > 0 (a problem on bits): the envelope bound, the best accuracy of any
    interactive protocol (`dpverify-envelope-certificate/1`: b per product of rays, and nu
    per hockey-stick row) against the product of RR(epsilon, delta) with its rule, within
    --max-nonzeros as for `verify`.

    Status `proved-optimal` (bounds equal, exact lambdas), `bracket` (lambdas given through
    epsilon: bounds at rationals around e^epsilon; or a valid certificate whose bounds the
    exact construction could not close, with `notes`) or `unproved` (the certificate does
    not check; it is written for inspection). Check a certificate with
    `dpverify check-cert`. --method orbit asks for the orbit certificate
    (`dpverify-orbit-certificate/1`) of a symmetric problem and proof for the certificate
    on all inputs; --max-orbit-work bounds the orbit certificate's exact work. Exit
    status: 0 all proved or bracketed, 1 one unproved, 2 bad input, 3 could not decide
    (size limit, solver failure).
    """
    from dpverify.console import print_json
    from dpverify.console.certify import (
        certificate_json,
        certificate_line,
        certify_summary,
        skipped_line,
    )
    from dpverify.console.progress import Activity

    out, _ = consoles(no_color)

    def written(record) -> None:
        if not (as_json or quiet):
            out.print(certificate_line(record))

    def failed(message: str) -> None:
        activity.stop()  # the line on stderr, not through the progress line
        click.echo(f"dpverify: {message}", err=True)

    def started(stage) -> None:  # each certificate: its problem, agent, accuracy, clock
        activity.start(f"certifying {stage.problem}")
        activity.stage(stage)

    with Activity(out, enabled=out.is_terminal and not (as_json or quiet)) as activity:
        report = api.certify_paths(
            paths, out_dir, on_certificate=written, on_message=failed, on_stage=started,
            timeout=timeout or None, **chosen(ctx, backend=backend, max_nonzeros=max_nonzeros,
                                              method=method, max_orbit_work=max_orbit_work))
    if as_json:
        print_json([certificate_json(record) for record in report.certificates])
    else:
        out.print(certify_summary(report))
    if report.skipped:
        note(skipped_line(report.skipped))
    for line in report.notes:  # --method where it chooses nothing (the library's notes)
        note(str(line))
    sys.exit(report.exit_status())


@main.command("check-cert", short_help="Check certificates with the independent exact checker.")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False))
@click.argument("certs", metavar="CERT...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@json_option("Print one JSON array of {path, ok, message, value, bound} (exact \"p/q\"), "
             "and nothing else.")
@add_options(OUTPUT_OPTIONS)
@timeout_option("Seconds per certificate; a check still running then is undecided (exit "
                "status 3).")
@handle_errors
def check_cert(spec_path, certs, as_json, quiet, no_color, timeout):
    """Check certificates CERT... of the problem SPEC with the independent exact checker
    (dpverify/checker/: it recomputes the gain table from SPEC and checks every corner
    inequality, sum and decision rule in exact arithmetic; it shares no code with the
    solver). Prints `OK <cert>: proved value p/q`, `OK <cert>: bracket [lo, hi] width w` or
    `FAIL <cert>: <reason>`. Exit status: 0 all OK, 1 one failed, 2 bad input (a malformed
    certificate or spec).
    """
    from dpverify.console import print_json
    from dpverify.console.certify import check_json, check_line, check_summary

    out, _ = consoles(no_color)
    checks = api.check_cert(spec_path, certs, timeout=timeout or None)
    for check in checks:
        if check.malformed:
            click.echo(f"dpverify: {check.path}: {check.message}", err=True)
        elif not (as_json or quiet):
            out.print(check_line(check))
    if as_json:
        print_json([check_json(check) for check in checks])
    elif quiet:
        out.print(check_summary(checks))
    sys.exit(checks.exit_status())
