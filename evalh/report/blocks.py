"""A report laid out as plain blocks (headings, tables, notes) of plain strings.

The terminal and markdown renderers both draw these blocks, so the two can never show
different numbers. Strings here are untrusted (case ids, labels, rationales): each
renderer escapes them for its own medium.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evalh.numbers import money as money  # re-exported: the HTML template's filters
from evalh.numbers import num as num
from evalh.numbers import rate as rate
from evalh.report.models import (
    ArmReport,
    Counts,
    Economics,
    Headline,
    Interval,
    Repeats,
    Report,
    SuiteReport,
)


def _cut(text: str, limit: int) -> str:
    """At most `limit` characters; a cut text ends in an ellipsis, so it reads as cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


TERMINAL_RAW_ROWS = 50


@dataclass
class Heading:
    text: str
    level: int = 2


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    title: str | None = None


@dataclass
class Note:
    text: str
    warn: bool = False
    verdict: bool = False
    """A run's verdict against the BASELINE: drawn first and prominent."""


Block = Heading | Table | Note


# --------------------------------------------------------------------------- formatting


# `rate`, `num` and `money` are evalh.numbers' (one formatter for every surface).


def share(value: float | None, part: int, whole: int) -> str:
    return rate(value, part, whole)


def ms(value: float | None) -> str:
    return num(value, ".0f")


def ci(iv: Interval) -> str:
    if iv.low is None or iv.high is None:
        return "none"
    text = f"{iv.low:.1%}–{iv.high:.1%}"
    if iv.of != "pass rate over cases":  # with repeats: not the interval of the pass rate beside it
        text += f" ({iv.successes}/{iv.n} all attempts)"
    return text


def tokens(e: Economics) -> str:
    if e.tokens_in is None and e.tokens_out is None:
        return "unknown"
    return f"{e.tokens_in or 0} in / {e.tokens_out or 0} out ({e.tokens_reported} reported)"


def cost(e: Economics) -> str:
    """The target's cost, its unpriced and its cached results marked (a cached reply
    costs nothing and has no latency of its own: it is left out of p50 and p95)."""
    text = money(e.cost_usd)
    if e.cost_unknown:
        text += f" (+{e.cost_unknown} unpriced)"
    if e.cached:
        text += f" ({e.cached} cached: $0, no latency)"
    return text


def calibration(cal: dict[str, Any]) -> str:
    """Accuracy with its denominator when the suite recorded one."""
    if cal.get("correct") is not None and cal.get("n") is not None:
        return rate(cal.get("accuracy"), cal["correct"], cal["n"])
    return num(cal.get("accuracy"), ".1%") + " (no denominator recorded)"


def cases_attempts(cases: int, results: int) -> str:
    """`20 × 3` for 20 cases of 3 results (attempts) each; `20` when each ran once; the
    mean count per case when attempts are unequal."""
    if not cases or results == cases:
        return str(cases)
    return f"{cases} × {results / cases:.3g}"


def mean_score(c: Counts) -> str:
    return "–" if c.mean_score is None else f"{c.mean_score:.3f} (n={c.mean_score_denominator})"


# --------------------------------------------------------------------------- layout


def _arm_name(suite: SuiteReport, arm: ArmReport) -> str:
    if len(suite.arms) == 1 and arm.arm == "default":
        return suite.suite
    return f"{suite.suite} · {arm.arm}" + (" (baseline arm)" if arm.baseline else "")


