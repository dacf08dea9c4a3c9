"""Terminal rendering of `evalh runs`: one line per run, newest last.

The listing is laid out here, line by line, as rich's `Table` lays it out (heavy-head box,
one space of padding, the title on top, left-justified): rich measured and rendered every
cell through its renderables, ~0.7 ms a row (0.3–0.5 s of `evalh runs -n 500`), where
these few columns of short text need a width each and a `str.ljust`. The same algorithm,
step by step (rich 13.7–15, `Table._calculate_column_widths`, `Text.wrap`):

- a column's width is its longest cell (+ 2 for the padding);
- when the columns are wider than the console, the run id's column is as wide as its longest
  id (or its header) and stays so: rich's `no_wrap` column of that `min_width` and
  `max_width`, so an id is never cut nor wrapped (what a user copies into `evalh show` and
  `evalh compare`) and a BASELINE marker wraps below its id; of the other columns the widest
  is shrunk to the next widest until they fit (`_collapse_widths`), then all of them evenly
  (`ratio_reduce`) if need be;
- a cell wider than its column is word-wrapped; a word longer than the column is cut with
  `…`; the header row is aligned to the bottom, the other rows to the top;
- the title wraps at the table's width (a word too long for it folds) and is padded to it.

tests/test_runs_render.py holds this to rich's own rendering of the same rows (long labels,
unicode, markup and escape sequences in labels, 20 to 200 columns, with and without a
terminal). Text that rich reads in ways this does not (a tab, a line break inside a cell),
a console that is not plain UTF-8 (ASCII-only, legacy Windows, Jupyter) and a table that
cannot fit the console go through rich's `Table` itself (`_rich_table`); a table that cannot
fit even with the other columns at their narrowest runs past the console, its lines not
cropped, rather than cut an id.

Piped (`write_runs`), the lines are written without rich; on a terminal (`render_runs`) the
same lines go through the console as segments, the header row bold as rich styles it.
"""

from __future__ import annotations

import re
from typing import IO, TYPE_CHECKING, NamedTuple

from evalh.console import inert
from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.run_header import RunListing

HEADERS = ("run id", "label", "status", "git", "suites (pass rate)")
BASELINE_MARK = " (BASELINE)"  # after the run id of a BASELINE run
_PAD = 1  # a space each side of a cell
_EDGES = 2 + len(HEADERS) - 1  # the box's edges and the dividers between columns
_RICH_ONLY = re.compile("[\t\n\u2028\u2029]")
"""What rich's Text splits or expands and this layout does not (the other line breaks and
controls are U+FFFD already: `console.inert`)."""
_WORD = re.compile(r"\s*\S+\s*")  # rich._wrap's word: leading blanks, the word, trailing blanks
_TRAILING = re.compile(r"\s+$")


def cells_of(row: RunListing) -> tuple[str, ...]:
    """The five cells of a listing row, as text made inert."""
    sha = (row.git_sha or "–")[:8] + ("*" if row.dirty else "")
    rates = "  ".join(f"{n} {num(v, '.0%', none='n/a')}" for n, v in row.suites.items())
    if row.resume:
        rates = f"resume with: {row.resume}"
    elif row.status == "running" and not row.suites:
        rates = "(in flight)"
    rid = row.run_id + (BASELINE_MARK if row.baseline else "")
    return inert(rid), inert(row.label or ""), inert(row.status), inert(sha), inert(rates)


# ----------------------------------------------------------------------------- cell widths


_ONE_CELL = frozenset(map(chr, range(0x20, 0x7F))) | {"–", "…", "\ufffd"}  # no git, cut, `inert`
_narrow = _ONE_CELL.issuperset
"""Whether each character of a text is one cell wide, without rich's tables (controls are
U+FFFD already: `console.inert`)."""


def _cell_len(text: str) -> int:
    if _narrow(text):
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def _set_cell_size(text: str, size: int) -> str:
    """`text` cut or padded with spaces to `size` cells (`rich.cells.set_cell_size`)."""
    if _narrow(text):
        return text[:size].ljust(size) if size > 0 else ""
    from rich.cells import set_cell_size

    return set_cell_size(text, size)


def _column_max(longest: int, max_width: int) -> int:
    """The widest a column may be (`Table._measure_column`'s maximum, of cells in a
    `Padding` of a space a side): its longest cell and the padding, within `max_width`.
    (rich measures each cell's shortest width too, its longest word: a table that does not
    expand never uses it.)"""
    return max(0, min(longest + 2 * _PAD, max_width))


def _ratio_reduce(total: int, ratios: list[int], maximums: list[int], values: list[int]) -> list[int]:
    """`rich._ratio.ratio_reduce`: take `total` off `values` in proportion to `ratios`."""
    ratios = [ratio if most else 0 for ratio, most in zip(ratios, maximums, strict=True)]
    total_ratio = sum(ratios)
    if not total_ratio:
        return values[:]
    remaining = total
    result = []
    for ratio, most, value in zip(ratios, maximums, values, strict=True):
        if ratio and total_ratio > 0:
            taken = min(most, round(ratio * remaining / total_ratio))
            result.append(value - taken)
            remaining -= taken
            total_ratio -= ratio
        else:
            result.append(value)
    return result


