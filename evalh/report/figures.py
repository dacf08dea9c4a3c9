"""The suite-level figures a run holds in `suites.<S>.details`, laid out once as tables.

Scorers leave facts about a whole suite in its details: the `classification` scorer its
per-lens confusion report, the judges their counts (low-confidence splits among them), the
pairwise judge its consistency under order swap; the run keeps its policy sweep's ranking
in `suites.<S>.sweep`. `suite_figures` turns each into a
`Figure` — a titled table of strings with notes and flags — and every surface draws those
tables as they are (terminal and markdown through `blocks`, the HTML report with one
macro, the dashboard with one function), so a figure is laid out in one place only.

Rates are `rate(value, numerator, denominator)` — `n/a (0/0)` over zero — as everywhere in
the report. Each arm's verdict distributions are figures too. The worst lens of a classification is the one of lowest *effective* recall
(an error on a known positive counts as a miss), so a lens that errors on every call is
the worst lens, never left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evalh.numbers import num, rate
from evalh.report.models import ArmReport, Figure, Report


def _int(v: Any) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else 0


def _f(v: Any) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def _lens_rate(lens: Mapping[str, Any], name: str, num_key: str) -> str:
    den = _int(lens.get(f"{name}_denominator"))
    return rate(_f(lens.get(name)) if den else None, _int(lens.get(num_key)), den)


def classification(scorer: str, fact: Mapping[str, Any], arm: str | None = None) -> Figure:
    """One arm's per-lens confusion report (`evalh.core.analysis.classify.confusion_report`: its
    `lenses`, `macro` and `worst`) as a table: counts, each rate over its denominator, the
    macro row, the worst lens by effective recall, and every lens that errored on every call
    flagged."""
    lenses: Mapping[str, Any] = fact.get("lenses") or {}
    where = f" [{arm}]" if arm is not None else ""
    fig = Figure(kind="classification", scorer=scorer, arm=arm, title=f"{scorer}{where}: per lens",
                 columns=["lens", "n", "tp", "fp", "tn", "fn", "errored", "precision", "recall",
                          "effective recall", "fp rate"])
    effective: dict[str, float] = {}
    recalls: dict[str, float] = {}
    for name in sorted(lenses):
        lens = lenses[name]
        if not isinstance(lens, Mapping):
            continue
        fig.rows.append([name, str(_int(lens.get("n"))), *(str(_int(lens.get(k))) for k in ("tp", "fp", "tn", "fn", "errored")),
                         _lens_rate(lens, "precision", "tp"), _lens_rate(lens, "recall", "tp"),
                         _lens_rate(lens, "effective_recall", "tp"), _lens_rate(lens, "fp_rate", "fp")])
        er = _f(lens.get("effective_recall"))
        if er is not None and _int(lens.get("effective_recall_denominator")):
            effective[name] = er
        r = _f(lens.get("recall"))
        if r is not None and _int(lens.get("recall_denominator")):
            recalls[name] = r
        if _int(lens.get("n")) and _int(lens.get("errored")) == _int(lens.get("n")):
            fig.flags.append(f"{scorer}{where}: lens {name} errored on every call ({_int(lens.get('n'))})")
    macro = fact.get("macro") or {}
    if macro:
        def m(key: str) -> str:
            entry = macro.get(key) or {}
            v = _f(entry.get("value"))
            return ("n/a" if v is None else f"{v:.1%}") + f" ({_int(entry.get('lenses'))} lenses)"
        fig.rows.append(["macro", "", "", "", "", "", "", m("precision"), m("recall"), m("effective_recall"), m("fp_rate")])
    worst = None
    if effective:
        low = min(effective.values())
        tied = sorted(k for k, v in effective.items() if v == low)
        worst = tied[0]
        lens = lenses[worst]
        fig.notes.append(f"worst lens: {', '.join(tied)} (effective recall "
                         f"{_lens_rate(lens, 'effective_recall', 'tp')}, an error on a known positive counted as a miss)")
    no_recall = sorted(k for k in lenses if k not in effective)
    if no_recall:
        fig.notes.append(f"no known positive, no recall: {', '.join(map(str, no_recall))}")
    if recalls:
        by_recall = sorted(k for k, v in recalls.items() if v == min(recalls.values()))[0]
        if worst is not None and by_recall != worst:
            fig.notes.append(f"by recall alone (errors left out) the worst lens would be {by_recall}")
    fig.data = {"worst": worst, "effective_recall": effective, "no_recall": no_recall,
                "positive": fact.get("positive"), "unit": fact.get("unit")}
    return fig


def _panel_flag(fig: Figure, scorer: str, fact: Mapping[str, Any]) -> None:
    repeated = fact.get("panel_not_distinct")
    if isinstance(repeated, list) and repeated:
        fig.flags.append(f"{scorer}: the judge panel is not distinct: {', '.join(str(m) for m in repeated)} votes "
                         "more than once (one model's bias, not a consensus of models)")
def classifications(scorer: str, fact: Mapping[str, Any]) -> list[Figure]:
    """The `classification` scorer's suite report as the scorer writes it
    (`{"positive", "unit", "arms": {arm: confusion report}}`): one per-lens figure per arm
    (the arm named when the suite has several, or one not called `default`)."""
    arms = fact.get("arms")
    if not isinstance(arms, Mapping):
        return [classification(scorer, fact)] if isinstance(fact.get("lenses"), Mapping) else []
    named = len(arms) > 1 or any(a != "default" for a in arms)
    return [classification(scorer, {**arms[a], "positive": fact.get("positive"), "unit": fact.get("unit")},
                           str(a) if named else None)
            for a in arms if isinstance(arms[a], Mapping) and isinstance(arms[a].get("lenses"), Mapping)]


def is_classification(fact: Mapping[str, Any]) -> bool:
    """A `classification` scorer's suite report: per arm (what the scorer writes) or one
    confusion report."""
    arms = fact.get("arms")
    if isinstance(arms, Mapping) and "positive" in fact:
        return any(isinstance(a, Mapping) and isinstance(a.get("lenses"), Mapping) for a in arms.values())
    return isinstance(fact.get("lenses"), Mapping) and "macro" in fact


def judge(scorer: str, fact: Mapping[str, Any]) -> Figure:
    keys = [("scored", "scored"), ("judged", "judged"), ("abstained", "abstained"), ("judge_error", "judge error"),
            ("no_majority", "no majority"), ("truncated", "truncated"), ("low_confidence", "low confidence")]
    fig = Figure(kind="judge", scorer=scorer, title=f"{scorer}: judging", columns=[label for _, label in keys])
    scored = _int(fact.get("scored"))
    fig.rows.append([str(_int(fact.get(k))) if k == "scored" else rate(_int(fact.get(k)) / scored if scored else None,
                                                                       _int(fact.get(k)), scored) for k, _ in keys])
    low = _int(fact.get("low_confidence"))
    if low:
        fig.flags.append(f"{scorer}: {low} of {scored} verdicts low-confidence (the judges' repeats split)")
    _panel_flag(fig, scorer, fact)
    verdicts = fact.get("verdicts")
    if isinstance(verdicts, Mapping) and verdicts:
        total = sum(_int(v) for v in verdicts.values())
        fig.notes.append("verdicts: " + ", ".join(f"{k} {rate(_int(v) / total if total else None, _int(v), total)}"
                                                  for k, v in sorted(verdicts.items(), key=lambda kv: -_int(kv[1]))))
    fig.data = {k: _int(fact.get(k)) for k, _ in keys}
    return fig


def pairwise(scorer: str, fact: Mapping[str, Any]) -> Figure:
    fig = Figure(kind="pairwise", scorer=scorer, title=f"{scorer}: pairwise against {fact.get('baseline_arm') or 'the baseline arm'}",
                 columns=["arm", "win", "loss", "tie", "inconsistent", "judge error", "win rate"])
    arms = fact.get("arms") or {}
    for arm in sorted(arms):
        a = arms[arm] if isinstance(arms[arm], Mapping) else {}
        decided = _int(a.get("decided")) or (_int(a.get("win")) + _int(a.get("loss")) + _int(a.get("tie")))
        fig.rows.append([arm, *(str(_int(a.get(k))) for k in ("win", "loss", "tie", "inconsistent", "judge_error")),
                         rate(_int(a.get("win")) / decided if decided else None, _int(a.get("win")), decided)])
    judged = _int(fact.get("pairs_judged"))
    consistent = _int(fact.get("consistent"))
    fig.notes.append(f"consistency under order swap: {rate(consistent / judged if judged else None, consistent, judged)}"
                     f" (flagged below {num(_f(fact.get('min_consistency')), '.0%')})")
    if fact.get("position_bias_flag"):
        fig.flags.append(f"{scorer}: position bias — consistency under order swap "
                         f"{rate(consistent / judged if judged else None, consistent, judged)} is below "
                         f"{num(_f(fact.get('min_consistency')), '.0%')}")
    if fact.get("stopped"):
        fig.flags.append(f"{scorer}: stopped: {fact['stopped']}")
    _panel_flag(fig, scorer, fact)
    controls = fact.get("length_control")
    if controls:
        fig.notes.append(f"length control: {controls}")
    fig.data = {"pairs_judged": judged, "consistent": consistent,
                "consistency_under_order_swap": _f(fact.get("consistency_under_order_swap")),
                "position_bias_flag": bool(fact.get("position_bias_flag"))}
    return fig


def verdict_figures(arms: list[ArmReport]) -> list[Figure]:
    """Each arm's verdict distributions (per result, then per paragraph), one table each."""
    out = []
    for arm in arms:
        for vd in arm.verdicts:
            where = f"{arm.arm} · " if len(arms) > 1 or arm.arm != "default" else ""
            out.append(Figure(
                kind="verdicts", scorer=vd.scorer, arm=arm.arm,
                title=f"{where}{vd.scorer} verdicts" + (" per paragraph" if vd.level == "paragraph" else ""),
                columns=["verdict", "count", "share"],
                rows=[[v.verdict, str(v.count), rate(v.share, v.count, v.denominator)] for v in vd.verdicts],
                data={"level": vd.level, "total": vd.total}))
    return out


