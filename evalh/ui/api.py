"""The dashboard's JSON endpoints, as plain functions of a `RunIndex` (no HTTP here).

Each returns a JSON-ready dict or raises an `EvalhError` (InvalidRunId → 400, RunNotFound
→ 404, other bad input → 400). Verdicts come from `compare_runs` and nothing else, so the
dashboard shows exactly what `evalh compare` decides.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evalh.errors import EvalhError, RunNotFound
from evalh.report.matrix import PREVIEW as PREVIEW  # a grid cell shows this much output
from evalh.report.pairs import SEVERITY, VIEWS
from evalh.ui.index import LoadedRun, RunIndex

MAX_PAGE = 500
STATUSES = ("passed", "failed", "errored", "judge_error", "skipped")

PAIR_FILTERS = VIEWS
"""The views of two runs case by case: the tags a pair must carry one of (None: any); the
same views as the HTML report's filter buttons."""


class BadRequest(EvalhError):
    """A query parameter the dashboard cannot use."""


def _int(params: Mapping[str, str], name: str, default: int, lo: int, hi: int) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}: expected an integer") from None
    if not lo <= value <= hi:
        raise BadRequest(f"{name}: must be between {lo} and {hi}")
    return value


def _bill_total(info: Mapping[str, Any]) -> Any:
    bill = info.get("bill")
    return bill["total"]["cost_usd"] if isinstance(bill, Mapping) else info["aggregate"].get("cost_usd")


def all_cached(info: Mapping[str, Any]) -> bool:
    """Every call of a suite (its results and its judges' calls) was answered from the
    cache: its $0 is no measure of what it costs, and its cost trend shows a gap marked
    `cached` instead."""
    agg = info["aggregate"]
    if not agg.get("n") or agg.get("cached", 0) < agg["n"]:
        return False
    bill = info.get("bill") or {}
    return all((bill.get(p) or {}).get("cached", 0) >= ((bill.get(p) or {}).get("calls") or 0) for p in ("judge", "generator"))


