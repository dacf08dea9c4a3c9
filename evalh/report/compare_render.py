"""Renderers of a `Comparison`: terminal (rich), JSON, markdown and JUnit XML.

Every string from a run (suite names, case ids, labels, config values) is untrusted: the
terminal gets it as `rich.text.Text` (never markup), markdown gets it escaped, and XML is
built with ElementTree (escaped) after dropping characters XML 1.0 cannot carry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.core.compare.models import CaseRef, Comparison, SuiteComparison
from evalh.report.compare_cells import allowance, delta, detail, interval, metric_label, value
from evalh.report.render import md_escape

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.core.compare.notes import CompareNotes
    from evalh.models import Run

MAX_NAMED = 20
"""Named cases shown per list in the terminal and markdown (JSON keeps them all)."""

_LISTS = (
    ("regressed", "regressed"), ("improved", "improved"), ("errored_new", "newly errored"),
    ("errored_fixed", "no longer erroring"), ("judge_error", "judge errors (not compared)"),
    ("changed", "changed content (not compared)"), ("added", "added"), ("removed", "removed"),
    ("not_run", "not run"),
)


def emit_comparison(
    cmp: Comparison, fmt: str = "table", junit_xml: Path | None = None,
    notes: CompareNotes | None = None, *, quiet: bool = False,
    runs: tuple[Run, Run] | None = None,
) -> None:
    """Render on stdout in `fmt` (`table`, `json`, `markdown` or `md`), write the JUnit file, and say the verdict on stderr
    (`evalh compare`, `evalh run --compare-baseline`; not with `quiet`). `notes`: what a
    BASELINE base adds (pooled runs, noise floor). `runs`: the (base, candidate) runs
    compared, whose results give the JUnit testcases their time and failure bodies."""
    from evalh.console import err, out

    if fmt == "json":
        out().file.write(to_json(cmp, notes))
    elif fmt in ("markdown", "md"):
        out().file.write(to_markdown(cmp, notes=notes))
    else:
        render_terminal(cmp, out(), notes=notes)
    if junit_xml is not None:
        from evalh.atomic import atomic_write_bytes  # never half a file for the reporter to read

        atomic_write_bytes(junit_xml, to_junit_xml(cmp, runs).encode("utf-8"))  # refused: exit 4
    if fmt != "table" and not quiet:
        err().print(
            f"evalh compare: {cmp.verdict} ({cmp.base.run_id} → {cmp.candidate.run_id})",
            markup=False, highlight=False,
        )


def to_json(cmp: Comparison, notes: CompareNotes | None = None) -> str:
    """The `evalh.compare/2` document, indented, keys in their stable model order (the
    notes' keys, `baseline_runs` and `baseline_noise`, last)."""
    from evalh.core.compare.notes import comparison_doc
    from evalh.jsonio import document_text

    return document_text(comparison_doc(cmp, notes))


# --------------------------------------------------------------------------- formatting


def list_label(s: SuiteComparison, key: str) -> str:
    """Display title of a named-case list; in a stochastic suite the pass/fail lists are
    flips, named for the record (the verdict comes from the metric rows)."""
    if s.regime == "stochastic" and key in ("regressed", "improved"):
        return "flipped pass → fail" if key == "regressed" else "flipped fail → pass"
    return dict(_LISTS)[key]


def family_text(cmp: Comparison) -> str:
    """One line on the family of tests the gate is."""
    f = cmp.family
    if not f.size:
        return "no statistical test in this comparison (deterministic suites are by case name)"
    how = "Holm" if len(set(f.weights.values())) <= 1 else "weighted Holm"
    if f.select is not None:
        how += f"; a row takes part when its p(worse) ≤ {f.select:g}"
    return (f"{f.size} gating row(s) tested as one family ({how}): the chance that any is "
            f"falsely called regressed is at most {f.alpha * 100:g} %")


def gate_text(cmp: Comparison) -> list[str]:
    """The gate's verdict and why, one line each."""
    if not cmp.fails_gate:
        return ["gate: pass"]
    return ["gate: FAIL", *(f"  {r}" for r in cmp.gate_reasons)]


def case_text(ref: CaseRef) -> str:
    arm = f" [{ref.arm}]" if ref.arm != "default" else ""
    return f"{ref.case_id}{arm}: {ref.base or '—'} → {ref.candidate or '—'}"


def run_text(cmp: Comparison, side: str) -> str:
    ref = cmp.base if side == "base" else cmp.candidate
    bits = [ref.run_id]
    if ref.label:
        bits.append(f"({ref.label})")
    if ref.git_sha:
        bits.append(f"git {ref.git_sha[:10]}{' dirty' if ref.git_dirty else ''}")
    if ref.status != "complete":
        bits.append(f"[{ref.status}]")
    return " ".join(bits)


def difference_text(d: Any) -> str:
    where = f"{d.suite}: " if d.suite else ""
    return f"{where}{d.key}: {d.base!r} → {d.candidate!r}"


def coverage_cell(s: SuiteComparison) -> str:
    """A suite's coverage as a table cell: `measured/of (share)`, `—` for a suite one run
    has (or whose base measured nothing)."""
    c = s.coverage
    if c is None or c.share is None:
        return "—"
    mark = " ✗" if c.below else ""
    return f"{c.measured}/{c.of} ({c.share * 100:.3g} %){mark}"


def _power(cmp: Comparison) -> float:
    return float(cmp.policy.get("power", 0.8))


def _confidence(cmp: Comparison) -> str:
    return f"{float(cmp.policy.get('confidence', 0.95)) * 100:g} %"


# --------------------------------------------------------------------------- markdown


def to_markdown(cmp: Comparison, *, max_named: int = MAX_NAMED, notes: CompareNotes | None = None) -> str:
    """GitHub-flavoured markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`."""
    e = md_escape
    out = [
        f"## evalh compare: **{cmp.verdict.upper()}**",
        "",
        f"base {e(run_text(cmp, 'base'))} → candidate {e(run_text(cmp, 'candidate'))}",
        "",
    ]
    if notes is not None and notes.header:
        out += [f"> {e(line)}" for line in notes.header] + [""]
    if cmp.config_differences:
        out += ["> **The runs' configuration differs:**"]
        out += [f"> - {e(difference_text(d))}" for d in cmp.config_differences]
        out += [""]
    out += [f"> **warning:** {e(w)}" for w in cmp.warnings]
    if cmp.warnings:
        out.append("")
    gate = gate_text(cmp)
    out += [f"**{e(gate[0])}**" + ("" if len(gate) == 1 else ":")]
    out += [f"- {e(line.strip())}" for line in gate[1:]]
    out += ["", f"_{e(family_text(cmp))}_", ""]
    out += ["| suite | regime | verdict | compared | coverage | cases needed |",
            "| --- | --- | --- | ---: | ---: | ---: |"]
    for s in cmp.suites.values():
        needed = str(s.cases_needed) if s.cases_needed else ""
        partial = " (partial)" if s.partial else ""
        out.append(f"| {e(s.suite)} | {s.regime or '—'} | **{s.verdict}**{partial} | "
                   f"{s.counts.compared} | {coverage_cell(s)} | {needed} |")
    out.append("")
    for s in cmp.suites.values():
        out += _suite_markdown(cmp, s, max_named, notes.suites.get(s.suite, []) if notes else [])
    return "\n".join(out).rstrip() + "\n"


def _suite_markdown(
    cmp: Comparison, s: SuiteComparison, max_named: int, lines: list[str]
) -> list[str]:
    e = md_escape
    out = [f"### {e(s.suite)}: {s.verdict}", ""]
    out += [f"- {e(r)}" for r in [*s.reasons, *lines]]
    if s.reasons or lines:
        out.append("")
    if s.metrics:
        out += [
            f"| metric | n | base | candidate | delta | allowance | {_confidence(cmp)} interval "
            "| verdict | method |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
        ]
        for m in s.metrics:
            out.append(
                f"| {e(metric_label(m))} | {m.n} | {value(m, m.base)} | {value(m, m.candidate)} | "
                f"{delta(m)} | {allowance(m)} | {interval(m)} | **{m.verdict}** | {e(detail(m, _power(cmp)))} |"
            )
        out.append("")
    for key, _ in _LISTS:
        refs: list[CaseRef] = getattr(s.cases, key)
        if not refs:
            continue
        out += [f"<details><summary>{e(list_label(s, key))} ({len(refs)})</summary>", ""]
        out += [f"- {e(case_text(r))}" for r in refs[:max_named]]
        if len(refs) > max_named:
            out.append(f"- … and {len(refs) - max_named} more (see `--format json`)")
        out += ["", "</details>", ""]
    return out


# --------------------------------------------------------------------------- terminal

_STYLE = {"regressed": "bold red", "improved": "green", "inconclusive": "yellow",
          "incomparable": "yellow", "flat": "", "added": "cyan", "removed": "cyan"}


def render_terminal(
    cmp: Comparison, console: Console, *, max_named: int = MAX_NAMED, notes: CompareNotes | None = None
) -> None:
    """Draw the comparison: differences and warnings first, then one table per suite."""
    from rich import box
    from rich.table import Table
    from rich.text import Text as RichText

    from evalh.console import inert

    def Text(text: str, style: str = "") -> RichText:  # noqa: N802 - untrusted: no markup, no escapes
        return RichText(inert(text), style=style)

    console.print(RichText.assemble(
        ("base ", "dim"), inert(run_text(cmp, "base")), ("  →  candidate ", "dim"),
        inert(run_text(cmp, "candidate"))
    ))
    for line in notes.header if notes else []:
        console.print(Text(line, style="yellow" if line.startswith("warning:") else ""))
    if cmp.config_differences:
        console.print(Text("the runs' configuration differs:", style="yellow"))
        for d in cmp.config_differences:
            console.print(Text(f"  {difference_text(d)}", style="yellow"))
    for w in cmp.warnings:
        console.print(Text(f"warning: {w}", style="yellow"))
    for s in cmp.suites.values():
        title = RichText.assemble(inert(f"{s.suite} ({s.regime or 'regime changed'}): "),
                              (s.verdict + (" (partial)" if s.partial else ""), _STYLE[s.verdict]))
        table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                      collapse_padding=True)
        for col in ("metric", "base", "cand", "delta", "allowed", f"{_confidence(cmp)} CI", "verdict"):
            table.add_column(col, justify="left" if col in ("metric", "verdict") else "right",
                             no_wrap=col in ("metric", "verdict"))
        for m in s.metrics:
            table.add_row(Text(metric_label(m)), value(m, m.base), value(m, m.candidate),
                          delta(m), allowance(m), interval(m), Text(m.verdict, style=_STYLE[m.verdict]))
        if s.metrics:
            console.print(table)
        else:
            console.print(title)
        for m in s.metrics:
            console.print(Text(f"  {metric_label(m)}: {detail(m, _power(cmp))}", style="dim"))
        if s.coverage is not None and not any(r.startswith(s.coverage.line()) for r in s.reasons):
            console.print(Text(f"  {s.coverage.line()}", style="red" if s.coverage.below else "dim"))
        for r in [*s.reasons, *(notes.suites.get(s.suite, []) if notes else [])]:
            console.print(Text(f"  {r}"))
        for key, _ in _LISTS:
            refs: list[CaseRef] = getattr(s.cases, key)
            if refs:
                console.print(Text(f"  {list_label(s, key)} ({len(refs)}):", style=_STYLE.get(key, "")))
                for ref in refs[:max_named]:
                    console.print(Text(f"    {case_text(ref)}"))
                if len(refs) > max_named:
                    console.print(Text(f"    … and {len(refs) - max_named} more (--format json)", style="dim"))
    console.print(Text(family_text(cmp), style="dim"))
    for i, line in enumerate(gate_text(cmp)):
        console.print(Text(line, style=("bold red" if cmp.fails_gate else "green") if i == 0 else ""))
    console.print(RichText.assemble("overall: ", (cmp.verdict, _STYLE[cmp.verdict])))


# --------------------------------------------------------------------------- JUnit XML


def to_junit_xml(cmp: Comparison, runs: tuple[Run, Run] | None = None) -> str:
    """JUnit XML of a comparison (`evalh.report.junit.compare_to_junit_xml`)."""
    from evalh.report.junit import compare_to_junit_xml

    return compare_to_junit_xml(cmp, runs)