def _g(v: Any) -> str:
    f = _f(v)
    return "–" if f is None else f"{f:.4g}"


def _share(m: Mapping[str, Any]) -> str:
    num_, den = m.get("numerator"), m.get("denominator")
    if isinstance(num_, int) and isinstance(den, int):
        return rate(_f(m.get("value")), num_, den)
    return _g(m.get("value"))


def metrics(items: Sequence[Mapping[str, Any]]) -> Figure:
    """The suite's metrics (`suites.S.metrics`): each value with its numerator and
    denominator, its threshold and direction, and a flag where it is crossed."""
    fig = Figure(kind="metrics", scorer="metrics", title="suite metrics",
                 columns=["metric", "arm", "value (numerator/denominator)", "threshold", "flag"])
    for m in items:
        thr = _f(m.get("threshold"))
        where = "–" if thr is None else ("> " if m.get("direction", "above") == "above" else "< ") + f"{thr:g}"
        flag = "FLAG" if m.get("flag") else ("error" if m.get("error") else "–")
        fig.rows.append([str(m.get("name")), str(m.get("arm") or "–"), _share(m), where, flag])
        if m.get("length_ratio") is not None:
            fig.notes.append(f"{m.get('name')}: mean length ratio of those pairs (longer ÷ shorter) {_g(m.get('length_ratio'))}")
        if m.get("error"):
            fig.notes.append(f"{m.get('name')}: {m.get('error')}")
        if m.get("flag"):
            arm = f" ({m['arm']})" if m.get("arm") else ""
            fig.flags.append(f"metric {m.get('name')}{arm} = {_share(m)} crosses its threshold {where}"
                             + (" (gates compare)" if m.get("gate") else ""))
    notes = list(dict.fromkeys(str(m["note"]) for m in items if m.get("note")))
    fig.notes += [f"{n}" for n in notes]
    fig.data = {"metrics": [dict(m) for m in items]}
    return fig


