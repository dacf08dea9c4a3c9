"""`evalh sweep`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt

if TYPE_CHECKING:
    from evalh.config import Config


def _config(path: Path | None) -> Config | None:
    """evalh.toml when one is given or found; a sweep can run from the run document alone."""
    from evalh.config import find_config, load_config
    from evalh.errors import ConfigError

    try:
        return load_config(path if path is not None else find_config(), check_datasets=False)
    except ConfigError:
        if path is not None:
            raise
        return None


@translate_errors
def sweep(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id (see `evalh runs`) or a path to a run document.")],
    suite: Annotated[str | None, typer.Option("--suite", "-s", metavar="SUITE", help="The suite to sweep (default: the run's only suite).")] = None,
    grid: Annotated[list[str] | None, typer.Option("--grid", "-g", metavar="NAME=RANGE", help="NAME=start:stop[:step] or NAME=v1,v2 (repeatable); replaces the configured grid for NAME.")] = None,
    current: Annotated[list[str] | None, typer.Option("--current", metavar="NAME=V[,NAME=V]", help="The policy in use, NAME=V[,NAME=V]: marked in the table, never favoured.")] = None,
    measure: Annotated[str | None, typer.Option("--measure", metavar="MEASURE", help="score | scorer:NAME | output:PATH | count:PATH")] = None,
    label: Annotated[str | None, typer.Option("--label", metavar="PATH", help="Dotted path to the policy-free label in each case's expected.")] = None,
    positive: Annotated[str | None, typer.Option("--positive", metavar="LABEL", help="Binary policy: the positive label (parameter `threshold`).")] = None,
    tiers: Annotated[str | None, typer.Option("--tiers", metavar="DECISIONS", help="Tier policy: decisions, most severe first, comma-separated.")] = None,
    otherwise: Annotated[str | None, typer.Option("--otherwise", metavar="DECISION", help="Tier policy: the decision when no tier fires.")] = None,
    count_value: Annotated[str | None, typer.Option("--count-value", metavar="VALUE", help="For count:PATH: the verdict to count.")] = None,
    objective: Annotated[str | None, typer.Option("--objective", metavar="OBJECTIVE", help="accuracy (default) or balanced_accuracy.")] = None,
    tie_break: Annotated[str | None, typer.Option("--tie-break", metavar="CRITERION", help="fewer_under_calls: decide ties on the objective by fewer under-calls (named as the reason for such a win). Default: none, ties are reported.")] = None,
    errored: Annotated[str | None, typer.Option("--errored", metavar="POLICY", help="A result whose measure rests on a failed call: exclude (default; counted) or miss (wrong for every candidate).")] = None,
    arm: Annotated[str | None, typer.Option("--arm", metavar="ARM", help="The arm to sweep (default: the baseline arm).")] = None,
    top: Annotated[int, typer.Option("--top", min=1, metavar="N", help="Rows of the ranking to print (--json has them all).")] = 15,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Rank candidate decision policies against a run's policy-free labels, from its stored results.

    No target is called: the sweep reads the run document. Each candidate turns a per-case
    number (a score, or a count of lens verdicts) into a decision; it is scored against
    the label in each case's `expected` and ranked by the objective alone (fewer
    under-calls decides ties only when declared with `--tie-break` or `tie_break`), with
    no tie-break toward the current policy. A policy is recommended only when it strictly
    beats the runner-up; otherwise the tied candidates are listed and the data is said not
    to discriminate. A result whose number rests on a failed call (an errored lens, a judge
    error, a failed target) is never read as a survive: it is excluded and counted, or with
    `--errored miss` wrong for every candidate. Defaults come from `[suites.S.sweep]` in
    evalh.toml (or the run's config snapshot); options override them.

    Exit 0 with a ranking (a recommendation or not); 2 on bad input.

    Examples:

        evalh sweep RUN_ID --suite panel

        evalh sweep RUN_ID --suite panel --grid structural=2:4 --current structural=3,sharpen=2,note=1

        evalh sweep RUN_ID --suite judge --measure scorer:rubric --label bad --positive true --grid threshold=0.3:0.9:0.1
    """
    from evalh.cli.project import open_store
    from evalh.console import out
    from evalh.core.analysis.sweep import sweep_request
    from evalh.report.terminal.sweep import render_sweep

    cfg = _config(config)
    run = open_store(runs_dir, config).load(run_id)
    options = {
        "measure": measure, "label": label, "positive": positive, "otherwise": otherwise,
        "count_value": count_value, "objective": objective, "arm": arm,
        "tie_break": tie_break, "errored": errored, "tiers": tiers,
    }
    result = sweep_request(run, suite, cfg, options, grid=grid or (), current=current or ())
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text(result.to_dict()))
        return
    render_sweep(result, out(), top=top)
