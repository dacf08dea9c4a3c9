"""`type = "external_score"`: a 0–1 grounding score from a scoring endpoint.

    [[suites.citations.scorers]]
    type = "external_score"
    url = "http://127.0.0.1:8001/v1/score"     # or url_env = "SCORER_ENDPOINT"; or "mock:<script>"
    model = "BAAI/bge-reranker-v2-m3"
    mode = "paragraphs"                         # or "answer"
    transform = "none"                          # "sigmoid" when the endpoint returns logits

The scorer posts (claim, sources) in the shape of vLLM's `/v1/score` (`{"model", "text_1",
"text_2"}` → `{"data": [{"score": s}, …]}`), e.g. to a cross-encoder. `mode = "answer"`
scores the whole answer against all its sources; `mode = "paragraphs"` scores each cited
paragraph against the sources it cites (one request for all of them) and the case value
is their mean. An endpoint that cannot be reached, answers with an error, or returns
something that is not a 0–1 score gives **null, never 0**: the Score abstains with the
reason, and the suite details count the nulls. With `pass_at` the value also passes or
fails; without it the score is a signal beside the suite's verdict-giving scorers.

It is a model-backed scorer (`kind = "judge"`): `evalh rejudge` runs it again where its
value is null. A local scoring endpoint has no price; its calls are not charged.
"""

from __future__ import annotations

import asyncio
import math
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from evalh.fields import as_text, pick
from evalh.models import Case, CaseResult, Score
from evalh.scorers.base import ScoreContext, Scorer, ScorerConfig, SuiteView
from evalh.scorers.citations_sources import check_paths, find_sources, paths_of
from evalh.scorers.citations_text import cited_numbers, paragraphs

if TYPE_CHECKING:
    import httpx

    from evalh.services import RunServices


class ExternalScoreConfig(ScorerConfig):
    """`type = "external_score"`: a 0–1 grounding score from a scoring endpoint (vLLM
    `/v1/score` shape); unreachable gives null, never 0."""

    SNAPSHOT = frozenset({
        "type", "name", "url", "url_env", "model", "api_key_env", "mode", "answer_field",
        "sources_field", "sources_from", "source_text_key", "max_source_chars", "transform", "pass_at",
        "timeout_s", "retries",
    })
    SNAPSHOT_IF_SET: ClassVar[frozenset[str]] = frozenset({"sources_from"})

    type: Literal["external_score"]
    url: str | None = None
    """The scoring endpoint, e.g. `http://127.0.0.1:8001/v1/score`, or `mock:PATH` (the mock
    provider's `/v1/score`, started for the run)."""
    url_env: str | None = None
    """A variable whose value, when set, is the URL (it wins over `url`)."""
    model: str
    """The model name sent with each request."""
    api_key_env: str | None = None
    """A variable holding a bearer token, if the endpoint wants one (name only, never the value)."""
    mode: Literal["answer", "paragraphs"] = "answer"
    """`answer`: the whole answer against all sources; `paragraphs`: each cited paragraph
    against the sources it cites (the value is their mean)."""
    answer_field: str | None = None
    """Dotted path of the answer text in the output (the whole output when unset), as in
    `citation_judge`; `claim_field`, its older name, is still read."""
    sources_field: str = "sources"
    """Dotted path of the numbered sources in the case input (when `sources_from` is unset)."""
    sources_from: list[str] | None = None
    """Where the sources are, as in `citation_judge`: a rooted path (`output.sources`,
    `trace.search.hits`, `input.sources`) or a list tried in order; unset: `input.<sources_field>`."""
    source_text_key: str = "text"
    """Key of a source object's text."""
    max_source_chars: int = Field(28_000, ge=100)
    """Source text sent with one claim, at most."""
    transform: Literal["none", "sigmoid"] = "none"
    """`sigmoid` turns logits into 0–1; a value outside 0–1 is null, never clipped."""
    pass_at: float | None = Field(None, ge=0, le=1)
    """With it the value passes at this score or above; without it the score is a signal."""
    timeout_s: float = Field(30.0, gt=0)
    """Per request."""
    retries: int = Field(1, ge=0, le=5)
    """Retries after a connection error, a 429 or a 5xx; then the value is null."""

    @model_validator(mode="before")
    @classmethod
    def _older_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "claim_field" in data:
            if "answer_field" in data:
                raise ValueError("give `answer_field` (or its older name `claim_field`), not both")
            data = {**data, "answer_field": data["claim_field"]}
            del data["claim_field"]
        return data

    @field_validator("sources_from", mode="before")
    @classmethod
    def _sources_from(cls, v: Any) -> Any:
        return check_paths(v) if isinstance(v, (str, list)) else v

    @model_validator(mode="after")
    def _where(self) -> ExternalScoreConfig:
        if not self.url and not self.url_env:
            raise ValueError("give the scoring endpoint as `url` (or `url_env`)")
        if self.sources_from and "sources_field" in self.model_fields_set:
            raise ValueError("give `sources_from` (a rooted path such as \"input.sources\") or `sources_field`, not both")
        return self


CONFIGS: dict[str, type[ScorerConfig]] = {"external_score": ExternalScoreConfig}


class Unreachable(Exception):
    """The endpoint could not give a score (the message says why)."""