def contrast(c: Mapping[str, Any]) -> Figure:
    """One named contrast: the claim `arm − against`, paired over cases, with its rules."""
    fig = Figure(kind="contrast", scorer=str(c.get("name")), arm=str(c.get("arm")),
                 title=f"claim {c.get('name')}: {c.get('arm')} − {c.get('against')}, paired over cases",
                 columns=["figure", "cases", str(c.get("arm")), str(c.get("against")), "difference",
                          f"{_f(c.get('confidence')) or 0.95:.0%} interval", "method"])
    for f in c.get("figures") or []:
        low, high = _f(f.get("low")), _f(f.get("high"))
        interval = "–" if low is None or high is None else f"[{low:.4g}, {high:.4g}]"
        fig.rows.append([str(f.get("figure")), str(f.get("cases", "–")), _g(f.get("arm_mean")), _g(f.get("against_mean")),
                         _g(f.get("difference")), interval, str(f.get("method"))])
        if f.get("note"):
            fig.notes.append(f"{f.get('figure')}: {f.get('note')}")
    for r in c.get("rules") or []:
        fig.notes.append(f"rule {r.get('rule')}: {'holds' if r.get('passed') else 'FAILS'} — {r.get('why')}")
    fig.notes.append(f"rules judged on the {c.get('on', 'interval')}; only named contrasts are claims, the other arms are context")
    if c.get("passed") is False:
        fig.flags.append(f"contrast {c.get('name')} fails its rules" + (" (gates the run)" if c.get("gate") else ""))
    fig.data = dict(c)
    return fig


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def _policy(p: Any) -> str:
    return ", ".join(f"{k}={v}" for k, v in p.items()) if isinstance(p, Mapping) else "–"