def _repeats_blocks(name: str, arm: ArmReport, max_raw: int | None, raw_shown: bool | None = True) -> list[Block]:
    """An arm's raw attempts and raw runs (folded to a note with `raw_shown=False`, left
    out with None: drawn before the summary), then its flakiness and pass@k."""
    rep = arm.repeats
    if rep is None:
        return []
    out: list[Block]
    if raw_shown is None:
        out = []
    elif not raw_shown:
        out = [Note(f"{name}: raw attempts of {len(rep.raw)} cases folded (--raw shows them; "
                    "every aggregate below is computed from them)")]
    else:
        out = _raw_blocks(name, rep, max_raw) + _raw_run_blocks(name, arm, max_raw)
    total = rep.stable_pass + rep.flaky + rep.stable_fail + rep.unknown
    flaky = Table(columns=["stable pass", "flaky", "stable fail", "unknown", "attempts per case"],
                  title=f"{name}: flakiness over {total} cases")
    per = str(rep.attempts_min) if rep.equal_attempts else f"{rep.attempts_min}–{rep.attempts_max} (unequal)"
    flaky.rows.append([str(rep.stable_pass), str(rep.flaky), str(rep.stable_fail), str(rep.unknown), per])
    pk = Table(columns=["k", "pass@k", "pass^k", "cases"], title=f"{name}: pass@k and pass^k")
    for p in rep.pass_at_k:
        pk.rows.append([str(p.k), num(p.pass_at_k), num(p.pass_hat_k), str(p.cases)])
    return [*out, flaky, pk]


def _raw_blocks(name: str, rep: Repeats, max_raw: int | None) -> list[Block]:
    width = rep.attempts_max
    raw = Table(columns=["case", *[f"#{i}" for i in range(width)], "passes", "mean score", "variance", "class"],
                title=f"{name}: raw attempts (every aggregate below is computed from these)")
    rows = rep.raw if max_raw is None else rep.raw[:max_raw]
    for row in rows:
        cells = [f"{a.status}" + (f" {a.score:.2f}" if a.score is not None else "") for a in row.attempts]
        cells += [""] * (width - len(cells))
        raw.rows.append([row.case_id, *cells, f"{row.passes}/{row.decisive}",
                         num(row.mean_score), num(row.score_variance, ".4f"), row.flakiness.replace("_", " ")])
    out: list[Block] = [raw]
    if max_raw is not None and len(rep.raw) > max_raw:
        out.append(Note(f"… {len(rep.raw) - max_raw} more cases (use --format md, json or html for all)"))
    return out


def _raw_run_blocks(name: str, arm: ArmReport, max_raw: int | None) -> list[Block]:
    """Every result with its scorers' and criteria's values and its measured sizes, then
    the arithmetic of each case's mean and variance (`evalh.report.raw_runs`)."""
    runs = arm.runs
    if runs is None or not runs.rows:
        return []
    shuffled = any(r.order for r in runs.rows)
    t = Table(columns=["case", "run", "status", *(["order"] if shuffled else []), *runs.columns,
                       "chars", "words", "tokens"],
              title=f"{name}: raw runs (every result, before any aggregate)")
    rows = runs.rows if max_raw is None else runs.rows[:max_raw]
    for r in rows:
        t.rows.append([r.case_id, str(r.attempt + 1), r.status, *([r.order or "–"] if shuffled else []),
                       *(num(r.values.get(c), ".3g") if r.values.get(c) is not None else "–" for c in runs.columns),
                       "–" if r.chars is None else str(r.chars), "–" if r.words is None else str(r.words),
                       "–" if r.tokens is None else ("~" if r.tokens_derived else "") + str(r.tokens)])
    out: list[Block] = [t, Note("chars and words are measured by evalh (code points, whitespace-separated "
                                "words); tokens are the provider's, or ~ derived as chars/4 (an estimate)")]
    if max_raw is not None and len(runs.rows) > max_raw:
        out.append(Note(f"… {len(runs.rows) - max_raw} more results (use --format md, json or html for all)"))
    lines = runs.arithmetic if max_raw is None else runs.arithmetic[:max_raw]
    out += [Note(f"{name}: {line}") for line in lines]
    return out


def _summary_table(suite: SuiteReport) -> Table:
    t = Table(columns=["suite / arm", "cases × attempts", "passed", "failed", "errored", "judge err", "skipped",
                       "pass rate", "95% CI", "mean score", "p50 ms", "p95 ms", "tokens", "cost"])
    for arm in suite.arms:
        c, e = arm.counts, arm.economics
        t.rows.append([
            _arm_name(suite, arm), cases_attempts(arm.cases, c.n), str(c.passed), str(c.failed), str(c.errored),
            str(c.judge_error), str(c.skipped), rate(c.pass_rate, c.passed, c.pass_rate_denominator),
            ci(arm.interval), mean_score(c), ms(e.latency_ms_p50), ms(e.latency_ms_p95),
            tokens(e), cost(e),
        ])
    return t