def _collapse(widths: list[int], wrapable: list[bool], max_width: int) -> list[int]:
    """`Table._collapse_widths`: shrink the widest wrappable columns to the next widest
    until the table fits (a column that is not wrappable keeps its width)."""
    total = sum(widths)
    excess = total - max_width
    if not any(wrapable):
        return widths
    while total and excess > 0:
        widest = max(w for w, ok in zip(widths, wrapable, strict=True) if ok)
        second = max(w if ok and w != widest else 0 for w, ok in zip(widths, wrapable, strict=True))
        ratios = [1 if w == widest and ok else 0 for w, ok in zip(widths, wrapable, strict=True)]
        if not any(ratios) or not widest - second:
            break
        widths = _ratio_reduce(excess, ratios, [min(excess, widest - second)] * len(widths), widths)
        total = sum(widths)
        excess = total - max_width
    return widths


def column_widths(longest: list[int], max_width: int, keep: int) -> list[int]:
    """Each column's width, padding included, in a table of `max_width` (borders excluded),
    from the width of each column's longest cell. When they do not fit, the first column
    (the run id) is `keep` cells wide, neither shrunk nor wrapped: rich's column with
    `no_wrap=True` and `min_width = max_width = keep` (`_rich_table`); the others give way."""
    widths = [_column_max(n, max_width) or 1 for n in longest]
    if sum(widths) > max_width:
        # `_measure_column`: clamped to keep (+ padding), unless there is no width at all
        fixed = keep + 2 * _PAD
        widths[0] = fixed if max_width >= 1 else 1
        widths = _collapse(widths, [False] + [True] * (len(widths) - 1), max_width)
        if sum(widths) > max_width:  # rich's last resort: every column evenly (the id too)
            widths = _ratio_reduce(sum(widths) - max_width, [1] * len(widths), widths, widths)
        # measured again in their widths: the id clamped back to `keep`, past the console
        widths = [fixed if widths[0] >= 1 else 0,
                  *(_column_max(n, w) for n, w in zip(longest[1:], widths[1:], strict=True))]
    return widths


# ----------------------------------------------------------------------------- wrapping


def _divide(text: str, width: int, fold: bool) -> list[int]:
    """Where `text` breaks to fit `width` cells (`rich._wrap.divide_line`)."""
    breaks: list[int] = []
    offset = 0
    for match in _WORD.finditer(text):
        start, word = match.start(), match.group(0)
        length = _cell_len(word.rstrip())
        if width - offset >= length:
            offset += _cell_len(word)
        elif length > width:  # on no line: fold it, or let the line's truncation cut it
            if fold:
                from rich.cells import chop_cells

                pieces = chop_cells(word, width)
                for k, piece in enumerate(pieces):
                    if start:
                        breaks.append(start)
                    if k == len(pieces) - 1:
                        offset = _cell_len(piece)
                    else:
                        start += len(piece)
            else:
                if start:
                    breaks.append(start)
                offset = _cell_len(word)
        elif offset and start:
            breaks.append(start)
            offset = _cell_len(word)
    return breaks


def wrap(text: str, width: int, *, fold: bool, length: int | None = None) -> list[str]:
    """`text` (`length` cells wide) in lines of exactly `width` cells, left-justified
    (`Text.wrap`): words wrapped, a word longer than a line folded (`fold`, the title) or
    cut with `…` (a cell)."""
    length = _cell_len(text) if length is None else length
    if length <= width:  # nothing to wrap: the common case
        return [text + " " * (width - length)]
    breaks = _divide(text, width, fold)
    lines = []
    for start, end in zip([0, *breaks], [*breaks, len(text)], strict=True):
        line = text[start:end]
        if len(line) > width and (blank := _TRAILING.search(line)):  # Text.rstrip_end
            line = line[: len(line) - min(len(blank.group(0)), len(line) - width)]
        if _cell_len(line) > width:
            line = _set_cell_size(line, width) if fold else _set_cell_size(line, width - 1) + "…"
        lines.append(_set_cell_size(line, width))
    return lines


# ----------------------------------------------------------------------------- the layout


class Layout(NamedTuple):
    """The listing laid out: every row's lines, each line its cells' texts (exactly as wide
    as their column, padding excluded)."""

    title: list[str]
    widths: list[int]
    header: list[list[str]]
    body: list[list[str]]

    def lines(self) -> list[str]:
        """The listing as text lines (the box drawn, no style)."""
        w = self.widths
        out = [*self.title, "┏" + "┳".join("━" * n for n in w) + "┓"]
        out += ["┃ " + " ┃ ".join(line) + " ┃" for line in self.header]
        out.append("┡" + "╇".join("━" * n for n in w) + "┩")
        out += ["│ " + " │ ".join(line) + " │" for line in self.body]
        out.append("└" + "┴".join("─" * n for n in w) + "┘")
        return out


