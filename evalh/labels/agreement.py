"""Agreement across every rater: Fleiss' kappa and Krippendorff's alpha (nominal, ordinal).

Pure. A subject is one rated thing (a request's field, one claim's field, one dimension);
`units` maps each subject to {rater: label key}. Null (an abstention, "cannot tell") is:

- **nominal**: a category of its own, `(null)` — an abstention against a value is a
  disagreement, as in the pairwise figures;
- **ordinal**: not a point on the scale, so it cannot be ordered; those ratings are left
  out and counted (`null_left_out`).

Each figure is null with its reason where it is undefined: fewer than two raters, no
subject with two ratings, or one value throughout (expected disagreement is zero, so the
coefficient is 0/0 — undefined, not perfect). Fleiss' kappa needs the same raters on every
subject: it uses the subjects every rater rated and says how many it left out.
Checked against statsmodels' `fleiss_kappa` and the `krippendorff` package in the tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evalh.labels.report_models import FleissKappa, KrippendorffAlpha

NULL = "(null)"
CONSTANT = ("constant labels: one value throughout, so expected disagreement is zero and "
            "the coefficient is undefined (not perfect agreement)")


def _cat(v: str | None) -> str:
    return NULL if v is None else v


def fleiss_kappa(units: Mapping[Any, Mapping[str, str | None]]) -> FleissKappa:
    raters = sorted({r for u in units.values() for r in u})
    full = [u for u in units.values() if len(u) == len(raters)]

    def null(reason: str) -> FleissKappa:
        return FleissKappa(raters=len(raters), subjects=len(full), subjects_left_out=len(units) - len(full),
                           kappa=None, null_reason=reason)

    if len(raters) < 2:
        return null("fewer than two raters")
    if not full:
        return null("no subject rated by every rater")
    n = len(raters)
    cats = sorted({_cat(v) for u in full for v in u.values()})
    totals: Counter[str] = Counter()
    p_bar = 0.0
    for u in full:
        counts = Counter(_cat(v) for v in u.values())
        totals.update(counts)
        p_bar += (sum(c * c for c in counts.values()) - n) / (n * (n - 1))
    p_bar /= len(full)
    p_e = sum((totals[c] / (len(full) * n)) ** 2 for c in cats)
    if p_e >= 1.0:
        return null(CONSTANT)
    return FleissKappa(raters=n, subjects=len(full), subjects_left_out=len(units) - len(full),
                       kappa=(p_bar - p_e) / (1 - p_e), null_reason=None, observed=p_bar, expected=p_e)


def krippendorff_alpha(
    units: Mapping[Any, Mapping[str, str | None]], *, level: str = "nominal", order: Sequence[str] | None = None
) -> KrippendorffAlpha:
    """Krippendorff's alpha over every subject with at least two (usable) ratings.

    `level` is `nominal` or `ordinal`; ordinal needs `order`, the label keys from lowest
    to highest (a value outside it is refused by the rubric before it gets here).
    """
    null_left_out = 0
    rows: list[list[str]] = []
    for u in units.values():
        vals: list[str] = []
        for v in u.values():
            if level == "ordinal" and v is None:
                null_left_out += 1
                continue
            vals.append(_cat(v))
        if len(vals) >= 2:
            rows.append(vals)
    raters = {r for u in units.values() for r in u}
    left_out = null_left_out if level == "ordinal" else None

    def result(alpha: float | None, reason: str | None) -> KrippendorffAlpha:
        return KrippendorffAlpha(level=level, subjects=len(rows), alpha=alpha, null_reason=reason,
                                 null_left_out=left_out)

    if len(raters) < 2:
        return result(None, "fewer than two raters")
    if not rows:
        return result(None, "no subject with two ratings")
    # coincidences o[c][k]
    o: dict[tuple[str, str], float] = {}
    for vals in rows:
        m = len(vals)
        for i, a in enumerate(vals):
            for j, b in enumerate(vals):
                if i != j:
                    o[(a, b)] = o.get((a, b), 0.0) + 1.0 / (m - 1)
    n_c: dict[str, float] = {}
    for (a, _b), w in o.items():
        n_c[a] = n_c.get(a, 0.0) + w
    n = sum(n_c.values())
    cats = sorted(n_c)
    if level == "ordinal":
        rank = {c: i for i, c in enumerate(order or [])}
        cats = sorted(n_c, key=lambda c: rank[c])

        def delta(a: str, b: str) -> float:
            lo, hi = sorted((rank[a], rank[b]))
            between = sum(n_c[c] for c in cats if lo <= rank[c] <= hi)
            return float((between - (n_c[a] + n_c[b]) / 2) ** 2)
    else:
        def delta(a: str, b: str) -> float:
            return 0.0 if a == b else 1.0

    d_o = sum(w * delta(a, b) for (a, b), w in o.items())
    d_e = sum(n_c[a] * n_c[b] * delta(a, b) for a in cats for b in cats)
    if d_e == 0:
        return result(None, CONSTANT)
    return result(1.0 - (n - 1) * d_o / d_e, None)
