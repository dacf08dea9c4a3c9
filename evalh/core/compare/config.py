"""What the two runs were configured with: per-suite allowances and the differences worth
stating at the top of a comparison. Pure: reads the runs' config snapshots only."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from evalh.config import Thresholds
from evalh.core.compare.models import ComparePolicy, ConfigDifference
from evalh.models import Run, SuiteResult


def thresholds_for(
    name: str, base: Run, cand: Run, policy: ComparePolicy
) -> tuple[Thresholds, str, str | None]:
    """Allowances for one suite: with a table in both runs' snapshots, the stricter
    (smaller) value of each, so that a change cannot loosen its own gate; else the one
    table there is; else the defaults; then the policy's overrides (a command-line flag is
    the operator's, not the change's). An unreadable table is skipped with a warning."""
    warn = None
    tables: dict[str, dict[str, Any]] = {}
    for side, run in (("base", base), ("candidate", cand)):
        table = ((run.config.get("suites") or {}).get(name) or {}).get("thresholds")
        if isinstance(table, dict):
            known = {k: v for k, v in table.items() if k in Thresholds.model_fields}
            try:
                tables[side] = Thresholds.model_validate(known).model_dump()
            except ValidationError:
                warn = f"suite {name}: the {side} run's thresholds are invalid; ignored"
    raw: dict[str, Any] | None = None
    source = "defaults"
    if len(tables) == 2:
        raw = {k: min(tables["base"][k], tables["candidate"][k]) for k in tables["base"]}
        source = "base and candidate config (the stricter of each)"
        if tables["base"] == tables["candidate"]:
            source = "base and candidate config"
    elif tables:
        (side, raw), = tables.items()
        source = f"{side} config"
    th = policy.resolve(raw)
    if policy.overrides():
        source += " with command-line overrides (" + ", ".join(sorted(policy.overrides())) + ")"
    return th, source, warn


_PRIORITY = ("target", "judge_models", "scorers", "dataset", "regime", "repeats", "arms")


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k in sorted(value, key=str):
            _flatten(value[k], f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


# Not differences of what ran: the shuffle seed only orders the (case, arm, attempt) triples
# (evalh sends no seed to a model, and a target never sees it), and max_error_rate only
# decides `evalh run`'s exit code. Where a value can come from the suite, `[evalh]` or a
# flag (repeats, timeout, concurrency), the value each suite ran with is compared instead
# of where it was written (`_used`), so moving `repeats = 3` to `--repeats 3` is no change.
_NOT_WHAT_RAN_SUITE = frozenset({"max_error_rate"})
_NOT_WHAT_RAN = frozenset({
    "seed", "settings.seed", "settings.timeout_s", "settings.concurrency",
    "run_options.repeats", "run_options.timeout_s", "run_options.concurrency",
    "run_options.max_error_rate",
    "import.file",  # the file an imported run was read from: where it came from, not what ran
})


Seen = tuple[int, list[str]]
"""What a suite's results show of how it ran: (attempts a case, judge models named)."""


def seen_in(sr: SuiteResult) -> Seen:
    """`Seen` of a suite's results in memory."""
    attempts = max((r.attempt for r in sr.cases), default=0) + 1
    return attempts, sorted({s.judge_model for r in sr.cases for s in r.scores if s.judge_model})


def _used(run: Run, snap: dict[str, Any], attempts: int) -> dict[str, Any]:
    """Repeats, timeout and concurrency as the suite ran them: the flag (`run_options`),
    else the suite's key, else `[evalh]` (repeats: else counted from the attempts)."""
    flags = run.config.get("run_options") or {}
    settings = run.config.get("settings") or {}
    return {
        "repeats": flags.get("repeats") or snap.get("repeats") or attempts,
        "timeout_s": flags.get("timeout_s") or snap.get("timeout_s") or settings.get("timeout_s"),
        "concurrency": flags.get("concurrency") or snap.get("concurrency") or settings.get("concurrency"),
    }


def _suite_facts(run: Run, name: str, sr: SuiteResult, seen: Seen) -> dict[str, Any]:
    attempts, judges = seen
    snap = dict((run.config.get("suites") or {}).get(name) or {})
    snap.update(_used(run, snap, attempts))
    for key in _NOT_WHAT_RAN_SUITE:
        snap.pop(key, None)
    snap.setdefault("target", sr.target)
    snap.setdefault("regime", sr.regime)
    snap["dataset_sha256"] = sr.dataset.sha256
    snap["dataset_cases"] = sr.dataset.cases
    snap["judge_models"] = judges or None
    if sr.target.get("kind") == "python":  # the model a Python product reported using
        snap["product_model"] = sr.target.get("model")
    return snap


def _diff(suite: str | None, b: Any, c: Any, skip: frozenset[str] = frozenset()) -> list[ConfigDifference]:
    fb: dict[str, Any] = {}
    fc: dict[str, Any] = {}
    _flatten(b, "", fb)
    _flatten(c, "", fc)
    keys = sorted((set(fb) | set(fc)) - skip)
    out = [ConfigDifference(suite=suite, key=k, base=fb.get(k), candidate=fc.get(k))
           for k in keys if fb.get(k) != fc.get(k)]

    def rank(d: ConfigDifference) -> int:
        head = d.key.split(".")[0].split("[")[0]
        for i, p in enumerate(_PRIORITY):
            if head.startswith(p):
                return i
        return len(_PRIORITY)

    return sorted(out, key=rank)


def config_differences(
    base: Run, cand: Run, seen: tuple[dict[str, Seen], dict[str, Seen]] | None = None
) -> list[ConfigDifference]:
    """Settings that differ in what ran, suites both runs have first (target, judge, dataset
    digest…), then run-wide settings. Suites only one run has are reported as added/removed.
    The seed and max_error_rate are never listed; repeats, timeout and concurrency are
    compared per suite as used, whether evalh.toml or a flag set them. `seen`: per side and
    suite, what the results show (`Seen`), when the runs are read without their results."""
    out: list[ConfigDifference] = []
    for name, sc in cand.suites.items():
        sb = base.suites.get(name)
        if sb is not None:
            seen_b = seen[0].get(name) if seen else None
            seen_c = seen[1].get(name) if seen else None
            out.extend(_diff(name, _suite_facts(base, name, sb, seen_b or seen_in(sb)),
                             _suite_facts(cand, name, sc, seen_c or seen_in(sc))))
    rest_b = {k: v for k, v in base.config.items() if k != "suites"}
    rest_c = {k: v for k, v in cand.config.items() if k != "suites"}
    rest_b["evalh_version"] = base.environment.evalh
    rest_c["evalh_version"] = cand.environment.evalh
    out.extend(_diff(None, rest_b, rest_c, _NOT_WHAT_RAN))
    return out
