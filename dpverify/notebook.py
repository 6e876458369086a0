"""Results and reports in a notebook: one shared view for every type the API returns.

`Notebook` is a mixin. A class that mixes it in gets, from its `to_dict()` (or
`to_json()`: the object `--json` prints) alone:

* `to_records()`: flat rows, one per agent and accuracy (a report: one per problem and
  result; a file without results: one row with its reason). A row is the result object's
  fields, nested objects flattened to dotted keys (`proof.status`), and the scalar fields
  of the objects around it (`problem`, `source`, `kind`) that it does not have itself.
* `to_pandas()`: those rows as a `pandas.DataFrame` (pandas is imported only then; without
  it, an `InputError` that says how to install it).
* a compact `repr`: a title line (the type, the problem, the verdict) and a text table of
  the `notebook_columns`, as the command line's table shows them; arrays (decision rules,
  mechanisms, duals) are never printed, and a long table shows its first rows;
* `_repr_html_`: the same table as HTML, which Jupyter shows (built here, without rich).

`json.dumps(result.to_dict())` is plain JSON: `to_dict()` holds strings, numbers, lists
and dicts only. This module imports nothing of dpverify but the exceptions, so every
layer's result types can use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

from dpverify.errors import InputError

# Where a result object keeps its rows: a problem its results; a report its files or items.
ROW_KEYS = ("results", "files", "items", "rows", "certificates", "checks", "mismatches",
            "stages", "pairs", "settings")
MAX_ROWS = 20  # rows a repr shows; the rest are counted
DIGITS = 12  # significant digits of a float in a table, as on the command line
PANDAS_INSTALL = "pip install pandas"
VERDICT_COLOURS = {"optimal": "#1a7f37", "proved-optimal": "#1a7f37", "ok": "#1a7f37",
                   "gap": "#d62728", "suboptimal": "#d62728", "not-private": "#d62728",
                   "contradiction": "#d62728", "unproved": "#d62728",
                   "interaction-helps": "#c2185b", "open": "#8250df", "error": "#ff7f0e",
                   "invalid": "#ff7f0e"}


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _flat(obj: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`obj` with nested objects flattened to dotted keys; lists kept whole."""
    out: dict[str, Any] = {}
    for key, value in obj.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def _rows_key(obj: Mapping[str, Any]) -> str | None:
    for key in ROW_KEYS:
        value = obj.get(key)
        if isinstance(value, list) and all(isinstance(v, Mapping) for v in value):
            return key
    return None


def records_of(obj: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The flat rows of a JSON object (the module docstring): one per object of its rows
    (recursively), each with the scalar fields around it that it lacks; the object itself
    when it has no rows, or its own fields when its row list is empty."""
    key = _rows_key(obj)
    if key is None:
        yield _flat(obj)
        return
    header = {k: v for k, v in obj.items() if k != key and
              (_scalar(v) or (isinstance(v, list) and all(_scalar(x) for x in v)))}
    if not obj[key]:
        yield dict(header)
        return
    for child in obj[key]:
        for row in records_of(child):
            yield {**{k: v for k, v in header.items() if k not in row}, **row}


def cell_text(value: Any) -> str:
    """A value in a table cell: floats with DIGITS significant digits, "-" for None and
    non-finite floats, lists joined (long ones counted)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{DIGITS}g}" if math.isfinite(value) else "-"
    if isinstance(value, list):
        if len(value) > 4:
            return f"[{len(value)} values]"
        return "[" + ", ".join(cell_text(v) for v in value) + "]"
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _header(column: str) -> str:
    return column.replace("_", " ")


def _right(column: str, rows: Sequence[Mapping[str, Any]]) -> bool:
    """Numbers are right-aligned."""
    values = [r.get(column) for r in rows if r.get(column) is not None]
    return bool(values) and all(isinstance(v, int | float) and not isinstance(v, bool)
                                for v in values)


def text_table(title: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]
               ) -> str:
    """A plain-text table (the compact repr): the title, a header, one line per row (the
    first MAX_ROWS, then a count of the rest)."""
    shown = rows[:MAX_ROWS]
    cells = [[cell_text(r.get(c)) for c in columns] for r in shown]
    widths = [max([len(_header(c))] + [len(row[i]) for row in cells])
              for i, c in enumerate(columns)]
    right = [_right(c, shown) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if r else v.ljust(w)
                         for v, w, r in zip(values, widths, right, strict=True)).rstrip()

    out = [title]
    if columns:
        out += [line([_header(c) for c in columns]), line(["-" * w for w in widths])]
        out += [line(row) for row in cells]
    if len(rows) > MAX_ROWS:
        out.append(f"... {len(rows) - MAX_ROWS} more rows (to_records() has them all)")
    return "\n".join(out)


