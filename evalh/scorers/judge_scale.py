"""Judge scales: what a judge is asked to reply, and how its reply becomes a verdict.

Every scale reads one JSON object and returns a `Judgment`: a `label` (what judges vote
on), a value (0–1), pass/fail, and the rationale, which is required — a reply without one
is `ReplyInvalid` and is asked again. Scales:

- `binary`: `{"verdict": "pass" | "fail", "rationale": …}`.
- `ordinal`: `{"score": s, "rationale": …}` with `s` one of exactly 0, 0.25, 0.5, 0.75, 1.
- `verdicts`: `{"verdict": <a name of the user's vocabulary>, "rationale": …}`, each name
  mapped to a value and pass/fail.
- `pairwise`: `{"winner": "A" | "B" | "tie", "rationale": …}` (positions, not arms).
- `CriteriaScale` wraps any of the first three: one item per named criterion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evalh.scorers.judge_reply import ReplyInvalid

ORDINAL_STEPS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
NO_MAJORITY = "no_majority"


@dataclass(frozen=True)
class Judgment:
    """One judge's reading of one reply."""

    label: str
    value: float | None
    passed: bool | None
    rationale: str
    items: list[dict[str, Any]] = field(default_factory=list)
    """Per-criterion judgments (name, label, value, passed, rationale) when criteria are set."""


def step_label(value: float) -> str:
    """`0.75` → "0.75", `1.0` → "1": the label an ordinal score votes with."""
    return f"{value:g}"


def _rationale(obj: Mapping[str, Any]) -> str:
    r = obj.get("rationale")
    if not isinstance(r, str) or not r.strip():
        raise ReplyInvalid('the reply has no rationale: every verdict needs a non-empty "rationale"')
    return r.strip()


