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
    console.print(safe_text(f"rubric {rep['rubric_sha256'][:12]}…"))
    console.print(safe_text(
        f"{c['results']} results: {c['failed_captures']} failed captures, {c['withheld']} withheld, "
        f"{c['not_reviewed']} not reviewed, {c['agreed']} agreed, {c['disputed']} disputed, "
        f"{c['abstained']} abstained, {c['missing']} missing, {c['unlabelled']} unlabelled "
        f"({c['adjudicated']} adjudicated, {c['single_rated']} single-rated); raters: "
        f"{', '.join(rep['raters']) or 'none'}"
    ))
    stale, other = rep["stale"], rep["other_rubrics"]
    if stale["ratings_of_changed_content"]:
        names = ", ".join(f"{x['suite']}/{x['case_id']}" + (f"#{x['attempt']}" if x["attempt"] else "")
                          for x in stale["results"])
        console.print(safe_text(f"stale (content changed since rated, not used): {names}"))
    if other["ratings"]:
        console.print(safe_text(f"{other['ratings']} rating(s) under {len(other['rubrics'])} other rubric "
                                "version(s): not pooled (report them with --rubric)"))
    cl = rep["claims"]
    if cl["total"]:
        console.print(safe_text(
            f"claims: {cl['total']} ({cl['selected']} selected, {cl['exhaustive']} exhaustive, "
            f"{cl['unattested']} coverage unattested); {cl['unresolved']} unresolved"
            + (f": {', '.join(cl['unresolved_ids'])}" if cl["unresolved_ids"] else "")
        ))
    fields = rep["inter_rater"].get("fields") or {}
    t = Table(title=safe_text("agreement between raters, before adjudication"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("field", "raters", "overlap", "raw agreement", "kappa", "why null"):
        t.add_column(col)
    for fname, f in fields.items():
        for p in f["pairs"]:
            t.add_row(safe_text(fname), safe_text(" × ".join(p["raters"])), safe_text(str(p["overlap"])),
                      safe_text(num(p["raw_agreement"], none="null")), safe_text(num(p["kappa"], none="null")),
                      safe_text(p["kappa_null_reason"] or ""))
        fk, ka = f["fleiss_kappa"], f["krippendorff_alpha"]
        t.add_row(safe_text(fname), safe_text("all: Fleiss' kappa"), safe_text(str(fk["subjects"])), safe_text(""),
                  safe_text(num(fk["kappa"], none="null")), safe_text(fk["null_reason"] or ""))
        for level, a in ka.items():
            t.add_row(safe_text(fname), safe_text(f"all: Krippendorff's alpha ({level})"), safe_text(str(a["subjects"])),
                      safe_text(""), safe_text(num(a["alpha"], none="null")), safe_text(a["null_reason"] or ""))
    console.print(t if any(f["raters"][1:] for f in fields.values()) else safe_text("agreement between raters: fewer than two raters"))
    for j in rep["judges"]:
        console.print(safe_text(
            f"judge {j['scorer']} vs agreed human labels: overlap {j['overlap']}, raw agreement "
            f"{num(j['raw_agreement'], none='null')}, kappa {num(j['kappa'], none='null')}"
            + (f" ({j['kappa_null_reason']})" if j["kappa_null_reason"] else "")
            + {True: "; same rubric as the humans", False: "; NOT the humans' rubric", None: ""}[j.get("same_rubric_as_humans")]
        ))
        for human, row in sorted(j["confusion"].items()):
            cells = ", ".join(f"judge {k}: {v}" for k, v in sorted(row.items()))
            console.print(safe_text(f"  human {human}: {cells}"))
    s = Table(title=safe_text("strata (reported apart)"), title_justify="left", box=box.SIMPLE_HEAD)
    for col in ("stratum", "cases", "agreed", "disputed", "unlabelled", "rate", "95% Wilson", "labels"):
        s.add_column(col, no_wrap=col != "labels", overflow="fold")
    for row in rep["strata"]:
        rate = "–" if row["rate"] is None else f"{num(row['rate'])} ({row['rate_numerator']}/{row['rate_denominator']})"
        ci = "null" if row["interval_95"] is None else f"[{num(row['interval_95'][0])}, {num(row['interval_95'][1])}]"
        labels = ", ".join(f"{k} {v}" for k, v in row["labels"].items())
        s.add_row(*(safe_text(x) for x in (row["stratum"], str(row["cases"]), str(row["agreed"]),
                                      str(row["disputed"]), str(row["unlabelled"]), rate, ci, labels)))
    console.print(s)
    for row in rep["strata"]:
        for r in row.get("rates", []):
            ci = "null" if r["interval_95"] is None else f"[{r['interval_95'][0]:.3f}, {r['interval_95'][1]:.3f}]"
            rate = "–" if r["rate"] is None else f"{r['rate']:.3f} ({r['rate_numerator']}/{r['rate_denominator']})"
            console.print(safe_text(f"{row['stratum']}: {r['name']} {rate}, 95% Wilson {ci}"
                                    + (f" — no interval: {'; '.join(r['interval_null_reasons'])}" if r["interval_95"] is None else "")))
        for d, q in (row.get("dimensions") or {}).items():
            rate = "–" if q["rate"] is None else f"{q['rate']:.3f} ({q['true']}/{q['labelled']})"
            console.print(safe_text(f"{row['stratum']}: {d} ({q['polarity']}) {rate}; {q['missing']} missing, "
                                    f"{q['disputed']} disputed, {q['abstained']} abstained"))
    why: dict[str, list[str]] = {}
    for row in rep["strata"]:
        if row.get("rates") and rep.get("positive") is None:
            continue  # the rubric's rates are above; no --positive rate was asked for
        for reason in row["interval_null_reasons"]:
            why.setdefault(reason, []).append(row["stratum"])
    for reason, strata in why.items():
        console.print(safe_text(f"no interval for {', '.join(strata)}: {reason}", style="dim"))
