"""`type = "citation_judge"`: paragraph-level judging of answers that cite sources with `[n]`.

    [[suites.citations.scorers]]
    type = "citation_judge"
    provider = "anthropic"
    model = "claude-haiku-4-5"
    sources_field = "sources"          # in the case input: {"1": {...}, …} or a list
    mention_patterns = ['\\[(?P<speaker>[^\\]]+)\\]\\(/mp/[^)]*\\)\\s*\\((?P<party>[^)]+)\\)']

The answer is split into paragraphs; only paragraphs carrying a citation are judged, each
with the texts (and metadata) of the sources it cites. Before the judge, a deterministic
pre-check compares what the paragraph states about a source with that source's metadata
(`citations_text.precheck`); a mismatch is stored as `metadata_mismatch` and shown to the
judge as a hint, so reports can tell what the check caught from what only the judge did.

Each paragraph keeps its verdict and rationale. The case's value is the share of judged
paragraphs whose verdict passes (with the default vocabulary: `supported`), with the
per-verdict counts; it passes when that share reaches `min_supported_share` (default: all).
A paragraph the judge could not judge makes the case `judge_error`, the judged ones kept.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from evalh.fields import MISSING, pick
from evalh.models import Case, CaseResult, Score
from evalh.scorers.base import ScoreContext, ScorerConfig, SuiteView
from evalh.scorers.citations_sources import check_paths, find_sources, paths_of
from evalh.scorers.citations_text import cited_numbers, paragraphs, precheck
from evalh.scorers.judge_base import ClientFactory, JudgeScorerBase, find_score
from evalh.scorers.judge_config import JudgeConfigBase, VerdictSpec, check_verdicts, verdict_scale
from evalh.scorers.judge_panel import Usage
from evalh.scorers.judge_prompt import render, system_prompt
from evalh.scorers.judge_scale import Scale

if TYPE_CHECKING:
    from evalh.services import RunServices

DEFAULT_VERDICTS: dict[str, dict[str, Any]] = {
    "supported": {"pass": True, "description": "the cited source's text backs the claim"},
    "partial": {"pass": False, "score": 0.5,
                "description": "partly right, but overstated or not fully verifiable from the cited text"},
    "unsupported": {"pass": False, "description": "the cited text contradicts the claim or has no basis for it "
                    "(also when the right speaker is cited but the content is not in that source)"},
    "wrong_speaker": {"pass": False, "description": "the name or party the paragraph gives is not who spoke "
                      "in the cited source; name the right one in the rationale"},
    "wrong_attribution": {"pass": False, "description": "the right speaker is named, but the claim comes from "
                          "another source than the one cited"},
}
DEFAULT_RUBRIC = """\
Judge whether the paragraph's claims are supported by the sources it cites, and whether \
what it says about those sources (who spoke, their party, when) is right. Use only the \
cited sources' text and metadata. If a pre-check note is given, verify it against the sources."""


class CitationJudgeConfig(JudgeConfigBase):
    """`type = "citation_judge"`: each cited paragraph of an answer judged against the
    sources it cites, after a deterministic metadata pre-check (see docs/judges.md)."""

    SNAPSHOT = JudgeConfigBase.SNAPSHOT | {
        "verdicts", "answer_field", "sources_field", "sources_from", "source_text_key", "question_field",
        "mention_patterns", "max_source_chars", "min_supported_share",
    }
    rubric_required: ClassVar[bool] = False
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"sources_from"})

    type: Literal["citation_judge"]
    verdicts: dict[str, VerdictSpec] | None = None
    """The verdict vocabulary; unset: supported, partial, unsupported, wrong_speaker,
    wrong_attribution (only `supported` passes). The run records the one used."""
    answer_field: str | None = None
    """Dotted path of the answer text in the output (the whole output when unset)."""
    sources_field: str = "sources"
    """Dotted path of the numbered sources in the case input (when `sources_from` is unset)."""
    sources_from: list[str] | None = None
    """Where the sources are: a rooted path (`output.sources`, `trace.search.hits`,
    `input.sources`) or a list tried in order; the input is read only when listed. Unset:
    `input.<sources_field>`. The metadata pre-check reads the same sources."""
    source_text_key: str = "text"
    """Key of a source object's text; its other keys are its metadata."""
    question_field: str | None = None
    """Dotted path of the question in the case input, shown to the judge (not shown when unset)."""
    mention_patterns: list[str] = Field(default_factory=list)
    """Regexes whose named groups name source metadata keys (see citations_text)."""
    max_source_chars: int = Field(28_000, ge=200)
    """Cited source text sent with one paragraph, in total (each source gets its share)."""
    min_supported_share: float = Field(1.0, ge=0, le=1)
    """The case passes when this share of its cited paragraphs passes (default: all)."""

    _verdict_names = field_validator("verdicts")(check_verdicts)

    @field_validator("sources_from", mode="before")
    @classmethod
    def _sources_from(cls, v: Any) -> Any:
        return check_paths(v) if isinstance(v, (str, list)) else v

    @model_validator(mode="after")
    def _one_place(self) -> CitationJudgeConfig:
        if self.sources_from and "sources_field" in self.model_fields_set:
            raise ValueError("give `sources_from` (a rooted path such as \"input.sources\") or `sources_field`, not both")
        return self

    @field_validator("mention_patterns")
    @classmethod
    def _patterns(cls, v: list[str]) -> list[str]:
        for p in v:
            try:
                rx = re.compile(p)
            except re.error as exc:
                raise ValueError(f"mention pattern {p!r} does not compile: {exc}") from None
            if not rx.groupindex:
                raise ValueError(f"mention pattern {p!r} needs named groups, e.g. (?P<speaker>…)")
        return v

    @model_validator(mode="after")
    def _default_vocabulary(self) -> CitationJudgeConfig:
        if self.verdicts is None:
            self.verdicts = {k: VerdictSpec.model_validate(v) for k, v in DEFAULT_VERDICTS.items()}
        return self

    def default_rubric(self) -> str:
        return DEFAULT_RUBRIC

    def make_scale(self) -> Scale:
        assert self.verdicts is not None
        return verdict_scale(self.verdicts)