def trends(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Series of the headline numbers across runs, oldest first, one slot per run (null
    where a run has no value). Pass rate, mean score, latency and cost are per suite (and
    per arm when a suite has several): never blended across suites. Beside each series'
    `values`, `num` and `den` give the figure's numerator and denominator where it has
    them (passed of decisive results; scores behind a mean), for the tooltips; `colors`
    maps each suite to its palette slot (`evalh.report.colors`). Cost is the whole bill
    (target, judge and generator calls); a run whose every call was cached is a gap there,
    marked in `cached`."""
    from evalh.report.colors import suite_colors

    ids = [s["run_id"] for s in summaries]
    metrics = ("pass_rate", "mean_score", "latency_ms_p50", "latency_ms_p95", "cost_usd")
    fractions = {"pass_rate": ("passed", "pass_rate_denominator"), "mean_score": (None, "mean_score_denominator")}
    series: dict[str, dict[str, dict[str, list[Any]]]] = {m: {} for m in metrics}
    for j, s in enumerate(summaries):
        for suite, info in s["suites"].items():
            parts = {suite: info["aggregate"]} if not info["arms"] else {
                f"{suite} · {arm}": agg for arm, agg in info["arms"].items()}
            for m in metrics:
                if m == "cost_usd":  # the suite's whole bill (target, judge, generator), whatever its arms
                    slot = series[m].setdefault(suite, {"values": [None] * len(ids), "num": [None] * len(ids),
                                                        "den": [None] * len(ids), "cached": [False] * len(ids)})
                    cached = all_cached(info)
                    slot["cached"][j] = cached
                    slot["values"][j] = None if cached else _bill_total(info)
                    continue
                for name, agg in parts.items():
                    slot = series[m].setdefault(name, {"values": [None] * len(ids), "num": [None] * len(ids),
                                                       "den": [None] * len(ids)})
                    slot["values"][j] = agg.get(m)
                    if m in fractions:
                        num, den = fractions[m]
                        slot["num"][j] = agg.get(num) if num else None
                        slot["den"][j] = agg.get(den)
    out = {m: [{"name": n, **v} for n, v in series[m].items()] for m in metrics}
    whole = [bool(s["suites"]) and all(all_cached(i) for i in s["suites"].values()) for s in summaries]
    out["cost_per_run"] = [{"name": "cost per run", "values": [None if c else s["cost_usd"] for s, c in zip(summaries, whole, strict=True)],
                            "num": [None] * len(ids), "den": [s.get("cost_suites") for s in summaries], "cached": whole}]
    names = [n for m in metrics for n in series[m]]
    return {"runs": [{"run_id": s["run_id"], "label": s["label"], "started_at": s["started_at"]}
                     for s in summaries], "series": out, "colors": suite_colors(names)}


class DashboardApi:
    """The endpoints over one runs directory. `root` is the project root (for BASELINE)."""

    def __init__(self, index: RunIndex, root: Path) -> None:
        self.index = index
        self.root = root
        self._compares: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
        self._paired: OrderedDict[tuple[Any, ...], list[dict[str, Any]]] = OrderedDict()
        self._lock = threading.Lock()

    def baseline(self) -> str | None:
        from evalh.baseline import read_baseline

        try:
            return read_baseline(self.root)
        except EvalhError:
            return None

    def runs(self) -> dict[str, Any]:
        """The history: every run's summary, oldest first, the BASELINE run id, and the
        trends of the headline numbers (the same as `/api/trends`, in one request)."""
        summaries = self.index.summaries()
        return {"runs_dir": str(self.index.runs_dir), "baseline": self.baseline(),
                "runs": summaries, "trends": trends(summaries)}

    def trends(self) -> dict[str, Any]:
        return trends(self.index.summaries())

    def run(self, run_id: str) -> dict[str, Any]:
        """One run's header: its summary and its suites with their result counts. Cheap:
        the case rows are listed, not validated (see `report`)."""
        from evalh.ui.index import history_row

        loaded = self.index.load(run_id)
        if "summary" not in loaded.extra:
            loaded.extra["summary"] = history_row(loaded.header)
        return {"summary": loaded.extra["summary"],
                "suites": {n: len(rows) for n, rows in loaded.rows.items()},
                "baseline": self.baseline() == run_id}

    def report(self, run_id: str) -> dict[str, Any]:
        """The run's report (`build_report`, against the BASELINE when one is set), without
        the raw-attempts and raw-runs rows, which the case list pages through; `verdict`:
        its verdict against the BASELINE, the lines the report's summary opens with."""
        loaded = self.index.load(run_id)
        marker = self.baseline()
        labels = self._labels_key(run_id)
        if ("report" not in loaded.extra or loaded.extra.get("report_baseline") != marker
                or loaded.extra.get("report_labels") != labels):
            from evalh.report import build_report
            from evalh.report.blocks import baseline_notes
            from evalh.report.build import versus_baseline, with_corrected
            from evalh.run_results import open_results

            # read a result at a time, as `evalh report` reads it: not the run as models
            results = open_results(self.index.store, run_id)
            built = with_corrected(build_report([results], baseline=versus_baseline([results], self.root, self.index.store)),
                                   self.index.store, [run_id])
            report = built.to_dict()
            report["verdict"] = [{"text": n.text, "warn": n.warn} for n in baseline_notes(built)]
            for suite in report["suites"]:
                for arm in suite["arms"]:
                    if arm.get("repeats"):
                        arm["repeats"]["raw"] = []
                    if arm.get("runs"):  # the raw-runs table too (a row per result)
                        arm["runs"]["rows"], arm["runs"]["arithmetic"] = [], []
            loaded.extra["report"], loaded.extra["report_baseline"] = report, marker
            loaded.extra["report_labels"] = labels
        return loaded.extra["report"]

    def _labels_key(self, run_id: str) -> tuple[Any, ...]:
        """What the corrected figures of a report read besides the run document: its label
        sidecar and the ratings store (a new draw or import changes one of them)."""
        from evalh.labels.models import sidecar_path

        def stat(path: Path) -> tuple[int, int] | None:
            try:
                st = path.stat()
            except OSError:
                return None
            return (st.st_mtime_ns, st.st_size)

        store = self.index.store
        ratings = store.runs_dir / "ratings"
        newest = max((p.name for p in ratings.glob("*.jsonl")), default=None) if ratings.is_dir() else None
        return (stat(sidecar_path(store.path_for(run_id), run_id)), stat(ratings), newest)

    def cases(self, run_id: str, params: Mapping[str, str]) -> dict[str, Any]:
        """A page of one suite's case rows, filtered by arm, status and id substring."""
        loaded = self.index.load(run_id)
        suite = params.get("suite") or next(iter(loaded.rows), "")
        if suite not in loaded.rows:
            raise BadRequest(f"suite: no suite {suite!r} in run {run_id}")
        status = params.get("status") or ""
        if status and status not in (*STATUSES, "bad"):
            raise BadRequest(f"status: expected one of {', '.join(STATUSES)} or bad")
        arm = params.get("arm") or ""
        q = (params.get("q") or "").lower()
        offset = _int(params, "offset", 0, 0, 10**9)
        limit = _int(params, "limit", 100, 1, MAX_PAGE)
        rows, keys = loaded.rows[suite], loaded.search[suite]
        counts = dict.fromkeys(STATUSES, 0)
        hits = []
        for row, key in zip(rows, keys, strict=True):
            if (arm and row["arm"] != arm) or (q and q not in key):
                continue
            counts[row["status"]] = counts.get(row["status"], 0) + 1
            if not status or row["status"] == status or (
                    status == "bad" and row["status"] in ("failed", "errored")):
                hits.append(row)
        return {"suite": suite, "total": len(hits), "offset": offset, "limit": limit,
                "counts": counts, "arms": sorted({r["arm"] for r in rows}),
                "rows": hits[offset:offset + limit]}

    def case(self, run_id: str, params: Mapping[str, str]) -> dict[str, Any]:
        """Everything stored about one result: input, expected, output, every score with
        its rationale and details, the trace, the error."""
        loaded = self.index.load(run_id)
        suite = params.get("suite") or ""
        count = loaded.count(suite)  # a streamed run: from the results' offsets, no row read
        if count is None:
            raise BadRequest(f"suite: no suite {suite!r} in run {run_id}")
        if not count:
            raise RunNotFound(f"suite {suite!r} of run {run_id} has no results")
        i = _int(params, "i", 0, 0, count - 1)
        return {"run_id": run_id, "suite": suite, "i": i,
                "result": loaded.case(suite, i).model_dump(mode="json")}

    def _pair(self, params: Mapping[str, str]) -> tuple[LoadedRun, LoadedRun]:
        """The base and candidate runs of a comparison (default: BASELINE, else the
        second newest, against the newest)."""
        ids = self.index.store.list_ids()
        cand = params.get("candidate") or (ids[-1] if ids else "")
        base = params.get("base") or self.baseline() or (ids[-2] if len(ids) > 1 else "")
        if not cand or not base:
            raise RunNotFound("compare needs two runs")
        return self.index.load(base), self.index.load(cand)

    def compare(self, params: Mapping[str, str]) -> dict[str, Any]:
        """`compare_runs` of two runs (default: BASELINE, else the second newest, against
        the newest), with the default policy: the verdict `evalh compare` gives."""
        b, c = self._pair(params)
        return self._compare(b, c)

    def _compare(self, b: LoadedRun, c: LoadedRun) -> dict[str, Any]:
        from evalh.core.compare.decide import ComparePolicy, compare_runs, suite_options

        key = (b.key, c.key)
        with self._lock:
            hit = self._compares.get(key)
        if hit is None:
            from evalh.gcpause import gc_paused

            options = suite_options(b.header, c.header)
            facts = b.facts(options), c.facts(options)  # what it pairs: no input, output or trace
            with gc_paused():  # as `evalh compare`
                hit = compare_runs(b.header, c.header, ComparePolicy(), facts=facts).to_dict()
            with self._lock:
                self._compares[key] = hit
                while len(self._compares) > 8:
                    self._compares.popitem(last=False)
        return hit

    # ------------------------------------------------------------------ case by case

    def _pairs(self, b: LoadedRun, c: LoadedRun, suite: str) -> list[dict[str, Any]]:
        """Every (case, arm) of `suite` in either run, with the rows of its attempts on each
        side, the tags that say how the two sides differ, and the text searched."""
        key = ("pairs", b.key, c.key, suite)
        with self._lock:
            paired = self._paired.get(key)
        if paired is not None:
            return paired
        cmp = self._compare(b, c)
        from evalh.gcpause import gc_paused

        with gc_paused():  # tens of thousands of small dicts beside two whole runs: no collection passes
            out = self._pair_rows(b, c, suite, cmp)
        with self._lock:
            self._paired[key] = out
            while len(self._paired) > 8:
                self._paired.popitem(last=False)
        return out

    def _pair_rows(self, b: LoadedRun, c: LoadedRun, suite: str, cmp: dict[str, Any]) -> list[dict[str, Any]]:
        named = (cmp["suites"].get(suite) or {}).get("cases") or {}
        tagged: dict[tuple[str, str], list[str]] = {}
        for tag, lists in (("regressed", ("regressed",)), ("improved", ("improved",)),
                           ("errored_new", ("errored_new",)), ("errored_fixed", ("errored_fixed",)),
                           ("content_changed", ("changed",))):
            for name in lists:
                for ref in named.get(name) or []:
                    tagged.setdefault((ref["case_id"], ref["arm"]), []).append(tag)
        sides: dict[tuple[str, str], dict[str, list[int]]] = {}
        order: list[tuple[str, str]] = []
        for side, run in (("base", b), ("candidate", c)):
            for row in run.rows.get(suite, []):
                k = (row["case_id"], row["arm"])
                if k not in sides:
                    sides[k] = {"base": [], "candidate": []}
                    order.append(k)
                sides[k][side].append(row["i"])
        bout = b.outputs(suite) if suite in b.rows else []
        cout = c.outputs(suite) if suite in c.rows else []
        out = []
        for k in order:
            idx = sides[k]
            tags = list(tagged.get(k, []))
            info: dict[str, Any] = {"case_id": k[0], "arm": k[1]}
            texts = [k[0].lower()]
            first: dict[str, Any] = {}
            for side, run, outs in (("base", b, bout), ("candidate", c, cout)):
                rows = sorted((run.rows[suite][i] for i in idx[side]), key=lambda r: r["attempt"] or 0)
                if not rows:
                    info[side] = None
                    continue
                statuses = [r["status"] for r in rows]
                decisive = [s for s in statuses if s in ("passed", "failed", "errored")]
                if "passed" in decisive and any(s != "passed" for s in decisive):
                    tags.append("flaky_" + side)
                if "errored" in statuses:
                    tags.append("errored_" + side)
                first[side] = (statuses[0], rows[0]["score"], outs[rows[0]["i"]] if outs else "")
                texts.append(first[side][2].lower())
                info[side] = {"i": [r["i"] for r in rows], "statuses": statuses, "score": rows[0]["score"],
                              "latency_ms": rows[0]["latency_ms"]}
            if "base" not in first:
                tags.append("added")
            elif "candidate" not in first:
                tags.append("removed")
            else:
                if first["base"][0] != first["candidate"][0] or first["base"][1] != first["candidate"][1]:
                    tags.append("outcome_changed")
                if first["base"][2] != first["candidate"][2]:
                    tags.append("output_changed")
            info["tags"] = tags
            info["_text"] = "\n".join(texts)
            out.append(info)
        return out

    def compare_cases(self, params: Mapping[str, str]) -> dict[str, Any]:
        """A page of one suite's cases paired across the two runs, filtered by what
        changed (`filter`: regressed, improved, changed, errored, flaky, all) and by a
        search over case ids and both outputs (`q`)."""
        b, c = self._pair(params)
        suites = list(dict.fromkeys([*b.rows, *c.rows]))
        suite = params.get("suite") or next(iter(suites), "")
        if suite not in suites:
            raise BadRequest(f"suite: no suite {suite!r} in either run")
        which = params.get("filter") or "changed"
        if which not in PAIR_FILTERS:
            raise BadRequest(f"filter: expected one of {', '.join(PAIR_FILTERS)}")
        q = (params.get("q") or "").lower()
        offset = _int(params, "offset", 0, 0, 10**9)
        limit = _int(params, "limit", 100, 1, MAX_PAGE)
        pairs = self._pairs(b, c, suite)
        counts = dict.fromkeys(PAIR_FILTERS, 0)
        hits = []
        for p in pairs:
            if q and q not in p["_text"]:
                continue
            tags = set(p["tags"])
            for f, wanted in PAIR_FILTERS.items():
                if wanted is None or tags & wanted:
                    counts[f] += 1
            want = PAIR_FILTERS[which]
            if want is None or tags & want:
                hits.append(p)
        hits.sort(key=lambda p: min((SEVERITY.get(t, 9) for t in p["tags"]), default=9))
        rows = [{k: v for k, v in p.items() if k != "_text"} for p in hits[offset:offset + limit]]
        return {"suite": suite, "suites": suites, "filter": which, "total": len(hits), "offset": offset,
                "limit": limit, "counts": counts, "base": b.header.run_id, "candidate": c.header.run_id,
                "rows": rows}

    def compare_case(self, params: Mapping[str, str]) -> dict[str, Any]:
        """One case of both runs in full: every attempt on each side, and the word diff
        of each attempt's output against the same attempt on the other side."""
        from evalh.report.textdiff import word_diff

        b, c = self._pair(params)
        suite = params.get("suite") or ""
        case_id = params.get("case")
        arm = params.get("arm") or "default"
        if not case_id:
            raise BadRequest("case: a case id is required")
        if suite not in b.rows and suite not in c.rows:
            raise BadRequest(f"suite: no suite {suite!r} in either run")
        sides: dict[str, list[dict[str, Any]]] = {}
        for side, run in (("base", b), ("candidate", c)):
            rows = [r for r in run.rows.get(suite, []) if r["case_id"] == case_id and r["arm"] == arm]
            rows.sort(key=lambda r: r["attempt"] or 0)
            sides[side] = [run.case(suite, r["i"]).model_dump(mode="json") for r in rows]
        if not sides["base"] and not sides["candidate"]:
            raise RunNotFound(f"no case {case_id!r} (arm {arm!r}) in suite {suite!r} of either run")
        diffs = [word_diff(x.get("output"), y.get("output")) for x, y in zip(sides["base"], sides["candidate"], strict=False)]
        return {"suite": suite, "case_id": case_id, "arm": arm, "base_run": b.header.run_id,
                "candidate_run": c.header.run_id, "base": sides["base"], "candidate": sides["candidate"],
                "diffs": diffs}

    # ------------------------------------------------------------------ grids

    def matrix(self, run_id: str, params: Mapping[str, str]) -> dict[str, Any]:
        """One suite as a grid: a row per case and a column per arm (`by=arm`) or per
        attempt of one arm (`by=attempt`, with each case's flakiness class). Each cell is
        one result: status, score, tokens, latency and the start of its output. Sorted by
        disagreement between the columns (`sort=disagreement`, the default) or by case."""
        loaded = self.index.load(run_id)
        suite = params.get("suite") or next(iter(loaded.rows), "")
        if suite not in loaded.rows:
            raise BadRequest(f"suite: no suite {suite!r} in run {run_id}")
        rows = loaded.rows[suite]
        declared = list(loaded.header.suites[suite].arms)
        seen = list(dict.fromkeys(r["arm"] for r in rows))
        arms = [a for a in declared if a in seen] + [a for a in seen if a not in declared]
        base_arm = loaded.header.suites[suite].baseline_arm
        if base_arm in arms:
            arms.remove(base_arm)
            arms.insert(0, base_arm)
        by = params.get("by") or ("arm" if len(arms) > 1 else "attempt")
        if by not in ("arm", "attempt"):
            raise BadRequest("by: expected arm or attempt")
        sort = params.get("sort") or "disagreement"
        if sort not in ("disagreement", "case"):
            raise BadRequest("sort: expected disagreement or case")
        arm = params.get("arm") or (arms[0] if arms else "default")
        if by == "attempt" and arm not in arms:
            raise BadRequest(f"arm: no arm {arm!r} in suite {suite!r}")
        q = (params.get("q") or "").lower()
        offset = _int(params, "offset", 0, 0, 10**9)
        limit = _int(params, "limit", 100, 1, MAX_PAGE)
        from evalh.gcpause import gc_paused

        with gc_paused():
            return self._matrix(loaded, suite, by, sort, arm, arms, base_arm, q, offset, limit)

    def _matrix(self, loaded: LoadedRun, suite: str, by: str, sort: str, arm: str, arms: list[str],
                base_arm: str | None, q: str, offset: int, limit: int) -> dict[str, Any]:
        from evalh.report.matrix import grid

        columns, out, classes = grid(loaded.rows[suite], loaded.outputs(suite), by, sort, arm, arms, q)
        return {"suite": suite, "by": by, "arm": arm if by == "attempt" else None, "arms": arms,
                "baseline_arm": base_arm, "columns": columns, "sort": sort, "total": len(out),
                "offset": offset, "limit": limit, "flakiness": classes, "rows": out[offset:offset + limit]}
