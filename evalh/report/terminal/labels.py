"""Terminal rendering of `evalh label report`: agreement, judge confusion, strata."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from evalh.numbers import num

if TYPE_CHECKING:
    from rich.console import Console


def render_label_report(rep: dict[str, Any], console: Console) -> None:
    """Plain-text tables; labels and verdicts are untrusted text, shown via rich Text only."""
    from rich import box
    from rich.table import Table

    from evalh.console import safe_text

    c = rep["counts"]
    console.print(safe_text(f"labels of run {rep['run_id']} · suites {', '.join(rep['suites'])}"
                       + (f" · arm {rep['arm']}" if rep["arm"] else ""), style="bold"))
    console.print(safe_text(f"releaseDecision: {rep['releaseDecision']}"))
    console.print(safe_text(f"judgeUse: {rep['judgeUse']}"))
    console.print(safe_text(
        f"{c['results']} results: {c['failed_captures']} failed captures, {c['agreed']} agreed, "
        f"{c['disputed']} disputed, {c['abstained']} abstained, {c['unlabelled']} unlabelled "
        f"({c['adjudicated']} adjudicated, {c['single_rated']} single-rated); raters: "
        f"{', '.join(rep['raters']) or 'none'}"
    ))
    t = Table(title=safe_text("agreement between raters, before adjudication"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("raters", "overlap", "raw agreement", "kappa", "why null"):
        t.add_column(col)
    for p in rep["inter_rater"]["pairs"]:
        t.add_row(safe_text(" × ".join(p["raters"])), safe_text(str(p["overlap"])), safe_text(num(p["raw_agreement"], none="null")),
                  safe_text(num(p["kappa"], none="null")), safe_text(p["kappa_null_reason"] or ""))
    console.print(t if rep["inter_rater"]["pairs"] else safe_text("agreement between raters: fewer than two raters"))
    for j in rep["judges"]:
        console.print(safe_text(
            f"judge {j['scorer']} vs agreed human labels: overlap {j['overlap']}, raw agreement "
            f"{num(j['raw_agreement'], none='null')}, kappa {num(j['kappa'], none='null')}"
            + (f" ({j['kappa_null_reason']})" if j["kappa_null_reason"] else "")
        ))
        for human, row in sorted(j["confusion"].items()):
            cells = ", ".join(f"judge {k}: {v}" for k, v in sorted(row.items()))
            console.print(safe_text(f"  human {human}: {cells}"))
    s = Table(title=safe_text("strata (reported apart)"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("stratum", "cases", "agreed", "disputed", "unlabelled", "rate", "95% Wilson", "labels"):
        s.add_column(col, no_wrap=col != "labels", overflow="fold")
    for row in rep["strata"]:
        rate = "–" if row["rate"] is None else f"{row['rate']:.3f} ({row['rate_numerator']}/{row['rate_denominator']})"
        ci = "null" if row["interval_95"] is None else f"[{row['interval_95'][0]:.3f}, {row['interval_95'][1]:.3f}]"
        labels = ", ".join(f"{k} {v}" for k, v in row["labels"].items())
        s.add_row(*(safe_text(x) for x in (row["stratum"], str(row["cases"]), str(row["agreed"]),
                                      str(row["disputed"]), str(row["unlabelled"]), rate, ci, labels)))
    console.print(s)
    why: dict[str, list[str]] = {}
    for row in rep["strata"]:
        for reason in row["interval_null_reasons"]:
            why.setdefault(reason, []).append(row["stratum"])
    for reason, strata in why.items():
        console.print(safe_text(f"no interval for {', '.join(strata)}: {reason}", style="dim"))