SWEEP_ROWS = 10
"""Candidates a sweep figure lists (the current policy's row too, wherever it ranks)."""


def sweep(doc: Mapping[str, Any], top: int = SWEEP_ROWS) -> Figure:
    """A policy sweep's ranking (`suites.S.sweep`, the `evalh.sweep/1` document): the first
    `top` candidates with their accuracy over its denominator, under- and over-calls, the
    winner if any, and whether the win is within noise (`evalh.core.analysis.sweep_noise`)."""
    from evalh.core.analysis.sweep_models import Margin
    from evalh.core.analysis.sweep_noise import margin_text

    arm = str(doc.get("arm") or "default")
    if doc.get("error"):
        fig = Figure(kind="sweep", scorer="sweep", arm=arm, title="policy sweep: not ranked")
        fig.flags.append(f"policy sweep: not ranked: {doc['error']}")
        fig.data = {"error": str(doc["error"])}
        return fig
    objective = str(doc.get("objective") or "accuracy")
    params = [str(p) for p in doc.get("params") or []]
    miss = doc.get("errored") == "miss"
    balanced = objective == "balanced_accuracy"
    fig = Figure(kind="sweep", scorer="sweep", arm=arm,
                 title=f"policy sweep{'' if arm == 'default' else f' [{arm}]'}: {doc.get('measure')} against the label "
                       f"{doc.get('label') or '(expected)'}, "
                       f"ranked by {objective.replace('_', ' ')}",
                 columns=["rank", *params, *(["balanced accuracy"] if balanced else []), "accuracy (right/n)",
                          "under", "over", *(["errored"] if miss else []), ""])
    rows = [r for r in doc.get("candidates") or [] if isinstance(r, Mapping)]
    recommended, tied = doc.get("recommended"), bool(doc.get("tied_top"))
    kept = doc.get("candidates_kept")
    kept = kept if isinstance(kept, int) and not isinstance(kept, bool) else len(rows)
    # (place in the whole ranking, row): a run keeps its first `kept` rows and the current one
    placed = [(i if i < kept else kept + 1 + i, r) for i, r in enumerate(rows)]
    shown = [(i, r) for i, r in placed if i < top or r.get("current")]
    for k, (i, r) in enumerate(shown):
        if k and shown[k - 1][0] != i - 1:
            fig.rows.append(["…"] + [""] * (len(fig.columns) - 1))
        marks = ["recommended"] if recommended is not None and r.get("params") == recommended else \
            ["tied top"] if tied and r.get("rank") == 1 else []
        if r.get("current"):
            marks.append("current")
        values = _map(r.get("params"))
        n, correct = _int(r.get("n")), _int(r.get("correct"))
        fig.rows.append([str(r.get("rank")), *(str(values.get(p, "–")) for p in params),
                         *([num(_f(r.get("balanced_accuracy")))] if balanced else []),
                         rate(_f(r.get("accuracy")) if n else None, correct, n),
                         str(_int(r.get("under_calls"))), str(_int(r.get("over_calls"))),
                         *([str(_int(r.get("errored")))] if miss else []), " · ".join(marks)])
    total = _int(doc.get("candidates_total")) or len(rows)
    obj = objective.replace("_", " ")
    if recommended is not None and doc.get("won_on") == "fewer_under_calls":
        fig.notes.append(f"winner: {_policy(recommended)}, on the declared tie-break (fewer under-calls): "
                         f"it ties the runner-up on {obj}")
    elif recommended is not None:
        noise = {True: "within noise of the runner-up", False: "beyond noise",
                 None: "not to be told from noise"}[doc.get("within_noise")]
        fig.notes.append(f"winner: {_policy(recommended)}, a strict win on {obj}, {noise}")
    elif tied:
        fig.notes.append(f"no winner: {len(doc.get('tied_top') or [])} candidates tie at the top on {obj} "
                         f"(the data does not discriminate)")
    else:
        fig.notes.append("no winner: only one candidate")
    margins = []
    for m in doc.get("margins") or []:
        if isinstance(m, Mapping):
            try:
                margins.append(Margin(**m))
            except TypeError:
                continue
    fig.notes += [margin_text(m, objective, tied=recommended is None) for m in margins]
    o, lo = _map(doc.get("observations")), _map(doc.get("left_out"))
    unscored = [f"{_int(o.get('undecided'))} without a measure", f"{_int(o.get('errored'))} with an errored input "
                + ("counted as a miss for every candidate" if miss else "excluded"), f"{_int(o.get('unlabelled'))} unlabelled"]
    left = [f"{_int(lo.get('above_observed'))} with a threshold above the greatest observed value {lo.get('max_observed')}",
            f"{_int(lo.get('not_decreasing'))} with tiers not strictly decreasing"]
    left = [t for t in left if not t.startswith("0 ")]
    fig.notes.append(
        f"{len(shown)} of {total} candidates shown; scored on {_int(o.get('scored'))} of {_int(o.get('total'))} results"
        + (f" ({', '.join(unscored)})" if _int(o.get("scored")) != _int(o.get("total")) or miss else "")
        + (f"; left out of the grid: {', '.join(left)}" if left else ""))
    cur = doc.get("current") if isinstance(doc.get("current"), Mapping) else None
    if cur is not None and cur.get("note"):
        fig.notes.append(f"the current policy ({_policy(cur.get('params'))}) is not a candidate: {cur['note']}")
    fig.notes.append("under / over: decisions milder / harsher than the label. Advisory only: a person edits "
                     "the policy; evalh never writes it")
    beaten = next((m for m in margins if m.other_current and m.within_noise is False), None)
    if beaten is not None:
        fig.flags.append(f"policy sweep: {_policy(beaten.top)} beats the current {_policy(beaten.other)} beyond noise "
                         f"({obj} {beaten.difference:+.3f}, {beaten.confidence:.0%} CI {beaten.low:+.3f} to {beaten.high:+.3f})")
    fig.data = {k: doc.get(k) for k in ("measure", "label", "objective", "recommended", "won_on", "within_noise",
                                         "tied_top", "current", "margins", "verdict")}
    fig.data["candidates_total"] = total
    return fig