def _arm_detail(suite: SuiteReport, arm: ArmReport) -> list[Block]:
    name = _arm_name(suite, arm)
    out: list[Block] = []  # verdict distributions are figures (evalh.report.figures), drawn with the suite
    if arm.worst:
        t = Table(columns=["case", "attempts", "failed", "errored", "judge err", "bad paragraphs", "why"],
                  title=f"{name}: worst cases")
        for w in arm.worst:
            paras = f"{w.bad_paragraphs}/{w.paragraphs}" if w.paragraphs else "–"
            t.rows.append([w.case_id, str(w.attempts), str(w.failed), str(w.errored),
                           str(w.judge_error), paras, _cut(w.why or "", 200)])
        out.append(t)
    for b in arm.breakdowns:
        t = Table(columns=[b.field, "cases", "passed", "failed", "errored", "judge err", "pass rate",
                           "mean score", "p50 ms"], title=f"{name}: by {b.field}")
        for g in b.rows:
            c = g.counts
            t.rows.append([g.value, str(g.cases), str(c.passed), str(c.failed), str(c.errored),
                           str(c.judge_error), rate(c.pass_rate, c.passed, c.pass_rate_denominator),
                           mean_score(c), ms(g.latency_ms_p50)])
        out.append(t)
        if b.note:
            out.append(Note(b.note))
    if arm.tools is not None:
        tu = arm.tools
        t = Table(columns=["tool", "cases using it", "results using it", "calls", "cases that went bad"],
                  title=f"{name}: tools used ({tu.results_with_trace} results with a trace, "
                        f"{tu.results_without_trace} without)")
        for row in tu.rows:
            t.rows.append([row.tool, str(row.cases), str(row.results), str(row.calls),
                           share(row.bad_share, row.bad, row.denominator)])
        out.append(t)
    return out


def headline_name(h: Headline) -> str:
    if h.arm == "default":
        return h.suite
    return f"{h.suite} · {h.arm}" + (" (baseline arm)" if h.baseline_arm else "")


def summary_table(report: Report) -> Table:
    """The one-screen summary: every suite (and arm) of every run, its pass rate with the
    denominator, what went wrong, and its verdict against the baseline."""
    several = len(report.runs) > 1
    cols = ["suite / arm", "regime", "pass rate", "cases × attempts", "errored", "mean score", "flags"]
    if report.baseline:
        cols.insert(6, "vs baseline")
    if several:
        cols.insert(0, "run")
    t = Table(columns=cols)
    for h in report.summary:
        row = [headline_name(h), h.regime, rate(h.pass_rate, h.passed, h.pass_rate_denominator),
               cases_attempts(h.cases, h.results),
               str(h.errored), num(h.mean_score), "; ".join(h.flags) or "–"]
        if report.baseline:
            row.insert(6, h.versus or "–")
        if several:
            row.insert(0, h.run_id)
        t.rows.append(row)
    return t


def baseline_notes(report: Report) -> list[Note]:
    """Each run's verdict against the BASELINE and its gate, one line each (a warning when
    the gate fails): what the summary, the HTML report and the dashboard's run page open with."""
    out = []
    for b in report.baseline:
        if b.note:
            out.append(Note(f"run {b.run_id} vs baseline {b.base}: {b.note}", verdict=True))
            continue
        gate = "gate FAIL: " + "; ".join(b.gate_reasons) if b.fails_gate else "gate passes"
        out.append(Note(f"run {b.run_id} vs baseline {b.base}: {b.verdict}; {gate}", warn=b.fails_gate, verdict=True))
    return out