def _row_lines(cells: tuple[str, ...], lengths: list[int], inner: list[int], bottom: bool) -> list[list[str]]:
    if all(n <= w for n, w in zip(lengths, inner, strict=True)):  # one line: the common case
        return [[text + " " * (w - n) for text, n, w in zip(cells, lengths, inner, strict=True)]]
    wrapped = [wrap(text, w, fold=False, length=n) for text, n, w in zip(cells, lengths, inner, strict=True)]
    height = max(len(c) for c in wrapped)
    for k, c in enumerate(wrapped):  # short cells padded with blank lines, as rich aligns them
        blank = [" " * inner[k]] * (height - len(c))
        wrapped[k] = blank + c if bottom else c + blank
    return [list(line) for line in zip(*wrapped, strict=True)]


def layout(title: str, rows: list[tuple[str, ...]], width: int) -> Layout | None:
    """The listing in a console `width` columns wide; None when only rich's `Table` lays it
    out as rich does (a tab or a line break in a cell, a table that cannot fit the console)."""
    texts = [title, *HEADERS, *(c for row in rows for c in row)]
    if any(_RICH_ONLY.search(t) for t in texts):
        return None
    lengths = [[_cell_len(c) for c in row] for row in rows]
    head = [_cell_len(h) for h in HEADERS]
    bare = (n[0] - len(BASELINE_MARK) * r[0].endswith(BASELINE_MARK) for r, n in zip(rows, lengths, strict=True))
    keep = max([head[0], *bare])  # the id column's width when the table must give way
    widths = column_widths([max(col) for col in zip(head, *lengths, strict=True)], width - _EDGES, keep)
    if any(w < 2 * _PAD + 1 for w in widths) or sum(widths) + _EDGES > width:
        return None  # wider than the console (or a column of nothing): left to rich
    inner = [w - 2 * _PAD for w in widths]
    table_width = sum(widths) + _EDGES
    return Layout(
        title=wrap(title, table_width, fold=True) if title else [],
        widths=widths,
        header=_row_lines(HEADERS, head, inner, bottom=True),
        body=[line for row, n in zip(rows, lengths, strict=True) for line in _row_lines(row, n, inner, bottom=False)],
    )


# ----------------------------------------------------------------------------- output


def write_runs(rows: list[RunListing], title: str, width: int, stream: IO[str]) -> None:
    """The listing as plain text (no terminal: no style, so no rich) on `stream`, laid out in
    `width` columns. Falls back to rich for what only rich lays out."""
    laid = layout(inert(title), [cells_of(r) for r in rows], width)
    if laid is None:
        from rich.console import Console

        render_runs(rows, title, Console(file=stream, width=width, color_system=None, highlight=False,
                                         soft_wrap=False, force_terminal=False, force_jupyter=False))
        return
    stream.write("\n".join(laid.lines()) + "\n")


def render_runs(rows: list[RunListing], title: str, console: Console) -> None:
    """The listing: id (BASELINE marked), label, status, git sha, per-suite pass rates, or
    the command that resumes an interrupted run."""
    cells = [cells_of(r) for r in rows]
    options = console.options
    laid = None
    if not (options.ascii_only or options.legacy_windows or console.is_jupyter):
        laid = layout(inert(title), cells, options.max_width)
    if laid is None:
        _rich_table(cells, title, console)
        return
    from rich.segment import Segment, Segments

    bold = console.get_style("table.header")
    lines = laid.lines()
    title_end = len(laid.title) + 1  # the title, then the top of the box
    segments = [Segment(line + "\n") for line in lines[:title_end]]
    for line in laid.header:  # as rich styles a header cell: its padding and text, each bold
        segments.append(Segment("┃"))
        for text, n in zip(line, laid.widths, strict=True):
            if text.strip():
                segments += [Segment(" ", bold), Segment(text, bold), Segment(" ", bold)]
            else:  # a blank line above a shorter header: one segment, as rich aligns it
                segments.append(Segment(" " * n, bold))
            segments.append(Segment("┃"))
        segments.append(Segment("\n"))
    segments += [Segment(line + "\n") for line in lines[title_end + len(laid.header):]]
    console.print(Segments(segments))


def _rich_table(cells: list[tuple[str, ...]], title: str, console: Console) -> None:
    """The listing through rich's `Table`: what `layout` leaves to rich. A table wider than
    the console gives it a run id column of exactly its longest id (or header): never cut
    nor wrapped, the BASELINE marker wrapping below the id, the other columns giving way;
    where even that is too wide, the lines run past the console rather than crop the id."""
    from rich.cells import cell_len
    from rich.measure import Measurement
    from rich.table import Table

    from evalh.console import safe_text

    table = Table(title=safe_text(title), title_justify="left")
    for col in HEADERS:
        table.add_column(col)
    for row in cells:  # the id's own no_wrap=False: the column's no_wrap would cut the marker
        table.add_row(safe_text(row[0], no_wrap=False), *(safe_text(c) for c in row[1:]))
    if Measurement.get(console, console.options.update_width(1 << 20), table).maximum > console.options.max_width:
        keep = max([cell_len(HEADERS[0]), *(cell_len(r[0].removesuffix(BASELINE_MARK)) for r in cells)])
        column = table.columns[0]
        column.no_wrap, column.min_width, column.max_width = True, keep, keep
    console.print(table, crop=False)
