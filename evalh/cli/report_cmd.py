"""`evalh report`."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.help_format import EvalhCommand
from evalh.cli.options import ConfigOpt, QuietOpt, RunsDirOpt

if TYPE_CHECKING:
    from evalh.models import CaseResult, Run


class ReportFormat(StrEnum):
    table = "table"
    md = "md"
    markdown = "markdown"  # as `evalh compare` spells it
    json = "json"
    html = "html"


FORMAT_HELP = ("table (terminal), md (or markdown), json, html, or a report format an installed "
               "plugin registers (`evalh plugins`).")


def _complete_format(incomplete: str) -> list[str]:
    from evalh.report.formats import known_formats

    return [f for f in known_formats() if f.startswith(incomplete)]


class ReportCommand(EvalhCommand):
    """`evalh report`: its --help lists the report formats plugins add."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from typer.core import TyperOption

        from evalh import registry

        plugins = sorted(registry.report_formats())
        for param in self.params:
            if isinstance(param, TyperOption) and param.name == "fmt" and plugins:
                param.help = FORMAT_HELP + " Installed by plugins: " + ", ".join(plugins) + "."
        super().format_help(ctx, formatter)


@translate_errors
def report(
    run_ids: Annotated[
        list[str] | None,
        typer.Argument(metavar="RUN_ID", help="Run ids (see `evalh runs`) or paths to run documents. Default: the newest run.",
                       show_default=False),
    ] = None,
    by: Annotated[
        list[str] | None,
        typer.Option("--by", metavar="FIELD", help="Also break results down by this case metadata field (repeatable), "
                                  "e.g. split, stratum, tags, complexity."),
    ] = None,
    stat: Annotated[
        list[str] | None,
        typer.Option("--stat", metavar="PATH", help="Count, mean, min, max, p50 and p95 of a numeric field (repeatable), "
                                   "overall and by each --by field: output.num_iterations, trace.TOOL.key, "
                                   "metadata.x, latency_ms, tokens_out, cost_usd, score. A --by field may then be a "
                                   "rooted path too (output.route)."),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help=FORMAT_HELP,
                                     autocompletion=_complete_format)] = "table",
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Write the report to this file instead of stdout.", dir_okay=False),
    ] = None,
    raw: Annotated[
        bool,
        typer.Option("--raw/--no-raw", help="Show each repeated suite's raw-attempts table in the terminal "
                                            "(its first 50 cases), or fold it to one line."),
    ] = True,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Report the numbers of one or more runs: outcomes with their denominators, intervals
    where their assumptions hold, latency, tokens and cost, verdicts, worst cases,
    breakdowns by metadata and by tool, and for repeated runs the raw attempts, flakiness
    and pass@k. It opens with a summary of every suite, and each run's verdict against the
    BASELINE when one is set.

    Errored and judge-error results are counted apart and never enter a pass rate; a rate
    over zero results is shown as n/a. Suites and arms are reported one by one, never
    blended into a single headline.

    Examples:

        evalh report

        evalh report 20261129T201530123Z-3fa9c1 --by complexity --by split

        evalh report --format md >> "$GITHUB_STEP_SUMMARY"

        evalh report RUN_A RUN_B --format html -o report.html

    A plugin's format (`evalh plugins` lists them) is named the same way:
    `evalh report --format demo_csv -o runs.csv`.
    """
    from evalh.cli.project import open_project
    from evalh.errors import EvalhError, RunNotFound
    from evalh.report import build_report, render_terminal, to_html, to_json, to_markdown

    if json_out:  # --json is --format json, as on every command that prints data
        if fmt not in (ReportFormat.table, ReportFormat.json):
            raise EvalhError(f"--json is --format json: drop --format {fmt}")
        fmt = ReportFormat.json
    from evalh.report.formats import check_format, render_plugin

    plugin = check_format(fmt)  # a name neither built in nor installed: exit 2, the known ones
    if plugin and (by or stat):
        raise EvalhError(f"--format {fmt}: a plugin's format renders the runs itself "
                         f"(drop {'--by' if by else '--stat'})")
    fields = list(by or [])
    for field in fields:
        if not field.strip():
            raise EvalhError("--by: a metadata field name cannot be empty")
    stat_by = fields
    if stat:  # a rooted --by (output.route) groups the --stat tables only
        from evalh.core.analysis.field_stats import check_path, is_rooted

        for path in stat:
            check_path(path)
        if fmt == ReportFormat.html:
            raise EvalhError("--stat: the tables are in the table, md and json formats (not html)")
        fields = [f for f in fields if not is_rooted(f)]
    root, store = open_project(config, runs_dir)
    refs = list(run_ids or [])
    if not refs:
        ids = store.list_ids()
        if not ids:
            from evalh.scaffold import first_run_hint
            raise RunNotFound(f"no runs in {store.runs_dir}: {first_run_hint()}")
        refs = [ids[-1]]
    from evalh.run_results import RunResults, open_results

    whole: list[Run] | None = None
    if plugin or (fmt == ReportFormat.html and len(refs) == 2):
        # a plugin renders the runs' models; the html of two runs pairs their cases: whole runs
        whole = [store.load(ref) for ref in refs]
        if plugin:
            _emit(render_plugin(fmt, whole), output, quiet)
            return
    # else read a result at a time: memory holds the report's numbers, not the runs
    runs: list[Run | RunResults] = list(whole) if whole else [open_results(store, ref) for ref in refs]
    from evalh.report.build import versus_baseline

    present: set[str] = set()
    stats_parts = None
    if stat:
        from evalh.core.analysis.field_stats import FieldStatsParts

        stats_parts = FieldStatsParts(stat, stat_by)
        for at, source in enumerate(runs):
            header = source.header if isinstance(source, RunResults) else source
            for name in header.suites:
                stats_parts.declare(header.run_id, name, at)
    def visit(at: int, run_id: str, suite: str, r: CaseResult) -> None:
        if fields:
            present.update(k for k, v in r.metadata.items() if v not in (None, [], ""))
        if stats_parts is not None:
            stats_parts.add(run_id, suite, r, at)  # by position: a run given twice is two runs

    rep = build_report(runs, fields, baseline=versus_baseline(runs, root, store),
                       visit=visit if fields or stats_parts is not None else None)
    _check_fields(present, fields)
    from evalh.report.build import with_corrected

    rep = with_corrected(rep, store, refs)
    stats = stats_parts.result() if stats_parts is not None else None

    if fmt == ReportFormat.table and output is None:
        from evalh.console import out

        render_terminal(rep, out(), raw=raw)
        if stats is not None:
            from evalh.report.field_stats import stat_blocks
            from evalh.report.render import draw_blocks

            draw_blocks(stat_blocks(stats, several_runs=len(runs) > 1), out())
        return
    if fmt == ReportFormat.table:
        from evalh.report.render import terminal_text

        text = terminal_text(rep, raw=raw)
        if stats is not None:
            from evalh.report.field_stats import stat_text

            text += stat_text(stats, several_runs=len(runs) > 1)
    elif fmt in (ReportFormat.md, ReportFormat.markdown):
        text = to_markdown(rep)
        if stats is not None:
            from evalh.report.field_stats import stat_markdown

            text += "\n" + stat_markdown(stats, several_runs=len(runs) > 1)
    elif fmt == ReportFormat.json:
        text = to_json(rep)
        if stats is not None:
            import orjson

            doc = orjson.loads(text)
            doc["field_stats"] = [s.to_dict() for s in stats]
            from evalh.jsonio import document_text

            text = document_text(doc)
    else:
        from evalh.report.matrix import arms_matrices
        from evalh.report.pairs import case_pairs

        # the arms matrix of each suite with several arms (that run read whole, once; not a
        # run past MATRIX_MAX_RESULTS results, whose report is read a result at a time)
        matrices = []
        for at, source in enumerate(runs):
            header = source.header if isinstance(source, RunResults) else source
            size = sum(s.aggregate.n for s in header.suites.values())
            if any(len(s.arms) > 1 for s in header.suites.values()) and (whole or size <= MATRIX_MAX_RESULTS):
                matrices += arms_matrices(whole[at] if whole else store.load(refs[at]))
        text = to_html(rep, pairs=case_pairs(whole[0], whole[1]) if whole and len(whole) == 2 else None,
                       matrices=matrices)
    _emit(text, output, quiet)


MATRIX_MAX_RESULTS = 50_000
"""Past this many results a run's HTML report has no arms matrix (it would load the run whole)."""


def _emit(text: str, output: Path | None, quiet: bool) -> None:
    if output is None:
        typer.echo(text, nl=False)
        return
    from evalh.atomic import atomic_write_bytes

    atomic_write_bytes(output, text.encode("utf-8"))  # a refused write: one line, exit 4
    if not quiet:
        typer.echo(f"wrote {output}", err=True)


def _check_fields(present: set[str], fields: list[str]) -> None:
    """A --by field that no case of these runs carries (`present`: the metadata fields some
    result holds a value in) is a typo, not an empty breakdown."""
    from evalh.errors import EvalhError

    for field in fields:
        if field not in present:
            known = ", ".join(sorted(present)) or "none"
            raise EvalhError(f"--by {field}: no case of the reported runs carries metadata "
                             f"`{field}` (fields: {known})")

