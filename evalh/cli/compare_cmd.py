"""`evalh compare`: two runs, one verdict per suite, exit codes CI can gate on."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, QuietOpt, RunsDirOpt
from evalh.cli.project import open_project

if TYPE_CHECKING:
    from evalh.core.compare.corrected import CorrectedPair
    from evalh.store import RunStore


class CompareFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"
    md = "md"  # as `evalh report` spells it


def _refs(store: RunStore, root: Path, base: str | None, candidate: str | None) -> tuple[str, str]:
    from evalh.baseline import require_baseline
    from evalh.errors import RunNotFound

    if base is None:
        base = require_baseline(root)
    if candidate is None:
        ids = store.list_ids()
        if not ids:
            from evalh.scaffold import first_run_hint
            raise RunNotFound(f"no runs in {store.runs_dir}: {first_run_hint()}")
        candidate = ids[-1]
    return base, candidate


@translate_errors
def compare(
    base: Annotated[str | None, typer.Argument(
        metavar="BASE", help="Base run: id or path to a run document (default: the BASELINE "
        "file; several runs there are pooled per case).",
        show_default=False)] = None,
    candidate: Annotated[str | None, typer.Argument(
        metavar="CANDIDATE", help="Candidate run: id or path (default: the newest run).",
        show_default=False)] = None,
    fail_on_regression: Annotated[bool, typer.Option(
        "--fail-on-regression",
        help="Exit 1 when a suite regressed, or cannot pass: the candidate produced nothing "
        "comparable, measured less than the suite's minimum coverage of the base's results, or "
        "did not run a suite the base ran.")] = False,
    fail_on_inconclusive: Annotated[bool, typer.Option(
        "--fail-on-inconclusive",
        help="Exit 3 when nothing failed but a row is inconclusive with its estimate on the "
        "worse side.")] = False,
    fmt: Annotated[CompareFormat, typer.Option(
        "--format", "-f", metavar="FORMAT",
        help="table (terminal), json (stable keys) or markdown (or md).")] = CompareFormat.table,
    json_out: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
    junit_xml: Annotated[Path | None, typer.Option(
        "--junit-xml", metavar="FILE", help="Also write JUnit XML here: each compared case a testcase with "
        "the candidate's time, each regression a failure saying what regressed (both sides' status, "
        "score and scorers).", dir_okay=False)] = None,
    pass_rate_drop: Annotated[float | None, typer.Option(
        "--pass-rate-drop", min=0.0, max=1.0, metavar="SHARE",
        help="Allowed pass-rate drop (0.05 = 5 points) for every stochastic suite.")] = None,
    mean_score_drop: Annotated[float | None, typer.Option(
        "--mean-score-drop", min=0.0, max=1.0, metavar="SHARE", help="Allowed mean-score drop.")] = None,
    cost_increase_pct: Annotated[float | None, typer.Option(
        "--cost-increase-pct", min=0.0, metavar="PCT", help="Allowed cost increase, in percent.")] = None,
    latency_increase_pct: Annotated[float | None, typer.Option(
        "--latency-increase-pct", min=0.0, metavar="PCT", help="Allowed rise of the typical latency per case (geometric mean), in percent.")] = None,
    corrected: Annotated[bool, typer.Option(
        "--corrected", help="Also gate each judged suite on its judge's pass rate corrected by human labels "
        "(PPI++): both runs need a random labelled sample (`export-requests --sample`) with ratings "
        "imported; a row like the others (same rule, allowance --pass-rate-drop, family).")] = False,
    baseline_max_age: Annotated[float, typer.Option(
        "--baseline-max-age", min=0.0, metavar="DAYS",
        help="Warn when the BASELINE run is older than this (days before the candidate).")] = 30.0,
    merge_ref: Annotated[str | None, typer.Option(
        "--base-ref", metavar="REF", envvar="EVALH_BASE_REF",
        help="Count the commits the BASELINE is behind the candidate's merge base with REF "
        "(e.g. origin/main; default: behind the candidate's commit).")] = None,
    min_coverage: Annotated[float | None, typer.Option(
        "--min-coverage", min=0.0, max=1.0, metavar="SHARE",
        help="Share of the base's (case, arm, attempt) results the candidate must measure with a "
        "trustworthy result, for every suite (default: each suite's min_coverage, else 0.9).")] = None,
    allow_removed_suite: Annotated[list[str] | None, typer.Option(
        "--allow-removed-suite", metavar="SUITE",
        help="A suite the base ran that the candidate left out on purpose (its config removed it, "
        "or the run did not select it): named, not failing the gate. Repeatable. Never covers a "
        "suite skipped for a missing key.")] = None,
    estimand: Annotated[str | None, typer.Option(
        "--estimand", metavar="fixed-suite|population",
        help="What pass-rate and score rows estimate, for every suite: the change over these "
        "very cases (fixed-suite, the default) or over the population they were drawn from; "
        "default: each suite's estimand key.")] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Compare two runs suite by suite and say what regressed.

    Deterministic suites are compared case by case with zero tolerance: a case that passed
    and now fails or errors is a regression, named. Stochastic suites are compared with
    allowances (from each suite's `thresholds` in evalh.toml, or the flags here) and 95 %
    intervals over the paired cases (clustered by `metadata.group`): `regressed` only when
    the interval lies wholly beyond the allowance, with every gating row of every suite
    held to one family-wise level (weighted Holm; cost and latency gate only when a suite
    names them in `gate`); `flat` when it rules out a change beyond the allowance;
    `inconclusive` otherwise, with the cases that would settle it. Every gating row says
    which change it catches with 80 % power. A suite whose candidate produced nothing
    comparable (every case errored, could not be judged or changed content) fails the gate,
    and so does one whose candidate measured less than its minimum coverage
    (--min-coverage, default 0.9) of the base's results, or a suite the base ran and the
    candidate did not (unless --allow-removed-suite names it). See docs/ci.md and
    docs/methodology.md.

    Against BASELINE, it says how old the baseline is: its run's date and how many commits
    behind the candidate's merge base (--base-ref) its commit is, where git can tell; a
    baseline older than --baseline-max-age days gets a warning (never a failure).

    Exit codes: 0 the gate passes; 1 a regression, or a suite that cannot pass (nothing
    comparable, coverage below its minimum, not run by the candidate), with
    --fail-on-regression; 2 bad usage, a missing run or an unreadable run document; 3 with
    --fail-on-inconclusive when nothing failed but a row is inconclusive on the worse side.

    Examples:

        evalh compare                          # BASELINE vs the newest run

        evalh compare RUN_A RUN_B --pass-rate-drop 0.03

        evalh compare --fail-on-regression --format markdown >> "$GITHUB_STEP_SUMMARY"
    """

    from functools import partial

    from evalh.console import warn
    from evalh.core.compare.decide import ComparePolicy, compare_runs
    from evalh.core.compare.gate import gate_exit_code
    from evalh.gcpause import gc_paused
    from evalh.report.compare_render import emit_comparison

    if json_out:  # --json is --format json, as on every command that prints data
        if fmt not in (CompareFormat.table, CompareFormat.json):
            from evalh.errors import EvalhError

            raise EvalhError(f"--json is --format json: drop --format {fmt.value}")
        fmt = CompareFormat.json
    policy = ComparePolicy(
        pass_rate_drop=pass_rate_drop, mean_score_drop=mean_score_drop,
        cost_increase_pct=cost_increase_pct, latency_p50_increase_pct=latency_increase_pct,
        min_coverage=min_coverage, allow_removed_suites=tuple(sorted(set(allow_removed_suite or []))),
        estimand=_estimand(estimand),
    )
    root, store = open_project(config, runs_dir)
    base_ref, cand_ref = _refs(store, root, base, candidate)
    with gc_paused():  # two large runs: millions of acyclic objects (see evalh.gcpause)
        notes = None
        baseline = None
        if base is None:  # the BASELINE marker: its runs pooled per case
            from evalh.baseline import load_baseline

            baseline = load_baseline(root, store, header_only=junit_xml is None)
        if junit_xml is None and (baseline is None or len(baseline.ids) == 1):
            # the facts it pairs, a line at a time (no input, output or trace kept)
            from evalh.core.compare.load import load_compared

            loaded = load_compared(store, base_ref, cand_ref, parallel=True)
            base_run, cand_run = loaded.base, loaded.candidate
            compare = loaded.compare
        else:  # JUnit XML quotes outputs; a pooled baseline is pooled from its results
            load = store.load if junit_xml is not None else store.load_facts
            cand_run = load(cand_ref)
            base_run = baseline.run if baseline is not None else load(base_ref)
            compare = partial(compare_runs, base_run, cand_run)
        if baseline is not None:
            from evalh.core.compare.baseline_age import baseline_age

            notes = baseline.notes(cand_run)
            age = baseline_age(baseline.runs, cand_run, root, base_ref=merge_ref, max_age_days=baseline_max_age)
            notes.header[:0] = age.lines()
            notes.extra["baseline_age"] = age.to_dict()
        if base_run.run_id == cand_run.run_id and not base_run.pooled_from:
            warn(f"comparing run {base_run.run_id} with itself")
        # the runs as given (a path reads the run and its label sidecar there); a pooled
        # BASELINE by the id its runs are pooled under
        pairs = _corrected_pairs(store, base_ref if baseline is None else base_run.run_id,
                                 cand_ref) if corrected else None
        cmp = compare(policy, corrected=pairs) if pairs else compare(policy)
        emit_comparison(cmp, fmt.value, junit_xml, notes, quiet=quiet, runs=(base_run, cand_run))
    code = gate_exit_code(cmp, fail_on_regression=fail_on_regression, fail_on_inconclusive=fail_on_inconclusive)
    if code:
        raise typer.Exit(code=code)



def _corrected_pairs(store: RunStore, base_id: str, cand_id: str) -> dict[tuple[str, str], CorrectedPair]:
    from evalh.console import warn
    from evalh.labels.corrected import corrected_pairs

    pairs, warnings = corrected_pairs(store, base_id, cand_id)
    for line in warnings:
        warn(f"--corrected: {line}")
    return pairs


def _estimand(value: str | None) -> Literal["fixed-suite", "population"] | None:
    """`--estimand`, checked: one line and exit 2 for anything else."""
    if value is None or value in ("fixed-suite", "population"):
        return value  # type: ignore[return-value]
    from evalh.errors import EvalhError

    raise EvalhError(f"--estimand: {value!r} is neither fixed-suite nor population")