def labels_agreement(rep: Any) -> Figure:
    """Human labels of a run (`evalh.labels.label_report`'s `LabelReport`): agreement
    between raters on each rated field before adjudication — each pair's overlap, raw
    agreement and Cohen's kappa, Fleiss' kappa and Krippendorff's alpha over all raters, a
    null figure with why — then each judge against the agreed labels, and the counts."""
    fig = Figure(kind="labels", scorer="labels", title="labels: agreement between raters, before adjudication",
                 columns=["field", "raters", "overlap", "raw agreement", "kappa", "why null"])
    for fname, f in rep.inter_rater.fields.items():
        for p in f.pairs:
            a = p.agreement
            fig.rows.append([fname, " × ".join(p.raters), str(a.overlap), num(a.raw_agreement, none="null"),
                             num(a.kappa, none="null"), a.kappa_null_reason or ""])
        fk = f.fleiss_kappa
        fig.rows.append([fname, "all: Fleiss' kappa", str(fk.subjects), "", num(fk.kappa, none="null"), fk.null_reason or ""])
        for level, ka in f.krippendorff_alpha.items():
            fig.rows.append([fname, f"all: Krippendorff's alpha ({level})", str(ka.subjects), "",
                             num(ka.alpha, none="null"), ka.null_reason or ""])
    c = rep.counts
    fig.notes.append(f"{c.results} results: {c.agreed} agreed, {c.disputed} disputed, {c.not_reviewed} not reviewed, "
                     f"{c.withheld} withheld, {c.missing} missing ({c.adjudicated} adjudicated, {c.single_rated} "
                     f"single-rated); raters: {', '.join(rep.raters) or 'none'}")
    for j in rep.judges:
        ja = j.agreement
        fig.notes.append(f"judge {j.scorer} vs agreed human labels: overlap {ja.overlap}, raw agreement "
                         f"{num(ja.raw_agreement, none='null')}, kappa {num(ja.kappa, none='null')}"
                         + (f" ({ja.kappa_null_reason})" if ja.kappa_null_reason else ""))
    fig.notes.append(f"releaseDecision: {rep.release_decision} · judgeUse: {rep.judge_use}")
    if rep.stale.results:
        fig.flags.append(f"labels: {len(rep.stale.results)} rated result(s) changed since rated: stale, not used")
    fig.data = {"inter_rater": rep.inter_rater.to_dict(), "suites": list(rep.suites)}
    return fig


