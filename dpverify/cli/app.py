"""The `dpverify` command group and what every command shares: library exceptions become
one line on stderr and spec.md's exit status here, at the edge, never a traceback
(`handle_errors`); every `--help` ends with the exit-status rule."""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import importlib
import io
import os
import re
import sys
import threading
from typing import NoReturn

import click

from dpverify.api import __version__
from dpverify.errors import DpverifyError
from dpverify.status import EXIT_STATUS_RULE, ExitStatus, out_of_memory


def _silence_stdout() -> None:
    """Point fd 1 at /dev/null, so the interpreter's final flush of a closed pipe does not
    print "Exception ignored ... BrokenPipeError" on the way out."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # not a real file descriptor (a test runner's buffer): nothing to flush


def _flush_stdout() -> None:
    with contextlib.suppress(ValueError):  # already closed
        sys.stdout.flush()


def handle_errors(fn):
    """Turn a DpverifyError into one line on stderr and its exit status. A closed stdout
    (`dpverify batch --json | head -1`) ends the command quietly, as it ends Unix tools
    (exit 141, 128 + SIGPIPE): what finished is already stored."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            try:
                return fn(*args, **kwargs)
            finally:
                _flush_stdout()  # a closed pipe shows here at the latest
        except BrokenPipeError:  # stdout closed: the reader has all it wants
            _silence_stdout()
            sys.exit(ExitStatus.BROKEN_PIPE)
        except KeyboardInterrupt:  # Ctrl-C: 130, never 1 (a gap) as click's Abort would say
            click.echo("dpverify: interrupted", err=True)
            sys.exit(ExitStatus.INTERRUPTED)
        except DpverifyError as exc:
            click.echo(f"dpverify: {short_message(str(exc))}", err=True)
            sys.exit(exc.exit_code)
        except OSError as exc:  # an output that cannot be written (`> /dev/full`, a full disk)
            if exc.errno not in UNWRITABLE:
                raise_internal(exc)
            where = f"{short_message(str(exc.filename))}: " if exc.filename else "the output: "
            _silence_stdout()
            click.echo(f"dpverify: {where}cannot write: {exc.strerror}", err=True)
            sys.exit(ExitStatus.BAD_INPUT)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise  # click reports these itself (a bad command line is exit 2)
        except Exception as exc:  # a bug: exit 4 (an internal error), never a pass
            if out_of_memory(exc):
                click.echo("dpverify: out of memory (try a smaller problem, or lower a size "
                           "limit that was raised: --max-nonzeros, --max-orbit-work)",
                           err=True)
                sys.exit(ExitStatus.UNDECIDED)
            raise_internal(exc)

    return wrapper


# The errors of an output the system cannot take (exit 2, as an unwritable -o): no space,
# over a quota, a file too large, an I/O error of the device.
UNWRITABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})


def raise_internal(exc: Exception) -> NoReturn:
    """A bug: one line and exit 4 (an internal error), never a pass; the traceback with
    DPVERIFY_DEBUG=1."""
    if os.environ.get("DPVERIFY_DEBUG"):
        raise exc
    click.echo(f"dpverify: internal error: {type(exc).__name__}: {exc} "
               "(a bug in dpverify: please report it; set DPVERIFY_DEBUG=1 for the "
               "traceback)", err=True)
    sys.exit(ExitStatus.INTERNAL)


def _quiet_broken_pipe(method):
    """Help text (`dpverify --help | head -1`) is printed while click parses the command
    line: a closed stdout there ends quietly too (exit 141), not with click's status 1."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except BrokenPipeError:
            _silence_stdout()
            sys.exit(ExitStatus.BROKEN_PIPE)

    return wrapper


LONG_NUMBER = re.compile(r"\d{41,}")
LONG_WORD = re.compile(r"\S{161,}")


def short_message(message: str) -> str:
    """`message` with every run of more than 40 digits shortened, and then every word of
    more than 160 characters (a file name of 5,000): a refusal stays one short line."""
    message = LONG_NUMBER.sub(
        lambda m: f"{m.group()[:24]}... ({len(m.group())} digits)", message)
    return LONG_WORD.sub(
        lambda m: f"{m.group()[:60]}...{m.group()[-40:]} ({len(m.group())} characters)",
        message)


def _short_click_messages(method):
    """A command line click refuses (a bad option value) says so with long numbers
    shortened, as every refusal of dpverify's own."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except click.ClickException as exc:
            exc.message = short_message(exc.message)  # type: ignore[misc]  # shown later
            raise

    return wrapper


class _Command(click.Command):
    """Every command's --help ends with the one exit-status rule (dpverify.status)."""

    parse_args = _quiet_broken_pipe(click.Command.parse_args)

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("epilog", EXIT_STATUS_RULE)
        super().__init__(*args, **kwargs)