class Scale:
    """Base of the scales. `shape` is the JSON the judge is shown; `read` validates a reply."""

    name: str = ""
    labels: tuple[str, ...] = ()

    @property
    def shape(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def instructions(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def read(self, obj: Mapping[str, Any]) -> Judgment:  # pragma: no cover - abstract
        raise NotImplementedError

    def outcome(self, label: str) -> tuple[float | None, bool | None]:  # pragma: no cover
        raise NotImplementedError

    def rank(self, label: str) -> float:
        """Order of labels from worst to best: ties inside one judge's repeats go to the
        worse label (a split never inflates a pass; the split is flagged low_confidence)."""
        value, _ = self.outcome(label)
        return value if value is not None else 0.0

    def salvage(self, obj: dict[str, Any] | None) -> Any:
        """What a cut-short reply still says (the fields that parsed), for the record."""
        return {k: v for k, v in (obj or {}).items() if k in ("verdict", "score", "winner", "rationale")} or None

    def judgment(self, label: str, rationale: str) -> Judgment:
        value, passed = self.outcome(label)
        return Judgment(label=label, value=value, passed=passed, rationale=rationale)


class BinaryScale(Scale):
    name = "binary"
    labels = ("pass", "fail")
    shape = '{"verdict": "pass" | "fail", "rationale": "<why, citing the output>"}'

    def instructions(self) -> str:
        return 'Give "pass" when the output meets the rubric, "fail" otherwise.'

    def read(self, obj: Mapping[str, Any]) -> Judgment:
        v = obj.get("verdict")
        if isinstance(v, bool):
            v = "pass" if v else "fail"
        label = v.strip().casefold() if isinstance(v, str) else None
        if label not in self.labels:
            raise ReplyInvalid(f'"verdict" must be "pass" or "fail", got {json.dumps(v)}')
        return self.judgment(label, _rationale(obj))

    def outcome(self, label: str) -> tuple[float | None, bool | None]:
        return (1.0, True) if label == "pass" else (0.0, False)


class OrdinalScale(Scale):
    name = "ordinal"
    labels = tuple(step_label(s) for s in ORDINAL_STEPS)
    shape = '{"score": 0 | 0.25 | 0.5 | 0.75 | 1, "rationale": "<why, citing the output>"}'

    def __init__(self, pass_at: float) -> None:
        self.pass_at = pass_at

    def instructions(self) -> str:
        return ("Score on the fixed steps 0, 0.25, 0.5, 0.75, 1 (0 = fails the rubric entirely, "
                "1 = meets it fully). No other value is accepted.")

    def read(self, obj: Mapping[str, Any]) -> Judgment:
        s = obj.get("score")
        step = None
        if isinstance(s, int | float) and not isinstance(s, bool):
            step = next((x for x in ORDINAL_STEPS if abs(x - s) < 1e-9), None)
        if step is None:
            raise ReplyInvalid(f'"score" must be one of 0, 0.25, 0.5, 0.75, 1; got {json.dumps(s)}')
        return self.judgment(step_label(step), _rationale(obj))

    def outcome(self, label: str) -> tuple[float | None, bool | None]:
        value = float(label)
        return value, value >= self.pass_at


class VerdictScale(Scale):
    """A user's vocabulary: name → (value, passed)."""

    name = "verdicts"

    def __init__(self, mapping: Mapping[str, tuple[float, bool]], descriptions: Mapping[str, str] | None = None) -> None:
        self.mapping = dict(mapping)
        self.descriptions = dict(descriptions or {})
        self.labels = tuple(self.mapping)

    @property
    def shape(self) -> str:
        names = " | ".join(f'"{n}"' for n in self.labels)
        return f'{{"verdict": {names}, "rationale": "<why, citing the output>"}}'

    def instructions(self) -> str:
        lines = ["Give exactly one verdict of this vocabulary:"]
        for name in self.labels:
            desc = self.descriptions.get(name)
            lines.append(f"- {name}" + (f": {desc}" if desc else ""))
        return "\n".join(lines)

    def read(self, obj: Mapping[str, Any]) -> Judgment:
        v = obj.get("verdict")
        label = v.strip().casefold().replace(" ", "_").replace("-", "_") if isinstance(v, str) else None
        if label not in self.mapping:
            known = ", ".join(self.labels)
            raise ReplyInvalid(f'"verdict" must be one of {known}; got {json.dumps(v)}')
        return self.judgment(label, _rationale(obj))

    def outcome(self, label: str) -> tuple[float | None, bool | None]:
        value, passed = self.mapping[label]
        return value, passed


class PairwiseScale(Scale):
    """Which of two responses is better. Labels are positions; the caller maps them to arms."""

    name = "pairwise"
    labels = ("A", "B", "tie")
    shape = '{"winner": "A" | "B" | "tie", "rationale": "<why, citing both responses>"}'

    def instructions(self) -> str:
        return ('Say which response better meets the rubric: "A", "B", or "tie" when neither '
                "is better. The order in which they are shown says nothing about their quality.")

    def read(self, obj: Mapping[str, Any]) -> Judgment:
        w = obj.get("winner")
        label = {"a": "A", "b": "B", "tie": "tie"}.get(w.strip().casefold()) if isinstance(w, str) else None
        if label is None:
            raise ReplyInvalid(f'"winner" must be "A", "B" or "tie"; got {json.dumps(w)}')
        return self.judgment(label, _rationale(obj))

    def outcome(self, label: str) -> tuple[float | None, bool | None]:
        return None, None


class CriteriaScale(Scale):
    """Several named criteria, each judged on the inner scale. Value: the mean; pass: all pass."""

    labels = ("pass", "fail")

    def __init__(self, inner: Scale, criteria: list[str]) -> None:
        self.inner = inner
        self.criteria = list(criteria)
        self.name = inner.name

    @property
    def shape(self) -> str:
        item = self.inner.shape.rstrip("}").lstrip("{")
        return f'{{"criteria": [{{"name": "<criterion>", {item}}}, …one item per criterion]}}'

    def instructions(self) -> str:
        named = "\n".join(f"- {c}" for c in self.criteria)
        return f"Judge each criterion on its own, in this order:\n{named}\n{self.inner.instructions()}"

    def _items(self, obj: Mapping[str, Any] | None, *, strict: bool) -> list[dict[str, Any]]:
        raw = (obj or {}).get("criteria")
        if not isinstance(raw, list):
            if strict:
                raise ReplyInvalid('the reply needs a "criteria" list, one item per criterion')
            return []
        out = []
        for item in raw:
            name = item.get("name") if isinstance(item, dict) else None
            if name not in self.criteria:
                if strict:
                    raise ReplyInvalid(f"unknown criterion {json.dumps(name)}; use {', '.join(self.criteria)}")
                continue
            try:
                j = self.inner.read(item)
            except ReplyInvalid:
                if strict:
                    raise
                continue
            out.append({"name": name, "label": j.label, "value": j.value, "passed": j.passed,
                        "rationale": j.rationale})
        return out

    def read(self, obj: Mapping[str, Any]) -> Judgment:
        items = self._items(obj, strict=True)
        missing = [c for c in self.criteria if c not in {i["name"] for i in items}]
        if missing:
            raise ReplyInvalid(f"the reply misses criteria: {', '.join(missing)}")
        by_name = {i["name"]: i for i in items}
        items = [by_name[c] for c in self.criteria]
        values = [i["value"] for i in items if i["value"] is not None]
        passed = all(i["passed"] for i in items)
        rationale = "; ".join(f"{i['name']}: {i['rationale']}" for i in items)
        return Judgment(label="pass" if passed else "fail", value=sum(values) / len(values) if values else None,
                        passed=passed, rationale=rationale, items=items)

    def outcome(self, label: str) -> tuple[float | None, bool | None]:
        return (1.0, True) if label == "pass" else (0.0, False)

    def salvage(self, obj: dict[str, Any] | None) -> Any:
        """The criteria judged completely before the cut."""
        return self._items(obj, strict=False) or None
