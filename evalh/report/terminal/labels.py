"""Terminal rendering of `evalh label report`: agreement, judge confusion, strata."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console

    from evalh.labels.report_models import LabelReport, Rate


def _rate_text(r: Rate) -> tuple[str, str]:
    """The rate with its numerator and denominator, and its interval (or null)."""
    rate = "–" if r.rate is None else f"{num(r.rate)} ({r.numerator}/{r.denominator})"
    ci = "null" if r.interval_95 is None else f"[{num(r.interval_95[0])}, {num(r.interval_95[1])}]"
    return rate, ci


def render_label_report(rep: LabelReport, console: Console) -> None:
    """Plain-text tables; labels and verdicts are untrusted text, shown via rich Text only."""
    from rich import box
    from rich.table import Table

    from evalh.console import safe_text

    c = rep.counts
    console.print(safe_text(f"labels of run {rep.run_id} · suites {', '.join(rep.suites)}"
                            + (f" · arm {rep.arm}" if rep.arm else ""), style="bold"))
    console.print(safe_text(f"releaseDecision: {rep.release_decision}"))
    console.print(safe_text(f"judgeUse: {rep.judge_use}"))
    console.print(safe_text(f"rubric {rep.rubric_sha256[:12]}…"))
    st = rep.ratings_store
    if st:
        unverified = st.get("unverified_files") or []
        console.print(safe_text(
            f"ratings store: {st.get('files')} files, {st.get('records')} records, sha256 {str(st.get('sha256'))[:16]}…"
            + (f"; {len(unverified)} file(s) of the first layout, without record digests: an edit of them "
               "is not detected" if unverified else "")))
    console.print(safe_text(
        f"{c.results} results: {c.failed_captures} failed captures, {c.withheld} withheld, "
        f"{c.not_reviewed} not reviewed, {c.agreed} agreed, {c.disputed} disputed, "
        f"{c.abstained} abstained, {c.missing} missing, {c.unlabelled} unlabelled "
        f"({c.adjudicated} adjudicated, {c.single_rated} single-rated); raters: "
        f"{', '.join(rep.raters) or 'none'}"
    ))
    if rep.stale.results:
        names = ", ".join(f"{x.suite}/{x.case_id}" + (f"#{x.attempt}" if x.attempt else "")
                          for x in rep.stale.results)
        console.print(safe_text(f"stale (content changed since rated, not used): {names}"))
    other = rep.other_rubrics
    if other.ratings:
        console.print(safe_text(f"{other.ratings} rating(s) under {len(other.rubrics)} other rubric "
                                "version(s): not pooled (report them with --rubric)"))
    cl = rep.claims
    if cl.total:
        console.print(safe_text(
            f"claims: {cl.total} ({cl.selected} selected, {cl.exhaustive} exhaustive, "
            f"{cl.unattested} coverage unattested); {cl.unresolved} unresolved"
            + (f": {', '.join(cl.unresolved_ids)}" if cl.unresolved_ids else "")
        ))
    from evalh.report.figures import labels_agreement

    fields = rep.inter_rater.fields
    fig = labels_agreement(rep)  # the table `evalh report`, `show` and the dashboard draw too
    t = Table(title=safe_text("agreement between raters, before adjudication"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in fig.columns:
        t.add_column(col)
    for line in fig.rows:
        t.add_row(*(safe_text(cell) for cell in line))
    console.print(t if any(f.raters[1:] for f in fields.values()) else safe_text("agreement between raters: fewer than two raters"))
    for j in rep.judges:
        ja = j.agreement
        console.print(safe_text(
            f"judge {j.scorer} vs agreed human labels: overlap {ja.overlap}, raw agreement "
            f"{num(ja.raw_agreement, none='null')}, kappa {num(ja.kappa, none='null')}"
            + (f" ({ja.kappa_null_reason})" if ja.kappa_null_reason else "")
            + {True: "; same rubric as the humans", False: "; NOT the humans' rubric", None: ""}[j.same_rubric_as_humans]
        ))
        for human, verdicts in sorted(j.confusion.items()):
            cells = ", ".join(f"judge {k}: {v}" for k, v in sorted(verdicts.items()))
            console.print(safe_text(f"  human {human}: {cells}"))
    s = Table(title=safe_text("strata (reported apart)"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("stratum", "cases", "agreed", "disputed", "unlabelled", "rate", "95% Wilson", "labels"):
        s.add_column(col, no_wrap=col != "labels", overflow="fold")
    for row in rep.strata:
        rate, ci = _rate_text(row.positive) if row.positive is not None else ("–", "null")
        labels = ", ".join(f"{k} {v}" for k, v in row.labels.items())
        s.add_row(*(safe_text(x) for x in (row.stratum, str(row.cases), str(row.counts.agreed),
                                           str(row.counts.disputed), str(row.counts.unlabelled), rate, ci, labels)))
    console.print(s)
    for row in rep.strata:
        for r in row.rates:
            rate, ci = _rate_text(r)
            console.print(safe_text(f"{row.stratum}: {r.name} {rate}, 95% Wilson {ci}"
                                    + (f" — no interval: {'; '.join(r.interval_null_reasons)}" if r.interval_95 is None else "")))
        for d, q in row.dimensions.items():
            rate = "–" if q.rate is None else f"{num(q.rate)} ({q.true}/{q.labelled})"
            console.print(safe_text(f"{row.stratum}: {d} ({q.polarity}) {rate}; {q.missing} missing, "
                                    f"{q.disputed} disputed, {q.abstained} abstained"))
    why: dict[str, list[str]] = {}
    for row in rep.strata:
        if row.rates and rep.positive is None:
            continue  # the rubric's rates are above; no --positive rate was asked for
        for reason in row.interval_null_reasons:
            why.setdefault(reason, []).append(row.stratum)
    for reason, strata in why.items():
        console.print(safe_text(f"no interval for {', '.join(strata)}: {reason}", style="dim"))
    for c in rep.corrected:
        for text in corrected_lines(c.to_dict()):
            console.print(safe_text(text))


def corrected_lines(d: dict[str, Any]) -> list[str]:
    """A corrected rate (`CorrectedRate.to_dict`) as text lines: estimate, interval, counts,
    labels gained, strata, labels needed, the figure before a rejudge, or why it is null."""
    where = f"{d['suite']}" + ("" if d["arm"] == "default" else f" [{d['arm']}]") + f" · judge {d['scorer']}"
    judge = f"judge alone {num(d['judge_rate'], none='–')} over {d['judged']}"
    human = f"humans alone {num(d['human_rate'], none='–')} over {d['labelled']}"
    if d["estimate"] is None:
        lines = [f"corrected rate of {d['positive']!r}, {where}: null ({judge}; {human}) — "
                 + "; ".join(d["null_reasons"])]
    else:
        lo, hi = d["interval_95"]
        gained = d["labels_gained"]
        lines = [f"corrected rate of {d['positive']!r}, {where}: {num(d['estimate'])} "
                 f"(95% [{num(lo)}, {num(hi)}]; {d['labelled']} labelled of {d['judged']} judged; "
                 + (f"worth {d['effective_labels']:.0f} labels, {gained:+.0f} over humans alone"
                    if gained is not None else "labels gained: null (humans agree throughout)")
                 + f"; {judge}; {human})"]
        if len(d["strata"]) > 1:
            lines += [f"  stratum {k}: {num(s['estimate'])} (95% [{num(s['interval_95'][0])}, "
                      f"{num(s['interval_95'][1])}]; {s['labelled']} labelled of {s['judged']})"
                      for k, s in d["strata"].items()]
    need = d.get("labels_needed")
    if need is not None:
        if need["labels_needed"] is None:
            lines.append(f"  labels needed for width {num(need['target_width'])}: null — {need['reason']}")
        else:
            per = ", ".join(f"{k} {v}" for k, v in need["per_stratum"].items() if v)
            lines.append(f"  labels needed for width {num(need['target_width'])} (now {num(need['current_width'])}): "
                         f"{need['labels_needed']} more" + (f" ({per})" if per else ""))
    before = d.get("before_rejudge")
    if before is not None:
        lines += ["  before the rejudge: " + line.strip() for line in corrected_lines(before)[:1]]
    lines += [f"  {n}" for n in d.get("notes") or []]
    if d["labels_outside_draw"]:
        lines.append(f"  {d['labels_outside_draw']} labelled result(s) outside the random draw: not used")
    return lines
