"""`evalh rejudge`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt


@translate_errors
def rejudge(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="The run whose stored outputs are judged again (id or path).")],
    everything: Annotated[
        bool, typer.Option("--all/--missing", help="Judge every result again, or (default) only those whose judgment is missing or failed."),
    ] = False,
    judge_model: Annotated[str | None, typer.Option("--judge-model", metavar="MODEL", help="Judge with this model instead of the configured judges.")] = None,
    label: Annotated[str | None, typer.Option("--label", "-l", metavar="LABEL", help="Label of the new run, e.g. 'judge=M'.")] = None,
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", metavar="SUITE", help="Only this suite of the run (repeatable).")] = None,
    allow_self_judge: Annotated[bool, typer.Option("--allow-self-judge", help="Let a judge grade its own model's output (recorded in the run).")] = False,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-j", min=1, metavar="N", help="Results judged at once.")] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Judge the outputs stored in a run again, without calling the target.

    Only judge scorers run (from today's evalh.toml, so a fixed rubric or judge config
    applies); every other score is kept as stored. A NEW run is written with
    `derived_from: {run_id, how: rejudge}`; the original is never modified. The report
    shows judge drift on the same outputs: raw agreement, Cohen's kappa, and the table of
    old vs new verdicts. `evalh compare RUN_ID NEW_ID` then shows what the new judge changed.

    Exit 0 when the new run is written; 1 when it is written but measured nothing (every
    result judged again got judge_error: the judge is down or refuses); 2 on bad usage or
    input (nothing is written).

    Examples:

        evalh rejudge 20261129T201530123Z-3fa9c1

        evalh rejudge 20261129T201530123Z-3fa9c1 --all --judge-model claude-sonnet-4-5 --label "judge=sonnet"
    """
    from evalh.config import load_config
    from evalh.console import err, out
    from evalh.core.rejudge.rejudge import RejudgeOptions
    from evalh.core.rejudge.rejudge import rejudge as run_rejudge
    from evalh.report.terminal.progress import ProgressObserver
    from evalh.report.terminal.rejudge import render_rejudge
    from evalh.store import RunStore, resolve_runs_dir

    cfg = load_config(config, check_datasets=False)
    store = RunStore(resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir))
    opts = RejudgeOptions(run=run_id, everything=everything, judge_model=judge_model, label=label,
                          suites=suite, concurrency=concurrency, allow_self_judge=allow_self_judge)
    result = run_rejudge(cfg, store, opts, ProgressObserver(enabled=not quiet and not json_out))
    nothing = result.measured_nothing()
    if json_out:
        from evalh.jsonio import document_text

        doc = {"run_id": result.run.run_id, "path": str(result.path), "status": result.run.status,
               "derived_from": {"run_id": result.source.run_id, "how": "rejudge"}, "suites": result.suites}
        out().file.write(document_text(doc))
    elif not quiet:
        render_rejudge(result, out())
        err().print(f"wrote {result.path}", markup=False, highlight=False)
    if nothing:
        from evalh.console import error_line

        error_line(f"rejudge of {result.source.run_id}: {nothing}")
        raise typer.Exit(code=1)
