"""Configuration of the judge scorers (`judge`, `pairwise_judge`, `citation_judge`).

Who judges is either a list of provider tables or, for one judge, the provider keys given
directly on the scorer::

    scorers = [{ type = "judge", provider = "anthropic", model = "claude-haiku-4-5",
                 rubric = "The answer names the capital.", scale = "binary" }]

    [[suites.qa.scorers]]
    type = "judge"
    rubric_path = "rubrics/qa.md"
    scale = "verdicts"
    verdicts = { correct = "pass", partial = 0.5, wrong = "fail" }
    judges = [{ provider = "anthropic", model = "claude-haiku-4-5" },
              { provider = "openai", model = "gpt-4.1-mini", base_url = "http://127.0.0.1:8000/v1" }]

Only the fields named in each `SNAPSHOT` reach the run document (keys never: a judge table
names the *variable* holding its key, as model targets do).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator

from evalh.providers.base import ProviderConfig
from evalh.scorers.base import ScorerConfig
from evalh.scorers.judge_scale import (
    NO_MAJORITY,
    ORDINAL_STEPS,
    BinaryScale,
    CriteriaScale,
    OrdinalScale,
    PairwiseScale,
    Scale,
    VerdictScale,
)

PROMPT_VERSION = "evalh.judge/1"
"""Part of every rubric digest: a change of evalh's judge prompts changes the digest."""

_PROVIDER_KEYS = frozenset(ProviderConfig.model_fields) - {"max_tokens"}
_VERDICT_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_MATERIAL_ROOTS = ("input", "metadata")


class JudgeModel(ProviderConfig):
    """One judge: a provider table. `max_tokens` defaults to the scorer's `max_tokens`."""

    max_tokens: int | None = Field(None, ge=1)  # type: ignore[assignment]


class VerdictSpec(BaseModel):
    """What one verdict of a vocabulary means: pass/fail and/or a 0–1 score.

    Shorthands: `"pass"`, `"fail"`, a number (the score), or `{pass = false, score = 0.5}`.
    A score alone passes only at 1; a pass/fail alone scores 1/0.
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"passed", "score", "description"})

    passed: bool | None = Field(None, validation_alias=AliasChoices("pass", "passed"))
    """Whether the verdict passes (unset: only a score of 1 passes)."""
    score: float | None = Field(None, ge=0, le=1)
    """The verdict's value (unset: 1 when it passes, 0 when it fails)."""
    description: str | None = None
    """Shown to the judge next to the verdict's name."""

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        if isinstance(data, str):
            if data not in ("pass", "fail"):
                raise ValueError(f'a verdict is "pass", "fail", a score, or a table; got {data!r}')
            return {"passed": data == "pass"}
        if isinstance(data, bool):
            return {"passed": data}
        if isinstance(data, int | float):
            return {"score": data}
        return data

    @model_validator(mode="after")
    def _some(self) -> VerdictSpec:
        if self.passed is None and self.score is None:
            raise ValueError("a verdict needs `pass` or `score` (or both)")
        return self

    def outcome(self) -> tuple[float, bool]:
        value = self.score if self.score is not None else (1.0 if self.passed else 0.0)
        return value, self.passed if self.passed is not None else value >= 1.0


def check_verdicts(v: Mapping[str, VerdictSpec]) -> Mapping[str, VerdictSpec]:
    for name in v:
        if not _VERDICT_NAME.match(name):
            raise ValueError(f"verdict name {name!r}: use lower-case letters, digits and _")
        if name == NO_MAJORITY:
            raise ValueError(f"{NO_MAJORITY!r} is evalh's own verdict for a split panel")
    return v


def verdict_scale(v: Mapping[str, VerdictSpec]) -> VerdictScale:
    return VerdictScale({n: s.outcome() for n, s in v.items()},
                        {n: s.description for n, s in v.items() if s.description})


def check_material_path(v: str | None) -> str | None:
    """Material a judge may see comes from the case's input or metadata, never `expected`."""
    if v is not None and v.split(".", 1)[0] not in _MATERIAL_ROOTS:
        raise ValueError(
            f"{v!r}: must start with `input.` or `metadata.` (a judge never sees `expected`)"
        )
    return v


