"""`evalh run`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt


@translate_errors
def run(
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", "-s", metavar="SUITE", help="Suite to run (repeatable). Default: every suite that can run, cheapest first."),
    ] = None,
    label: Annotated[str | None, typer.Option("--label", "-l", help="A label stored with the run, e.g. 'prompt=v2'.")] = None,
    repeats: Annotated[int | None, typer.Option("--repeats", "-n", min=1, help="Run each case N times (attempt 0..N-1).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-j", min=1, help="Cases in flight at once.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Per-case timeout in seconds.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the order shuffle (recorded in the run).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0, help="Stop starting cases once this many USD are spent; the run is written partial.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=0, help="Stop starting cases once this many tokens are used.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache: every model call goes to the provider.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", metavar="RUN_ID", help="Finish an interrupted, killed or budget-stopped run: only the cases it has no result for run, under the same run id.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan (suites, cases x arms x repeats, requests, estimated tokens and cost) and exit; nothing is called or written.")] = False,
    allow_self_judge: Annotated[bool, typer.Option("--allow-self-judge", help="Let a judge grade output of its own model (refused otherwise); recorded in the run.")] = False,
    max_error_rate: Annotated[float | None, typer.Option("--max-error-rate", min=0, max=1, metavar="RATE", help="Exit 1 when more than this share (0-1) of a suite's results errored or got no judgment; overrides every suite's max_error_rate (default 0.1).")] = None,
    compare_baseline: Annotated[bool, typer.Option("--compare-baseline", help="After the run, compare it with the BASELINE run (as `evalh compare` would) and exit 1 on a regression.")] = False,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run suites against their targets, score every case, and write one run document.

    Exit 0 when every deterministic case passed; 1 when a deterministic case failed or
    errored, when a suite's error rate (errored + judge_error over the results that ran)
    is over its max_error_rate (any regime; a suite where every result errored always is),
    when the run stopped before every case ran (`partial`: budget reached, interrupted)
    or, with --compare-baseline, on a regression against BASELINE; 2 on bad usage or bad
    input, or a judge refused before the first case ran (judge = subject, calibration
    below its threshold) — nothing is written then; a calibration refused after earlier
    suites ran keeps them in a `failed` document — or when another process is running the
    same run; 4 when a file cannot be written (disk full, read-only: the journal is kept
    for --resume).

    Examples:

        evalh run --suite gate

        evalh run --suite live --repeats 5 --label "prompt=v2" --max-cost 2

        evalh run --suite live --dry-run          # what would it cost?

        evalh run --resume 20261129T201530123Z-3fa9c1 --max-cost 5

        evalh run --suite gate --compare-baseline      # the CI gate in one command
    """
    from evalh.config import load_config
    from evalh.console import err, out, safe_text, warn
    from evalh.core.session import RunOptions, execute, prepare_run
    from evalh.report.terminal.progress import ProgressObserver
    from evalh.report.terminal.run import render_run
    from evalh.store import RunStore, resolve_runs_dir

    cfg = load_config(config)
    directory = resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir)
    if resume is not None:
        from evalh.core.resume import prepare_resume
        from evalh.errors import EvalhError

        given = [flag for flag, value in (("--suite", suite), ("--label", label), ("--seed", seed),
                                          ("--repeats", repeats), ("--timeout", timeout),
                                          ("--allow-self-judge", allow_self_judge or None),
                                          ("--max-error-rate", max_error_rate))
                 if value is not None]
        if given:
            raise EvalhError(f"--resume keeps the run's own suites, label, seed, repeats, timeout, "
                             f"judge settings and max error rate: drop {', '.join(given)}")
        prepared = prepare_resume(
            cfg, resume, directory, concurrency=concurrency, max_cost_usd=max_cost,
            max_tokens=max_tokens, use_cache=False if no_cache else None,
        )
    else:
        options = RunOptions(
            suites=suite, label=label, seed=seed, repeats=repeats, concurrency=concurrency,
            timeout_s=timeout, max_cost_usd=max_cost, max_tokens=max_tokens, use_cache=not no_cache,
            allow_self_judge=allow_self_judge, max_error_rate=max_error_rate, dry_run=dry_run,
        )
        prepared = prepare_run(cfg, options, directory)
    for name, missing in prepared.skipped:
        warn(f"skipped suite {name!r}: needs {', '.join(missing)}")
    if not prepared.plan.suites:
        from evalh.errors import EvalhError

        raise EvalhError("no suite can run (see the skipped suites above)")
    if dry_run:
        from evalh.core.estimate import estimate_plan
        from evalh.report.terminal.estimate import estimate_json, render_estimate

        estimate = estimate_plan(prepared.plan, prepared.skipped)
        if json_out:
            out().file.write(estimate_json(estimate))
        else:
            render_estimate(estimate, out())
        return
    if resume is not None and not quiet and not json_out:
        plan = prepared.plan
        err().print(f"resuming run {plan.run_id}: {len(plan.done)} of {plan.total} results "
                    f"kept, {plan.total - len(plan.done)} to run", markup=False, highlight=False)
    store = RunStore(directory)
    baseline = None
    if compare_baseline:  # fail before spending anything when there is nothing to compare with
        from evalh.baseline import load_baseline

        baseline = load_baseline(cfg.root, store)  # every run it names, of one configuration
    result = execute(prepared, store, ProgressObserver(enabled=not quiet and not json_out))
    from evalh.core.outcome import run_verdict

    path = store.path_for(result.run_id)
    verdict = run_verdict(result)
    code = verdict.code
    for reason in verdict.reasons:  # what fails the run that the results table does not say
        err().print(safe_text(reason, style="red"))
    comparison = notes = None
    if baseline is not None:
        from evalh.cli.compare_cmd import exit_code

        comparison, notes = baseline.compare(result)  # the baseline's runs pooled per case
        code = max(code, exit_code(comparison, fail_on_regression=True, fail_on_inconclusive=False))
    if json_out:
        from evalh.jsonio import document_text

        doc = {"run_id": result.run_id, "path": str(path), "status": result.status,
               "exit_code": code, "reasons": verdict.reasons, "summary": result.summary}
        if comparison is not None:
            from evalh.core.compare_notes import comparison_doc

            doc["comparison"] = comparison_doc(comparison, notes)
        out().file.write(document_text(doc))
    else:
        if not quiet:
            render_run(result, out())
            err().print(f"wrote {path}", markup=False, highlight=False)
        if comparison is not None:
            from evalh.cli.compare_cmd import emit_comparison

            emit_comparison(comparison, notes=notes)
    if code:
        raise typer.Exit(code=code)


