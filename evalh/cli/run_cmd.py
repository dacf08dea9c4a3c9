"""`evalh run`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunQuietOpt, RunsDirOpt

if TYPE_CHECKING:
    from evalh.baseline import LoadedBaseline
    from evalh.core.request.run_request import PreparedRequest
    from evalh.models import Run


@translate_errors
def run(
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", "-s", metavar="SUITE", help="Suite to run (repeatable). Default: every suite that can run, cheapest first."),
    ] = None,
    label: Annotated[str | None, typer.Option("--label", "-l", metavar="LABEL", help="A label stored with the run, e.g. 'prompt=v2'.")] = None,
    repeats: Annotated[int | None, typer.Option("--repeats", "-n", min=1, metavar="N", help="Run each case N times (attempt 0..N-1).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-j", min=1, metavar="N", help="Cases in flight at once.")] = None,
    procs: Annotated[int | None, typer.Option("--procs", min=1, metavar="N", help="Spread each suite's cases over N worker processes, each with its own event loop and clients (for model targets whose client CPU fills one core); the run document is the same as with one.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, metavar="SECONDS", help="Per-case timeout in seconds.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="SEED", help="Seed of the order shuffle (recorded in the run).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0, metavar="USD", help="Stop starting cases once this many USD are spent; the run is written partial.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=0, metavar="TOKENS", help="Stop starting cases once this many tokens are used.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache: every model call goes to the provider.")] = False,
    resume: Annotated[str | None, typer.Option("--resume", metavar="RUN_ID", help="Finish an interrupted, killed or budget-stopped run: only the cases it has no result for run, under the same run id.")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the plan (suites, cases x arms x repeats, requests, estimated tokens and cost, and the pass-rate drop each stochastic suite catches with 80 % power) and exit; nothing is called or written.")] = False,
    allow_self_judge: Annotated[bool, typer.Option("--allow-self-judge", help="Let a judge grade output of its own model (refused otherwise); recorded in the run.")] = False,
    max_error_rate: Annotated[float | None, typer.Option("--max-error-rate", min=0, max=1, metavar="RATE", help="Exit 1 when more than this share (0-1) of a suite's results errored or got no judgment; overrides every suite's max_error_rate (default 0.1).")] = None,
    iterations: Annotated[int | None, typer.Option("--iterations", min=1, metavar="N", help="Generate N cases for each suite with a `generate` table (overrides its count); the run's seed draws them.")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", metavar="MODEL", help="Judge with this model instead of the configured judges (one judge, the first judge's provider settings); recorded in the run's config and checked against the subject like any judge.")] = None,
    sleep_ms: Annotated[float | None, typer.Option("--sleep-ms", min=0, metavar="MS", help="Pace every Python, model and HTTP target: its calls start at least MS milliseconds apart (its pace_ms; neither latency nor timeout).")] = None,
    compare_baseline: Annotated[bool, typer.Option("--compare-baseline", help="After the run, compare it with the BASELINE run (as `evalh compare` would) and exit 1 on a regression.")] = False,
    min_coverage: Annotated[float | None, typer.Option("--min-coverage", min=0, max=1, metavar="SHARE", help="With --compare-baseline: the share of the baseline's results each suite must measure (as `evalh compare --min-coverage`; default each suite's min_coverage, else 0.9).")] = None,
    allow_removed_suite: Annotated[list[str] | None, typer.Option("--allow-removed-suite", metavar="SUITE", help="With --compare-baseline: a suite the baseline ran that this run leaves out on purpose (not selected, or removed from the config); never one skipped for a missing key. Repeatable.")] = None,
    until_decided: Annotated[bool, typer.Option("--until-decided", help="With --compare-baseline: run each stochastic suite in rounds, more attempts where the baseline varies, and stop once every gating row is flat or regressed (confidence sequences keep the error rates however often it looks); the rounds are recorded in the run.")] = False,
    fail_on_inconclusive: Annotated[bool, typer.Option("--fail-on-inconclusive", help="With --compare-baseline: exit 3 when the gate passes but a gating row is inconclusive with its estimate on the worse side (as `evalh compare --fail-on-inconclusive`).")] = False,
    max_attempts: Annotated[int | None, typer.Option("--max-attempts", min=1, metavar="N", help="With --until-decided: the most candidate attempts (target calls) per suite and arm; default 8 x its cases (an unchanged candidate usually stops by 2.5 x).")] = None,
    shard: Annotated[str | None, typer.Option("--shard", metavar="K/N", help="Run only the cases whose id hashes to shard K of N (every arm and attempt of a case on one shard; needs --seed); put the shards together with `evalh merge`.")] = None,
    junit_xml: Annotated[Path | None, typer.Option("--junit-xml", metavar="FILE", help="Also write JUnit XML here: a testcase per case (per arm and attempt), failures naming the scorer and why, errors as <error>.", dir_okay=False)] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: RunQuietOpt = False,
) -> None:
    """Run suites against their targets, score every case, and write one run document.

    Exit 0 when every deterministic case passed; 1 when a deterministic case failed or
    errored, when a suite's error rate (errored + judge_error over the results that ran)
    is over its max_error_rate (any regime; a suite where every result errored always is),
    when the run stopped before every case ran (`partial`: budget reached, interrupted),
    when a configured suite was skipped for a missing key (run without --suite: the run
    did not measure it; name the suites to run with --suite), when an advisory suite
    measured nothing, or, with --compare-baseline, when the gate fails against BASELINE (a
    regression, a suite that cannot pass, coverage below its minimum); 2 on bad usage or bad
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

        evalh run --suite live --compare-baseline --until-decided   # decide in rounds
    """
    from evalh.config import load_config
    from evalh.console import err, out, safe_text, warn
    from evalh.core.request.run_request import RunRequest, prepare_request, run_request
    from evalh.jsonio import document_text
    from evalh.report.terminal.progress import ProgressObserver

    cfg = load_config(config)
    request = RunRequest(
        suites=suite, label=label, repeats=repeats, concurrency=concurrency, timeout_s=timeout,
        seed=seed, max_cost_usd=max_cost, max_tokens=max_tokens, no_cache=no_cache,
        resume=resume, dry_run=dry_run, allow_self_judge=allow_self_judge,
        max_error_rate=max_error_rate, compare_baseline=compare_baseline, shard=shard,
        judge_model=judge_model, sleep_ms=sleep_ms, iterations=iterations, processes=procs,
        min_coverage=min_coverage, allow_removed_suites=tuple(allow_removed_suite or ()),
        until_decided=until_decided, max_attempts=max_attempts,
        fail_on_inconclusive=fail_on_inconclusive,
    )
    if until_decided and repeats is not None:
        from evalh.errors import EvalhError

        raise EvalhError("--until-decided allots each case its attempts from the baseline: "
                         "drop --repeats (--max-attempts sets the budget)")
    if (until_decided or max_attempts is not None or fail_on_inconclusive) and not compare_baseline:
        from evalh.errors import EvalhError

        raise EvalhError("--until-decided, --max-attempts and --fail-on-inconclusive need "
                         "--compare-baseline: they decide against the baseline")
    gate_flags = [f for f, given in (("--min-coverage", min_coverage is not None),
                                     ("--allow-removed-suite", bool(allow_removed_suite))) if given]
    if gate_flags and not compare_baseline:
        from evalh.errors import EvalhError

        verb = "need" if len(gate_flags) > 1 else "needs"
        raise EvalhError(f"{' and '.join(gate_flags)} {verb} --compare-baseline: a gate against the baseline, "
                         "and without it nothing is compared")
    talk = not quiet and not json_out

    def say(note: str) -> None:
        if talk:
            err().print(note, markup=False, highlight=False)

    prepared = prepare_request(cfg, request, runs_dir, say=say)
    for warning in prepared.warnings:
        warn(warning)
    if prepared.resume_note and talk:
        err().print(prepared.resume_note, markup=False, highlight=False)

    def load_reference() -> LoadedBaseline:
        from evalh.baseline import load_baseline

        # every run it names, of one configuration; one run: its header (its facts are read
        # from its document after the run, with the run's)
        from evalh.core.request.run_request import in_rounds

        # in rounds, the baseline's attempts per case set the allocation: its results are read
        return load_baseline(prepared.config.root, prepared.store, header_only=not in_rounds(prepared))

    # the run comes back without its results: what is printed is read from its document
    outcome = run_request(prepared, ProgressObserver(enabled=talk), load_reference=load_reference, results=False)
    if outcome.estimate is not None:
        from evalh.core.request.run_request import in_rounds, rounds_settings
        from evalh.core.run.estimate import add_detectable
        from evalh.report.terminal.estimate import render_estimate

        add_detectable(outcome.estimate, prepared.prepared.plan, _baseline_runs(prepared),
                       rounds=in_rounds(prepared), max_attempts=rounds_settings(prepared)[0])
        if json_out:
            out().file.write(document_text(outcome.to_dict()))
        else:
            render_estimate(outcome.estimate, out())
        return
    if junit_xml is not None and outcome.run is not None:
        from evalh.atomic import atomic_write_bytes
        from evalh.report.junit import run_to_junit_xml

        full = prepared.store.load(outcome.run.run_id)  # a testcase per result: every one
        atomic_write_bytes(junit_xml, run_to_junit_xml(full).encode("utf-8"))  # refused: exit 4
    for reason in outcome.reasons:  # what fails the run that the results table does not say
        err().print(safe_text(reason, style="red"))
    if json_out:
        out().file.write(document_text(outcome.to_dict()))
    else:
        if not quiet and outcome.run is not None:
            from evalh.core.run.retained import not_passed
            from evalh.report.terminal.run import render_run

            # the failures it lists (at most 20 a suite), not every result
            render_run(not_passed(prepared.store, outcome.run.run_id, limit=20), out())
            err().print(f"wrote {outcome.path}", markup=False, highlight=False)
        if outcome.comparison is not None:
            from evalh.report.compare_render import emit_comparison

            emit_comparison(outcome.comparison, notes=outcome.notes)
    if outcome.code:
        raise typer.Exit(code=outcome.code)


def _baseline_runs(prepared: PreparedRequest) -> list[Run]:
    """The runs BASELINE names, for the noise a dry run plans with; none when there is no
    BASELINE or a run it names cannot be read (the plan then uses the worst case)."""
    from evalh.baseline import read_baseline_ids
    from evalh.errors import EvalhError

    ids = read_baseline_ids(prepared.config.root) or []
    try:
        return [prepared.store.load(i) for i in ids]
    except (EvalhError, OSError, ValueError):
        return []