class CalibrationConfig(BaseModel):
    """A dataset of known answers the judge is checked on before the suite runs.

    Each case: `input` = `{"output": <the output to judge>, …the case input…}`, `expected`
    = the correct verdict (`pass`/`fail`, an ordinal step, or a vocabulary name).
    """

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"dataset", "min_accuracy"})

    dataset: str
    """Path of the calibration dataset, relative to the project root."""
    min_accuracy: float = Field(ge=0, le=1, validation_alias=AliasChoices("min_accuracy", "min_calibration_accuracy"))
    """Lowest accuracy (correct ÷ all items) at which the judge is accepted
    (`min_calibration_accuracy` is accepted as another spelling)."""


class JudgeConfigBase(ScorerConfig):
    """What every judge scorer shares: who judges, the rubric, reply limits and retries."""

    SNAPSHOT = frozenset(
        {"type", "name", "judges", "rubric", "rubric_path", "rubric_sha256", "prompt_sha256", "max_tokens",
         "judge_repeats", "reply_retries"}
    )

    judges: list[JudgeModel] = Field(default_factory=list)
    """Who judges: provider tables that vote (or one judge's `provider`, `model`, … given on
    the scorer itself)."""
    rubric: str | None = None
    """The rubric, inline."""
    rubric_path: str | None = None
    """A file holding the rubric, relative to the project root."""
    rubric_sha256: str | None = None
    """Computed when the scorer is built: SHA-256 of the rubric's bytes (the file's, or the
    inline text's UTF-8) — exactly as `evalh export-requests --rubric` digests it for humans."""
    prompt_sha256: str | None = None
    """Computed when the scorer is built: evalh's prompt version, the scale and its
    instructions, and the rubric digest — what the judge was asked, beyond the rubric."""
    max_tokens: int = Field(4096, ge=1)
    """Reply limit of each judge call. A reply cut there is a `truncated` judge error (what
    parsed is kept), never "unparseable": raise the limit."""
    judge_repeats: int = Field(1, ge=1, le=5)
    """2 = double judging: each judge judges each output twice; a split is low_confidence."""
    reply_retries: int = Field(2, ge=0, le=5)
    """How often a reply without JSON, a rationale or a valid verdict is asked again."""

    rubric_required: ClassVar[bool] = True

    @model_validator(mode="before")
    @classmethod
    def _hoist(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        for computed in ("rubric_sha256", "prompt_sha256"):
            if computed in data:
                raise ValueError(f"{computed} is computed by evalh; do not set it")
        single = {k: data[k] for k in _PROVIDER_KEYS if k in data}
        if single:
            if data.get("judges"):
                raise ValueError("give either `judges` or one judge's `provider`/`model`, not both")
            data = {k: v for k, v in data.items() if k not in single}
            data["judges"] = [single]
        return data

    @model_validator(mode="after")
    def _judges_and_rubric(self) -> JudgeConfigBase:
        if not self.judges:
            raise ValueError("a judge needs `provider` and `model` (or a `judges` list)")
        if self.rubric is not None and self.rubric_path is not None:
            raise ValueError("give `rubric` or `rubric_path`, not both")
        if self.rubric_required and self.rubric is None and self.rubric_path is None:
            raise ValueError("a judge needs a `rubric` (inline) or a `rubric_path`")
        return self

    def make_scale(self) -> Scale:  # pragma: no cover - abstract
        raise NotImplementedError

    def default_rubric(self) -> str:
        return ""

    def resolve_rubric(self, root: Path) -> str:
        """The rubric text; records its digest in `rubric_sha256` (so the run shows it)."""
        if self.rubric_path is not None:
            path = Path(self.rubric_path)
            path = path if path.is_absolute() else root / path
            try:
                data = path.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise ValueError(f"rubric_path: cannot read {self.rubric_path}: {exc}") from None
        else:
            text = self.rubric if self.rubric is not None else self.default_rubric()
            data = text.encode("utf-8")
        scale = self.make_scale()
        # The rubric digest is over the rubric's bytes only, as for human labels, so
        # `same_rubric_as_humans` holds when it is the same file; what else the judge was
        # given (prompt version, scale) has its own digest.
        self.rubric_sha256 = hashlib.sha256(data).hexdigest()
        basis = "\n".join([PROMPT_VERSION, scale.name, scale.shape, scale.instructions(), self.rubric_sha256])
        self.prompt_sha256 = hashlib.sha256(basis.encode()).hexdigest()
        return text

    def models(self) -> list[str]:
        return [j.model for j in self.judges]


class JudgeConfig(JudgeConfigBase):
    """`type = "judge"`: one output judged against a rubric (pointwise)."""

    SNAPSHOT = JudgeConfigBase.SNAPSHOT | {
        "scale", "verdicts", "pass_at", "criteria", "input_field", "show_input", "output_field",
        "reference_field", "keywords_field", "calibration",
    }

    type: Literal["judge"]
    scale: Literal["binary", "ordinal", "verdicts"] = "binary"
    """`binary` (pass/fail), `ordinal` (0, 0.25, 0.5, 0.75, 1) or `verdicts` (a vocabulary)."""
    steps: list[float] | None = None
    """Accepted only as the fixed steps 0, 0.25, 0.5, 0.75, 1 (say it, or leave it out)."""
    pass_at: float = 0.75
    """Ordinal scale: the lowest step that passes."""
    verdicts: dict[str, VerdictSpec] = Field(default_factory=dict)
    """The vocabulary of `scale = "verdicts"`: name → `"pass"`, `"fail"`, a score, or a table."""
    criteria: list[str] = Field(default_factory=list)
    """Named criteria judged one by one; the case passes when every criterion passes."""
    show_input: bool = True
    """Show the case input (the task) to the judge."""
    input_field: str | None = None
    """Dotted path into the case input shown as the task (the whole input when unset)."""
    output_field: str | None = None
    """Dotted path of what is judged in the output (the whole output when unset)."""
    reference_field: str | None = None
    """Reference material shown to the judge: `input.<path>` or `metadata.<path>`."""
    keywords_field: str | None = None
    """Expected keywords shown to the judge: `input.<path>` or `metadata.<path>`."""
    calibration: CalibrationConfig | None = None
    """Known verdicts judged before the suite; below `min_accuracy` the judge is refused."""

    _material = field_validator("reference_field", "keywords_field")(check_material_path)
    _verdict_names = field_validator("verdicts")(check_verdicts)

    @model_validator(mode="after")
    def _scale_fits(self) -> JudgeConfig:
        if self.scale == "verdicts" and not self.verdicts:
            raise ValueError('scale = "verdicts" needs a `verdicts` table')
        if self.scale != "verdicts" and self.verdicts:
            raise ValueError('`verdicts` is only for scale = "verdicts"')
        if self.steps is not None and (
            self.scale != "ordinal" or sorted(self.steps) != list(ORDINAL_STEPS)
        ):
            raise ValueError("ordinal steps are fixed at 0, 0.25, 0.5, 0.75, 1; no other steps are accepted")
        if self.scale == "ordinal" and self.pass_at not in ORDINAL_STEPS:
            raise ValueError("pass_at must be one of the ordinal steps 0, 0.25, 0.5, 0.75, 1")
        if len(set(self.criteria)) != len(self.criteria) or any(not c.strip() for c in self.criteria):
            raise ValueError("criteria must be distinct, non-empty names")
        return self

    def make_scale(self) -> Scale:
        if self.scale == "ordinal":
            inner: Scale = OrdinalScale(self.pass_at)
        elif self.scale == "verdicts":
            inner = verdict_scale(self.verdicts)
        else:
            inner = BinaryScale()
        return CriteriaScale(inner, self.criteria) if self.criteria else inner


class PairwiseJudgeConfig(JudgeConfigBase):
    """`type = "pairwise_judge"`: each arm's output against the baseline arm's, both orders."""

    SNAPSHOT = JudgeConfigBase.SNAPSHOT | {"input_field", "show_input", "output_field", "min_consistency",
                                     "length_control"}

    type: Literal["pairwise_judge"]
    show_input: bool = True
    """Show the case input (the task) to the judge."""
    input_field: str | None = None
    """Dotted path into the case input shown as the task (the whole input when unset)."""
    output_field: str | None = None
    """Dotted path of what is compared in each output (the whole output when unset)."""
    min_consistency: float = Field(0.85, ge=0, le=1)
    """consistency_under_order_swap below this is flagged as position bias."""
    length_control: Literal["none", "truncate"] = "none"
    """`truncate`: the longer output is cut to the shorter one's length at a word boundary
    before judging (recorded per pair); both lengths are recorded either way."""

    def make_scale(self) -> Scale:
        return PairwiseScale()