# The module of each command (dpverify/cli/<module>.py, which registers it with `main`).
# A command's module is imported when the command is run or its help shown (click's lazy
# loading of subcommands: `get_command`, `list_commands`), so that `dpverify verify`
# loads cli/verify.py and none of the other commands' modules and what they import.
COMMANDS = {"audit": "audit", "batch": "batch", "results": "batch", "check": "batch",
            "certify": "certify", "check-cert": "certify", "derive": "count",
            "release": "count", "examples": "examples", "falsify": "falsify", "new": "new",
            "survey": "survey", "sweep": "sweep", "verify": "verify"}


class Finished(SystemExit):
    """A command's end when all it made is written and closed (`finish`)."""


def finish(status: int) -> NoReturn:
    """End a command that has written and closed all it made (its files, its output) with
    `status`. As the program (`main()` from the command line) the process then ends at
    once, not module by module: the interpreter's teardown of numpy, highspy and the ~100
    modules of a verification is about 30 ms of CPU, an eighth of `verify` of a small
    problem (benchmarks/bench_startup.py). Called from a test (`main([...])`), SystemExit."""
    raise Finished(status)


def _end_now(status: int) -> None:
    """os._exit(status) after what the interpreter's own exit does that anyone sees: the
    atexit functions (multiprocessing's finalizers, weakref.finalize, logging) and the
    flush of stdout and stderr. Returns (for the usual exit) while another non-daemon
    thread runs, or when a flush fails (a closed pipe: handled as every command does)."""
    main_thread = threading.main_thread()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not main_thread):
        return
    if measured():  # a profiler, a tracer or -X importtime writes its report at the usual exit
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return
    atexit._run_exitfuncs()
    with contextlib.suppress(OSError, ValueError):  # what the atexit functions printed
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


def measured() -> bool:
    """Whether the process is profiled (`python -m cProfile`), traced (coverage, a debugger)
    or runs with `-X importtime`: their reports are written at the interpreter's own exit,
    which os._exit would skip."""
    return (sys.getprofile() is not None or sys.gettrace() is not None
            or "importtime" in sys._xoptions)


class _Group(click.Group):
    command_class = _Command
    parse_args = _quiet_broken_pipe(click.Group.parse_args)
    invoke = _short_click_messages(_quiet_broken_pipe(click.Group.invoke))
    make_context = _short_click_messages(click.Group.make_context)

    def main(self, args=None, *more, **kwargs):  # type: ignore[override]
        try:
            return super().main(args, *more, **kwargs)
        except Finished as done:
            if args is None and kwargs.get("standalone_mode", True):  # the program itself
                _end_now(int(done.code or 0))
            raise

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in COMMANDS and cmd_name not in self.commands:
            importlib.import_module(f"dpverify.cli.{COMMANDS[cmd_name]}")
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)


def every_command() -> dict[str, click.Command]:
    """Every command of `main` by name, each module imported (`main.commands` holds only
    those imported so far)."""
    ctx = click.Context(main)
    return {name: command for name in main.list_commands(ctx)
            if (command := main.get_command(ctx, name)) is not None}


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]},
             invoke_without_command=True)
@click.version_option(__version__, prog_name="dpverify")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Verify optimality theorems in differential privacy.

    Randomized response is optimal for multi-party computation on bits (Kairouz, Oh,
    Viswanath 2015); the geometric mechanism is universally optimal for count queries
    (Gupte, Sundararajan 2010).

    Exit status (every command): 0 every verdict as claimed (optimal); 1 a finding
    against the claim (gap, suboptimal, not-private, contradiction, a mismatch); 2 bad
    input; 3 undecided (open, error, refused); 4 an internal error (a bug); over many
    results the first of 4, 2, 3, 1, 0 wins; 130 interrupted; 141 stdout closed.
    """
    if ctx.invoked_subcommand is None:  # `dpverify` alone: the help, and success
        click.echo(ctx.get_help())
        ctx.exit(ExitStatus.OK)
    _configure(ctx)


def _configure(ctx: click.Context) -> None:
    """The project's defaults ([tool.dpverify] in the nearest pyproject.toml, or a
    dpverify.toml: dpverify/runner/config.py) as the defaults of the options; a bad
    configuration is one line naming the file and the key, exit 2, before any command."""
    from dpverify import api
    from dpverify.cli.config import default_map

    try:
        config = api.configuration()
    except DpverifyError as exc:
        click.echo(f"dpverify: {exc}", err=True)
        ctx.exit(exc.exit_code)
    if isinstance(ctx.command, click.Group) and ctx.invoked_subcommand is not None:
        name = ctx.invoked_subcommand
        command = ctx.command.get_command(ctx, name)
        configured = default_map({name: command} if command else {}, config)
        ctx.default_map = {**configured, **(ctx.default_map or {})}
    ctx.meta["dpverify.config"] = config
