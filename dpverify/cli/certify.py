"""`dpverify certify SPEC...` and `dpverify check-cert SPEC CERT...` (issue 3)."""

from __future__ import annotations

import json
import sys
from fractions import Fraction
from pathlib import Path

import click

from dpverify.cli import handle_errors, main
from dpverify.errors import DpverifyError, InputError, SpecError
from dpverify.lp import BACKENDS
from dpverify.verify.options import DEFAULT_MAX_NONZEROS


def _unlimited_int_strings() -> None:
    """Certificates hold exact rationals that can exceed Python's default 4300-digit limit
    on int <-> str conversion; the limit guards servers, not a local proof checker."""
    if hasattr(sys, "set_int_max_str_digits"):
        sys.set_int_max_str_digits(0)


def _short(x: Fraction) -> str:
    text = str(x)
    return text if len(text) <= 40 else f"~{float(x):.17g}"


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--output", "out_dir", type=click.Path(file_okay=False), default=".",
              show_default=True, help="Directory for the certificates (created if missing).")
@click.option("--backend", type=click.Choice(BACKENDS), default="highs", show_default=True,
              help="LP backend for the worst-case hints (the certificate itself is exact).")
@click.option("--max-nonzeros", type=click.IntRange(min=1), default=DEFAULT_MAX_NONZEROS,
              show_default=True, help="Refuse hint LPs estimated to have more non-zeros.")
@handle_errors
def certify(paths, out_dir, backend, max_nonzeros):
    """Write exact certificates for the multi-party problems PATHS (directories are
    searched for *.toml): one `<problem>.<agent>.<accuracy>.cert.json` per agent and
    accuracy, each an exact proof of an upper bound (a prior and mu over the inputs) and a
    lower bound (randomized response with an explicit decision rule).

    Status `proved-optimal` (bounds equal, exact lambdas), `bracket` (lambdas given through
    epsilon: bounds at rationals around e^epsilon; or a valid certificate whose bounds the
    exact construction could not close, with `notes`) or `unproved` (the certificate does
    not check; it is written for inspection). Check a certificate with
    `dpverify check-cert`. Exit status: 0 all proved or bracketed, 1 one unproved, 2 bad
    input, 3 could not decide (size limit, solver failure).
    """
    from dpverify.spec import load
    from dpverify.verify.certify import certificate_filename, certify_agent, dump_certificate
    from dpverify.verify.options import VerifyOptions
    from dpverify.verify.run import find_problems

    _unlimited_int_strings()
    options = VerifyOptions(backend=backend, max_nonzeros=max_nonzeros)
    files = find_problems(paths)
    if not files:
        raise SpecError(", ".join(paths), "", None, "no *.toml problem files found")
    folder = Path(out_dir)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{out_dir}: cannot create the output directory: {exc.strerror}")
    invalid = errors = unproved = certified = 0
    for path in files:
        try:
            spec = load(path)
        except SpecError as exc:
            click.echo(f"dpverify: {exc}", err=True)
            invalid += 1
            continue
        if spec.kind != "multiparty":
            click.echo(f"dpverify: {path}: skipped: certificates cover multi-party problems "
                       f"only (`problem.kind` = {spec.kind!r})", err=True)
            continue
        certified += 1
        for agent in spec.agents:
            for accuracy in spec.accuracies:
                try:
                    cert = certify_agent(spec, agent, accuracy, options=options)
                except DpverifyError as exc:
                    click.echo(f"dpverify: {exc}", err=True)
                    errors += 1
                    continue
                target = folder / certificate_filename(spec.name, agent.name, accuracy.value)
                try:
                    target.write_text(dump_certificate(cert), encoding="utf-8")
                except OSError as exc:
                    raise InputError(f"{target}: cannot write: {exc.strerror}") from None
                status = cert["status"]
                value = Fraction(cert["lower"]["value"])
                bound = Fraction(cert["upper"]["bound"])
                if status == "proved-optimal":
                    detail = f"value {_short(value)}"
                elif status == "bracket":
                    detail = f"[{float(value):.17g}, {float(bound):.17g}] width {float(bound - value):.3g}"
                else:
                    unproved += 1
                    detail = "; ".join(cert.get("notes", [])) or "the certificate does not check"
                click.echo(f"{status:<14} {target}  {detail}")
    if not certified and not invalid:
        raise SpecError(", ".join(paths), "", None, "no multi-party problem files found")
    if invalid:
        sys.exit(2)
    sys.exit(3 if errors else 1 if unproved else 0)


@main.command("check-cert")
@click.argument("spec_path", metavar="SPEC", type=click.Path(exists=True, dir_okay=False))
@click.argument("certs", metavar="CERT...", nargs=-1, required=True,
                type=click.Path(exists=True, dir_okay=False))
@handle_errors
def check_cert(spec_path, certs):
    """Check certificates CERT... of the problem SPEC with the independent exact checker
    (dpverify/checker.py: it recomputes the gain table from SPEC and checks every corner
    inequality, sum and decision rule in exact arithmetic; it shares no code with the
    solver). Prints `OK <cert>: proved value p/q`, `OK <cert>: bracket [lo, hi] width w` or
    `FAIL <cert>: <reason>`. Exit status: 0 all OK, 1 one failed, 2 bad input (a malformed
    certificate or spec).
    """
    from dpverify.checker import CertificateFormatError, check_certificate
    from dpverify.spec import load

    _unlimited_int_strings()
    spec = load(spec_path)
    if spec.kind != "multiparty":
        raise SpecError(spec_path, "problem.kind", spec.kind,
                        "certificates cover multi-party problems only")
    failed = malformed = 0
    for cert_path in certs:
        try:
            with open(cert_path, encoding="utf-8") as handle:
                cert = json.load(handle)
            result = check_certificate(spec, cert)
        except (OSError, UnicodeDecodeError, json.JSONDecodeError,
                CertificateFormatError) as exc:
            click.echo(f"dpverify: {cert_path}: not a certificate: {_one_line(exc)}", err=True)
            malformed += 1
            continue
        if result.ok:
            click.echo(f"OK {cert_path}: {result.message}")
        else:
            failed += 1
            click.echo(f"FAIL {cert_path}: {result.message}")
    sys.exit(2 if malformed else 1 if failed else 0)


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