def bill(parts: Mapping[str, Any]) -> Figure | None:
    """A suite's bill (`evalh.core.results.bill.suite_bill`): target, judge and generator
    calls apart and in total — their calls, cached replies, tokens and cost. None when
    nothing was spent or counted (no tokens, no known cost, no cached reply, no judge or
    generator call: a product called in-process with nothing to bill)."""
    from evalh.numbers import money_exact

    total = parts["total"]
    if not (total.tokens_in or total.tokens_out or total.cost_usd is not None or total.cached
            or parts["judge"].calls or parts["generator"].calls):
        return None
    fig = Figure(kind="bill", scorer="bill", title="the bill: target, judge and generator calls",
                 columns=["calls of", "calls", "cached", "tokens in", "tokens out", "cost"])
    for name in ("target", "judge", "generator", "total"):
        p = parts[name]
        fig.rows.append([name, "–" if p.calls is None else str(p.calls), str(p.cached), str(p.tokens_in),
                         str(p.tokens_out), money_exact(p.cost_usd, "–" if not (p.tokens_in or p.tokens_out) else "unknown")
                         + (" + unpriced" if p.unpriced else "")])
    fig.notes.append("cost: what the calls cost at list price (what --max-cost counts); a cached reply costs "
                     "nothing and is left out of latency figures; target calls: the results that ran")
    if total.unpriced:
        fig.flags.append("bill: some calls have no known price: the total cost is a lower bound")
    fig.data = {k: p.document() for k, p in parts.items()}
    return fig


def suite_figures(details: Mapping[str, Any], arms: list[ArmReport] | None = None,
                  suite_metrics: Sequence[Mapping[str, Any]] | None = None,
                  contrasts: Sequence[Mapping[str, Any]] | None = None,
                  swept: Mapping[str, Any] | None = None, costs: Mapping[str, Any] | None = None,
                  advisory: set[str] | frozenset[str] = frozenset()) -> list[Figure]:
    """Every figure of a suite: its claims (named contrasts) and metrics first, its
    policy sweep's ranking, its arms' verdict distributions, what its scorers left in its
    details, by scorer name, and last its bill (`costs`). A figure of an `advisory`
    scorer is labelled advisory: its verdicts never decide a case's status."""
    out = [contrast(c) for c in contrasts or []]
    if suite_metrics:
        out.append(metrics(suite_metrics))
    if swept:
        out.append(sweep(swept))
    out += verdict_figures(arms or [])
    for key in sorted(details):
        fact = details[key]
        if not isinstance(fact, Mapping):
            continue
        if is_classification(fact):
            out += classifications(key, fact)
        elif "consistency_under_order_swap" in fact:
            out.append(pairwise(key, fact))
        elif "scored" in fact and "low_confidence" in fact:
            out.append(judge(key, fact))
    for fig in out:
        if fig.scorer in advisory and fig.kind in ("verdicts", "judge", "pairwise", "classification"):
            fig.title += " (advisory)"
            fig.notes.insert(0, f"{fig.scorer} is advisory: its verdicts are recorded and never decide a case's "
                                "status, the pass rate or an exit code")
            fig.data["advisory"] = True
    paid = bill(costs) if costs else None
    if paid is not None:
        out.append(paid)
    return out


