"""Printing tables that never cut a number.

A rich table wider than the terminal is squeezed, and squeezed cells end in "…": a number
such as 0.563265306122 would read 0.563…. `print_table` instead prints the first of its
variants (the full table, then ones without low-value columns, then `compact` ones whose
columns are separated by the rule alone, without padding) that fits the width; when
none does, it wraps the text columns at word boundaries, keeps every number column at its
full width, and only when even that is too wide lets the lines run past the terminal's
edge (the terminal wraps them). In a pipe the console is wide, so the full table is
printed as plain text. A table's title is printed as a line of its own, so a long file
name is never wrapped to the width of the table below it.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Column, Table

WIDE = 100_000  # a width no table reaches: its natural layout


def _wide(console: Console):
    return console.options.update_width(WIDE)


def natural_width(console: Console, table: Table) -> int:
    """The width of `table` when nothing is squeezed."""
    return console.measure(table, options=_wide(console)).maximum


def _span(console: Console, column: Column) -> tuple[int, int]:
    """(narrowest, widest) content width of a column: the longest word and the longest
    cell, counting its header. A number column (right-justified) never wraps."""
    options = _wide(console)
    header = console.measure(column.header, options=options)
    low, high = header.minimum, header.maximum
    number = column.justify == "right"
    for cell in column.cells:
        measured = console.measure(cell, options=options)
        low = max(low, measured.maximum if number else measured.minimum)
        high = max(high, measured.maximum)
    return low, high


def fit_widths(lows: Sequence[int], highs: Sequence[int], budget: int) -> list[int]:
    """Column widths between `lows` and `highs` with sum at most `budget` when possible
    (the widest shrinkable column gives way first), else the `lows`."""
    widths = list(highs)
    excess = sum(widths) - budget
    while excess > 0:
        shrinkable = [i for i, w in enumerate(widths) if w > lows[i]]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def _wrapped(console: Console, table: Table) -> tuple[Table, int]:
    """`table` with fixed column widths that wrap its text columns at word boundaries to
    fit the console (number columns keep their full width), and the width it needs."""
    spans = [_span(console, column) for column in table.columns]
    overhead = natural_width(console, table) - sum(high for _, high in spans)
    widths = fit_widths([low for low, _ in spans], [high for _, high in spans],
                        console.width - overhead)
    for column, width in zip(table.columns, widths, strict=True):
        column.width = width  # at least the longest number of a number column
        column.no_wrap = False
        column.overflow = "fold"
    return table, sum(widths) + overhead


def compact(table: Table) -> Table:
    """`table` without cell padding (columns separated by the rule alone): two characters
    less per column, every digit kept. Returns the table."""
    table.padding = (0, 0, 0, 0)
    return table


def print_table(console: Console, variants: Table | Sequence[Table]) -> Table:
    """Print the first of `variants` that fits the console's width as it is, else the first
    that fits with its text columns wrapped, else the last one wrapped as far as it goes
    with lines longer than the console; never an ellipsis inside a number. Returns the
    table printed (a variant may leave out a column that the caller then names)."""
    tables = [variants] if isinstance(variants, Table) else list(variants)
    title = tables[-1].title
    for table in tables:  # a title is a line of its own: never wrapped to the table's width
        table.title = None
    if title:
        console.print(title)
    for table in tables:
        if natural_width(console, table) <= console.width:
            console.print(table)
            return table
    for table in tables:
        table, needed = _wrapped(console, table)
        if needed <= console.width:
            console.print(table)
            return table
    saved = console.width  # too wide even wrapped: the terminal wraps the long lines
    console.width = needed
    try:
        console.print(table, crop=False)
    finally:
        console.width = saved
    return table


def without_columns(table: Table, headers: Sequence[str]) -> Table:
    """A copy of `table` without the columns whose header is in `headers`."""
    out = Table(title=table.title, title_justify=table.title_justify,
                show_edge=table.show_edge, pad_edge=table.pad_edge,
                show_header=table.show_header, box=table.box, padding=table.padding)
    keep = [c for c in table.columns if str(c.header) not in headers]
    for column in keep:
        out.add_column(column.header, justify=column.justify, style=column.style,
                       no_wrap=column.no_wrap)
    for row in zip(*(list(c.cells) for c in keep), strict=True):
        out.add_row(*row)
    return out