def summary_blocks(report: Report) -> list[Block]:
    """What a report opens with: each run's verdict against the baseline (the gate and its
    reasons) first, then the summary table."""
    out: list[Block] = [Heading("Summary", 1), *baseline_notes(report), summary_table(report),
                        Note("pass rate = passed / (passed + failed) over results (attempts); "
                             "cases × attempts: distinct cases and results (attempts) per case")]
    for fig in report.figures:
        out.append(Table(columns=fig.columns, rows=fig.rows, title=fig.title))
    return out


def raw_first_blocks(report: Report) -> list[Block]:
    """Every repeated suite's raw attempts and raw runs, run by run: what a document that
    puts raw runs before any aggregate (`--format md`) opens with."""
    out: list[Block] = []
    several = len(report.runs) > 1
    for suite in report.suites:
        for arm in suite.arms:
            if arm.repeats is not None:
                name = (f"run {suite.run_id} · " if several else "") + _arm_name(suite, arm)
                out += _raw_blocks(name, arm.repeats, None) + _raw_run_blocks(name, arm, None)
    if out:
        out = [Heading("Raw runs (every result, before any aggregate)", 1), *out]
    return out


def layout(report: Report, *, max_raw: int | None = None, raw: bool = True, raw_first: bool = False) -> list[Block]:
    """The report as blocks: the summary first, then run by run and suite by suite, each
    suite's raw attempts (folded to a note with `raw=False`) before its aggregates. With
    `raw_first`, every raw table comes before the summary (and is not repeated below)."""
    out: list[Block] = raw_first_blocks(report) if raw_first else []
    out += summary_blocks(report)
    for run in report.runs:
        head = f"run {run.run_id}" + (f" · {run.label}" if run.label else "")
        out.append(Heading(head, 1))
        git = (run.git_sha or "no git")[:10] + ("-dirty" if run.git_dirty else "")
        out.append(Note(f"status {run.status} · started {run.started_at} · git {git}"))
        if run.status != "complete":
            out.append(Note(f"run is {run.status}: {run.status_reason or 'no reason recorded'}", warn=True))
        out.extend(Note(line, warn=True) for line in run.not_run)
        for suite in (s for s in report.suites if s.run_id == run.run_id):
            out.append(Heading(f"suite {suite.suite} ({suite.regime})", 2))
            for arm in suite.arms:
                out.extend(_repeats_blocks(_arm_name(suite, arm), arm, max_raw, None if raw_first else raw))
            out.append(_summary_table(suite))
            for arm in suite.arms:
                if arm.interval.reason:
                    out.append(Note(f"{_arm_name(suite, arm)}: no interval: {arm.interval.reason}"))
                elif arm.interval.n is not None:
                    out.append(Note(f"{_arm_name(suite, arm)}: Wilson 95% interval of "
                                    f"{arm.interval.of}, {arm.interval.successes}/{arm.interval.n}"))
            for cal in suite.calibration:
                out.append(Note(f"judge calibration {cal['name']}: accuracy {calibration(cal)}"))
            for note in suite.notes:
                out.append(Note(note))
            out += suite_figure_blocks(suite)
            for arm in suite.arms:
                out.extend(_arm_detail(suite, arm))
    return out


def suite_figure_blocks(suite: SuiteReport) -> list[Block]:
    """A suite's figures as tables, each with its notes and (warning) flags."""
    out: list[Block] = []
    for fig in suite.figures:
        out.append(Table(columns=fig.columns, rows=fig.rows, title=f"{suite.suite}: {fig.title}"))
        out += [Note(n) for n in fig.notes] + [Note(f, warn=True) for f in fig.flags]
    return out


def figure_blocks(report: Report) -> list[Block]:
    """Every suite's figures, suite by suite, and each repeated arm's flakiness and
    pass@k (what `evalh show` prints under its table, drawn as `evalh report` draws them)."""
    out: list[Block] = []
    for suite in report.suites:
        for arm in suite.arms:
            out += _repeats_blocks(_arm_name(suite, arm), arm, None, None)
        out += suite_figure_blocks(suite)
    return out
