"""`evalh compare`: two runs, one verdict per suite, exit codes CI can gate on."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
        help="Exit 1 when a suite regressed, or could not be compared because the candidate "
        "produced nothing comparable.")] = False,
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
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Compare two runs suite by suite and say what regressed.

    Deterministic suites are compared case by case with zero tolerance: a case that passed
    and now fails or errors is a regression, named. Stochastic suites are compared with
    allowances (from each suite's `thresholds` in evalh.toml, or the flags here) and 95 %
    intervals over the paired cases (clustered by `metadata.group`): `regressed` only when
    the interval lies wholly beyond the allowance, with every row of every suite held to
    one family-wise level (Holm); `flat` when it rules out a change beyond the allowance;
    `inconclusive` otherwise, with the cases that would settle it. A suite whose candidate
    produced nothing comparable (every case errored or could not be judged) fails the gate.
    See docs/methodology.md.

    Exit codes: 0 the gate passes; 1 a regression (or a suite that cannot pass) with
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
            notes = baseline.notes(cand_run)
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