def html_table(title: str, columns: Sequence[str], rows: Sequence[Mapping[str, Any]]
               ) -> str:
    """The same table as HTML (a <table> with the title as its caption), every text
    escaped; verdicts coloured as on the command line. Without columns, the caption
    alone (as the text table is its title alone), never rows of empty cells."""
    from html import escape as esc  # lazy: its entity table is 1 ms of a verification

    if not columns:  # nothing to tabulate (a check whose expectations all held): the title
        return (f'<table class="dpverify"><caption style="text-align:left">{esc(title)}'
                "</caption></table>")
    shown = rows[:MAX_ROWS]
    right = [_right(c, shown) for c in columns]
    head = "".join(f'<th style="text-align:{"right" if r else "left"}">{esc(_header(c))}'
                   "</th>" for c, r in zip(columns, right, strict=True))
    body = []
    for row in shown:
        tds = []
        for c, r in zip(columns, right, strict=True):
            text = cell_text(row.get(c))
            colour = VERDICT_COLOURS.get(text) if c in ("verdict", "status") else None
            style = f"text-align:{'right' if r else 'left'}" + \
                (f";color:{colour};font-weight:bold" if colour else "")
            tds.append(f'<td style="{style}">{esc(text)}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    more = (f'<p style="margin:0">... {len(rows) - MAX_ROWS} more rows (to_records() has '
            "them all)</p>") if len(rows) > MAX_ROWS else ""
    return (f'<table class="dpverify"><caption style="text-align:left">{esc(title)}'
            f"</caption><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody>"
            f"</table>{more}")


class Notebook:
    """The notebook view (module docstring). A class sets `notebook_columns` (the
    columns its table shows, from its records; empty: every column whose values are not
    lists) and may override `notebook_table_columns`, `notebook_title` and
    `notebook_rows`."""

    notebook_columns: ClassVar[tuple[str, ...]] = ()

    def notebook_object(self) -> Mapping[str, Any]:
        """The JSON object the view is built from: `to_dict()`, else `to_json()`."""
        for name in ("to_dict", "to_json"):
            method = getattr(self, name, None)
            if method is not None:
                return method()
        raise TypeError(f"{type(self).__name__} has neither to_dict nor to_json")

    def to_records(self) -> list[dict[str, Any]]:
        """Flat rows (module docstring): plain values, one per agent and accuracy."""
        return list(records_of(self.notebook_object()))

    def to_pandas(self) -> Any:
        """`to_records()` as a pandas DataFrame; InputError when pandas is not installed."""
        import importlib

        try:
            pandas = importlib.import_module("pandas")
        except ImportError:
            raise InputError(f"to_pandas() needs pandas, which is not installed: "
                             f"{PANDAS_INSTALL} (to_records() gives the same rows as "
                             "plain dicts)") from None
        return pandas.DataFrame.from_records(self.to_records())

    def notebook_title(self) -> str:
        """`Type problem (source) agent accuracy: verdict`, from the attributes it has;
        with counts (`counts()`) for a report."""
        parts = [type(self).__name__]
        problem, source = getattr(self, "problem", None), getattr(self, "source", None)
        if isinstance(problem, str):
            parts.append(problem)
        if isinstance(source, str) and source != problem:
            parts.append(f"({source})")
        parts += [v for v in (getattr(self, "agent", None), getattr(self, "accuracy", None))
                  if isinstance(v, str)]
        title = " ".join(parts)
        verdict = getattr(self, "verdict", None)
        if verdict is not None and not callable(verdict):
            title += f": {getattr(verdict, 'value', verdict)}"
        counts = getattr(self, "counts", None)
        if callable(counts):
            found = counts()
            if found:
                title += " (" + ", ".join(f"{n} {c}" for c, n in sorted(found.items())) + ")"
        return title

    def notebook_rows(self) -> list[dict[str, Any]]:
        """The rows the table shows (the records, unless a class says otherwise)."""
        return self.to_records()

    def notebook_table_columns(self) -> tuple[str, ...]:
        """The columns the table may show (those no row has are left out)."""
        return self.notebook_columns

    def _notebook_view(self) -> tuple[str, list[str], list[dict[str, Any]]]:
        rows = self.notebook_rows()
        wanted = self.notebook_table_columns()
        columns = [c for c in wanted if any(c in r for r in rows)]
        if not wanted:
            seen: dict[str, None] = {}
            for r in rows:
                seen.update((k, None) for k, v in r.items() if not isinstance(v, list))
            columns = list(seen)
        return self.notebook_title(), columns, rows

    def __repr__(self) -> str:
        return text_table(*self._notebook_view())

    def _repr_html_(self) -> str:
        return html_table(*self._notebook_view())


__all__ = ["Notebook", "cell_text", "html_table", "records_of", "text_table"]