CONFIGS: dict[str, type[ScorerConfig]] = {"citation_judge": CitationJudgeConfig}


class CitationJudgeScorer(JudgeScorerBase):
    config: CitationJudgeConfig

    def __init__(self, config: CitationJudgeConfig, root: Path, client_factory: ClientFactory | None = None) -> None:
        super().__init__(config, root, client_factory)
        self.patterns = [re.compile(p) for p in config.mention_patterns]

    def prompt(self, case: Case, paragraph: str, cited: list[int], sources: dict[int, Any],
               mismatch: str | None) -> tuple[str, str]:
        """(system, user) for one paragraph: rubric, question, paragraph, cited sources, hints."""
        parts = [f"<rubric>\n{self.rubric}\n</rubric>"]
        question = pick(case.input, self.config.question_field) if self.config.question_field else MISSING
        if question is not MISSING:
            parts.append(f"<question>\n{render(question)}\n</question>")
        parts.append(f"<paragraph>\n{paragraph}\n</paragraph>")
        present = [n for n in cited if n in sources]
        share = self.config.max_source_chars // max(1, len(present))
        for n in present:
            src = sources[n]
            meta = "".join(f"{k}: {render(v)}\n" for k, v in src.meta.items())
            text = src.text if len(src.text) <= share else src.text[:share] + " […source cut…]"
            parts.append(f"<source number=\"{n}\">\n{meta}text: {text}\n</source>")
        missing = [n for n in cited if n not in sources]
        if missing:
            parts.append("Note: the paragraph cites " + ", ".join(f"[{n}]" for n in missing) +
                         ", which no source carries.")
        if mismatch:
            parts.append(f"<precheck>\nA deterministic check of the source metadata found:\n{mismatch}\n</precheck>")
        parts.append("Judge this paragraph against its cited sources. Reply with the JSON object only.")
        what = "one paragraph of an answer against the sources it cites"
        return system_prompt(self.scale, what), "\n\n".join(parts)

    async def _paragraph(self, case: Case, index: int, text: str, sources: dict[int, Any],
                         services: RunServices, attempt: int) -> tuple[dict[str, Any], Usage]:
        cited = cited_numbers(text)
        mismatch = precheck(text, sources, self.patterns)
        system, user = self.prompt(case, text, cited, sources, mismatch)
        panel = await self.ask_panel(services, system, user, attempt)
        row: dict[str, Any] = {"index": index, "text": text, "cited": cited, "metadata_mismatch": mismatch}
        missing = [n for n in cited if n not in sources]
        if missing:
            row["missing_sources"] = missing
        if panel.judgment is not None:
            row.update(verdict=panel.verdict, passed=panel.judgment.passed, rationale=panel.judgment.rationale)
        else:
            row.update(verdict=panel.verdict, error=panel.error)
        details = panel.details()
        row["judges"] = details["judges"]
        for flag in ("low_confidence", "truncated"):
            if details.get(flag):
                row[flag] = True
        return row, panel.usage

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        refused = self.self_judge_score(ctx.subject_model, ctx.services)
        if refused is not None:
            return refused
        base: dict[str, Any] = dict(scorer=self.name, judge_model=", ".join(self.config.models()),
                                    rubric_sha256=self.config.rubric_sha256)
        answer = pick(output, self.config.answer_field)
        if not isinstance(answer, str):
            return Score(value=0.0, passed=False, rationale=f"no answer text at {self.config.answer_field or 'output'}", **base)
        c = self.config
        trace = ctx.target_output.trace if ctx.target_output is not None else None
        sources, where = find_sources(paths_of(c.sources_from, c.sources_field), case, output, trace, c.source_text_key)
        if sources is None:
            msg = where if c.sources_from else f"case input has no numbered sources at {c.sources_field!r}"
            return Score(error=msg, rationale=msg, **base)
        pars = paragraphs(answer)
        todo = [(i, p) for i, p in enumerate(pars) if cited_numbers(p)]
        if not todo:
            return Score(abstained=True, rationale="no paragraph carries a citation",
                         details={"paragraphs_total": len(pars), "paragraphs_cited": 0}, **base)
        done = await asyncio.gather(*(self._paragraph(case, i, p, sources, ctx.services, ctx.attempt) for i, p in todo))
        rows = [r for r, _ in done]
        usage = Usage()
        for _, u in done:
            usage.add(u)
        details = summarize_paragraphs(rows)
        details.update(paragraphs_total=len(pars), paragraphs=rows, usage=usage.as_dict(), sources_from=where)
        for flag in ("truncated", "low_confidence"):  # the case's flags, which the suite counts
            flagged = sum(1 for r in rows if r.get(flag))
            if flagged:
                details[flag] = True
                details[f"{flag}_paragraphs"] = flagged
        if self.self_judge_allowed:
            details["self_judge"] = True
        failed = [r for r in rows if "error" in r]
        if failed:
            msg = f"{len(failed)} of {len(rows)} cited paragraphs could not be judged: {failed[0]['error']}"
            return Score(error=msg, rationale=msg, details=details, **base)
        share = details["supported"] / len(rows)
        passed = share >= self.config.min_supported_share
        counts = ", ".join(f"{v} {n}" for v, n in details["verdicts"].items())
        return Score(value=share, passed=passed, rationale=f"{details['supported']} of {len(rows)} cited paragraphs supported ({counts})",
                     details=details, **base)

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        """The judge's counts, plus paragraph verdicts and the pre-check split over the suite."""
        info = await super().finalize(suite, results, services) or {}
        verdicts: Counter[str] = Counter()
        pre: Counter[str] = Counter()
        for r in results:
            s = find_score(r, self.name)
            if s is not None:
                verdicts.update(s.details.get("verdicts", {}))
                pre.update(s.details.get("precheck", {}))
        info["paragraph_verdicts"] = dict(verdicts)
        for flag in ("truncated", "low_confidence"):
            info[f"{flag}_paragraphs"] = sum(
                int(s.details.get(f"{flag}_paragraphs", 0)) for r in results if (s := find_score(r, self.name)))
        info["precheck"] = {k: pre.get(k, 0) for k in _PRECHECK_KEYS}
        return info


_PRECHECK_KEYS = ("metadata_mismatch", "caught_by_precheck", "only_by_judge", "mismatch_judged_supported")


def summarize_paragraphs(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-verdict counts, and what the pre-check caught against what only the judge did."""
    judged = [r for r in rows if "error" not in r]
    bad = [r for r in judged if not r.get("passed")]
    return {
        "paragraphs_cited": len(rows),
        "paragraphs_judged": len(judged),
        "supported": sum(1 for r in judged if r.get("passed")),
        "verdicts": dict(Counter(r["verdict"] for r in judged)),
        "precheck": {
            "metadata_mismatch": sum(1 for r in rows if r.get("metadata_mismatch")),
            "caught_by_precheck": sum(1 for r in bad if r.get("metadata_mismatch")),
            "only_by_judge": sum(1 for r in bad if not r.get("metadata_mismatch")),
            "mismatch_judged_supported": sum(1 for r in judged if r.get("passed") and r.get("metadata_mismatch")),
        },
    }


def build(config: ScorerConfig, root: Path | None = None, client_factory: ClientFactory | None = None) -> CitationJudgeScorer:
    assert isinstance(config, CitationJudgeConfig)
    return CitationJudgeScorer(config, root or Path.cwd(), client_factory)