def across_runs(report: Report) -> list[Figure]:
    """With several runs: each suite's verdict distributions side by side, one column per
    run (share with its denominator: `0.0% (0/n)` where the run's scorer never gave that
    verdict, `–` where the run has no such scorer or suite)."""
    if len(report.runs) < 2:
        return []
    names = {r.run_id: (r.label or r.run_id) for r in report.runs}
    order = [r.run_id for r in report.runs]
    table: dict[tuple[str, str | None, str], dict[str, Figure]] = {}
    for s in report.suites:
        for fig in s.figures:
            if fig.kind == "verdicts":
                key = (s.suite, fig.arm if len(s.arms) > 1 else None, fig.title.split(" · ")[-1])
                table.setdefault(key, {})[s.run_id] = fig
    out = []
    for (suite, arm, title), per_run in table.items():
        if len(per_run) < 2:
            continue
        verdicts = list(dict.fromkeys(row[0] for f in per_run.values() for row in f.rows))
        cells = {rid: {row[0]: row[2] for row in f.rows} for rid, f in per_run.items()}
        out.append(Figure(
            kind="verdicts_across_runs", scorer=next(iter(per_run.values())).scorer, arm=arm,
            title=f"{suite}{' · ' + arm if arm else ''}: {title} across runs",
            columns=["verdict", *(names[r] for r in order)],
            rows=[[v, *(cells[r].get(v, rate(0.0, 0, int(per_run[r].data.get("total") or 0))) if r in cells else "–"
                        for r in order)] for v in verdicts]))
    return out


def corrected(d: Mapping[str, Any]) -> Figure:
    """A judge's rate corrected by human labels (`CorrectedRate.to_dict`): the whole and each
    stratum, with the judge alone and humans alone beside it; null with every reason where
    the correction is not valid; the figure under the earlier judge after a rejudge."""
    arm = str(d.get("arm") or "default")
    fig = Figure(kind="corrected", scorer=str(d.get("scorer")), arm=None if arm == "default" else arm,
                 title=f"{d.get('scorer')}: rate of {d.get('positive')!r} corrected by human labels (PPI++)"
                       + ("" if arm == "default" else f" [{arm}]"),
                 columns=["", "corrected", "95% interval", "labelled", "judged", "labels worth", "judge alone",
                          "humans alone"])

    def row(name: str, e: Mapping[str, Any] | None, top: Mapping[str, Any]) -> list[str]:
        if e is None or e.get("estimate") is None:
            return [name, "null", "null", str(_int(top.get("labelled"))), str(_int(top.get("judged"))), "–",
                    num(_f(top.get("judge_rate")), none="–"), num(_f(top.get("human_rate")), none="–")]
        lo, hi = e["interval_95"]
        eff = _f(e.get("effective_labels"))
        return [name, num(_f(e["estimate"])), f"[{num(lo)}, {num(hi)}]", str(_int(e.get("labelled"))),
                str(_int(e.get("judged"))), "–" if eff is None else f"{eff:.0f}",
                num(_f(top.get("judge_rate")), none="–") if name in ("all", "before rejudge") else "",
                num(_f(top.get("human_rate")), none="–") if name in ("all", "before rejudge") else ""]

    fig.rows.append(row("all", d, d))
    strata = d.get("strata") or {}
    if len(strata) > 1:
        fig.rows += [row(f"stratum {k}", v, d) for k, v in strata.items()]
    before = d.get("before_rejudge")
    if isinstance(before, Mapping):
        fig.rows.append(row("before rejudge", before, before))
        fig.notes.append(f"before rejudge: the same human labels with the earlier judge "
                         f"({', '.join(before.get('judge_models') or []) or 'unknown'})")
    for reason in d.get("null_reasons") or []:
        fig.notes.append(f"null: {reason}")
    fig.flags.extend(str(n) for n in d.get("notes") or [])
    need = d.get("labels_needed")
    if isinstance(need, Mapping):
        fig.notes.append(f"labels needed for width {need.get('target_width')}: "
                         + (str(need.get("labels_needed")) if need.get("labels_needed") is not None
                            else f"null ({need.get('reason')})"))
    if _int(d.get("labels_outside_draw")):
        fig.notes.append(f"{_int(d.get('labels_outside_draw'))} labelled result(s) outside the random draw: not used")
    fig.notes.append("valid only for a random sample drawn by evalh (export-requests --sample); see "
                     "docs/labels-and-sweeps.md")
    fig.data = dict(d)
    return fig