class ExternalScorer(Scorer):
    kind: ClassVar[Literal["judge"]] = "judge"

    def __init__(self, config: ExternalScoreConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return self.config.display_name

    def url(self, services: RunServices) -> str:
        c = self.config
        url = (os.environ.get(c.url_env) if c.url_env else None) or c.url or ""
        from evalh.providers.loopback import is_mock_url, mock_base_url

        if is_mock_url(url):
            return mock_base_url(url, "anthropic", services) + "/v1/score"
        return url

    def _client(self, services: RunServices) -> httpx.AsyncClient:
        """One HTTP client per run, closed with the run's providers."""
        import httpx

        key = f"backend:external_score:{self.config.timeout_s}"
        client = services.providers.get(key)
        if client is None:
            client = services.providers[key] = httpx.AsyncClient(timeout=self.config.timeout_s)
        return client

    def pairs(self, case: Case, output: Any, trace: list[dict[str, Any]] | None = None) -> list[tuple[str, str]]:
        """(claim, sources text) pairs to score."""
        c = self.config
        answer = as_text(pick(output, c.answer_field))
        found, _ = find_sources(paths_of(c.sources_from, c.sources_field), case, output, trace, c.source_text_key)
        sources = found or {}
        if c.mode == "answer":
            return [(answer, _joined(list(sources.values()), c.max_source_chars))]
        out = []
        for par in paragraphs(answer):
            cited = [sources[n] for n in cited_numbers(par) if n in sources]
            if cited:
                out.append((par, _joined(cited, c.max_source_chars)))
        return out

    async def _post(self, services: RunServices, pairs: list[tuple[str, str]]) -> list[float]:
        import httpx

        c = self.config
        headers = {}
        if c.api_key_env and os.environ.get(c.api_key_env):
            headers["authorization"] = f"Bearer {os.environ[c.api_key_env]}"
        body = {"model": c.model, "text_1": [p for p, _ in pairs], "text_2": [s for _, s in pairs]}
        url = self.url(services)
        problem = ""
        for attempt in range(c.retries + 1):
            if attempt:
                await asyncio.sleep(0.25 * attempt)
            try:
                resp = await self._client(services).post(url, json=body, headers=headers)
            except httpx.HTTPError as exc:
                problem = f"{type(exc).__name__}: {exc}".rstrip(": ")
                continue
            if resp.status_code >= 500 or resp.status_code == 429:
                problem = f"HTTP {resp.status_code}"
                continue
            if resp.status_code != 200:
                raise Unreachable(f"HTTP {resp.status_code} from the scoring endpoint")
            return self._read(resp, len(pairs))
        raise Unreachable(f"scoring endpoint unreachable after {c.retries + 1} attempts: {problem}")

    def _read(self, resp: Any, n: int) -> list[float]:
        try:
            data = resp.json()["data"]
            raw = [float(d["score"]) for d in sorted(data, key=lambda d: d.get("index", 0))]
        except (ValueError, KeyError, TypeError) as exc:
            raise Unreachable(f"the scoring endpoint's reply has no scores ({type(exc).__name__})") from None
        if len(raw) != n:
            raise Unreachable(f"the scoring endpoint returned {len(raw)} scores for {n} pairs")
        if self.config.transform == "sigmoid":
            raw = [1.0 / (1.0 + math.exp(-x)) for x in raw]
        bad = [x for x in raw if not 0.0 <= x <= 1.0]
        if bad:
            raise Unreachable(f"score {bad[0]} is outside 0–1 (set transform = \"sigmoid\" for logits)")
        return raw

    async def score(self, case: Case, output: Any, ctx: ScoreContext) -> Score:
        c = self.config
        trace = ctx.target_output.trace if ctx.target_output is not None else None
        found, where = find_sources(paths_of(c.sources_from, c.sources_field), case, output, trace, c.source_text_key)
        if found is None and c.sources_from:  # the product named no sources: nothing to ground against
            return Score(scorer=self.name, abstained=True, rationale=f"nothing to score: {where}",
                         details={"pairs": 0, "nulls": 0, "no_sources": where})
        pairs = self.pairs(case, output, trace)
        if not pairs:
            return Score(scorer=self.name, abstained=True, rationale="nothing to score (no cited paragraph)",
                         details={"pairs": 0, "nulls": 0})
        try:
            values = await self._post(ctx.services, pairs)
        except Unreachable as exc:
            # Null, never 0: an endpoint that is down says nothing about the answer.
            return Score(scorer=self.name, abstained=True, rationale=str(exc),
                         details={"pairs": len(pairs), "nulls": len(pairs), "null_reason": str(exc)})
        value = sum(values) / len(values)
        passed = None if self.config.pass_at is None else value >= self.config.pass_at
        return Score(scorer=self.name, value=value, passed=passed, rationale=f"mean of {len(values)} scores: {value:.3f}",
                     details={"pairs": len(pairs), "nulls": 0, "scores": values,
                              **({"sources_from": where} if found is not None else {})})

    def requests_per_case(self) -> int:
        """For `evalh run --dry-run`: one request per case, in either mode."""
        return 1

    def incomplete(self, score: Score | None) -> bool:
        """For rejudge: no score yet, or a null one."""
        return score is None or (score.value is None and bool(score.details.get("nulls")))

    async def finalize(self, suite: SuiteView, results: list[CaseResult], services: RunServices) -> dict[str, Any] | None:
        """How many values the suite got, and how many are null (with why)."""
        scores = [s for r in results for s in r.scores if s.scorer == self.name]
        reasons = Counter(str(s.details["null_reason"]).split(":")[0] for s in scores if s.details.get("null_reason"))
        values = [s.value for s in scores if s.value is not None]
        return {
            "scored": len(scores), "values": len(values),
            "nulls": sum(1 for s in scores if s.value is None and s.details.get("nulls")),
            "null_reasons": dict(reasons),
            "mean": sum(values) / len(values) if values else None,
        }


def _joined(sources: list[Any], limit: int) -> str:
    text = "\n\n".join(s.text for s in sources)
    return text[:limit]


def build(config: ScorerConfig, root: Path | None = None) -> ExternalScorer:
    assert isinstance(config, ExternalScoreConfig)
    return ExternalScorer(config)
