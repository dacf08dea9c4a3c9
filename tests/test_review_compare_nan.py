"""Review of issue 10: a custom scorer may return ``float('nan')`` (`CustomScorer._coerce`
accepts any float). The stored run document turns it into null (orjson), but
``evalh run --compare-baseline`` compares the in-memory run, and `compare_runs` then dies
in `plan_row` (``math.ceil(nan)``): a traceback instead of a verdict."""

from __future__ import annotations

import json
import math

from compare_factory import make_run, suite

from evalh.core.compare.decide import compare_runs
from evalh.models import CaseResult


def _run(run_id: str, nan_at: int | None):
    cases = [CaseResult(case_id=f"c{i}", case_digest=f"d{i}", status="passed",
                        score=math.nan if i == nan_at else 0.6 + 0.01 * (i % 7)) for i in range(30)]
    return make_run(run_id, {"s": suite(cases, "stochastic")})


def test_a_nan_score_does_not_crash_compare_and_gives_strict_json() -> None:
    cmp = compare_runs(_run("b", None), _run("c", 3))
    json.dumps(cmp.to_dict(), allow_nan=False)
