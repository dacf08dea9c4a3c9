"""`[suites.S.generate]`: cases a model writes from a corpus or a palette (the config; the
work is `evalh.core.generate.generate`).

    [suites.talks.generate]
    corpus = "datasets/talks.jsonl"          # JSONL or CSV rows, or a directory of .txt files
    count = 30                               # `evalh run --iterations N` overrides it
    generator = { provider = "anthropic", model = "claude-sonnet-4-0" }
    withhold = ["speaker"]                   # never shown to the generator
    expected = { speaker = "row.speaker" }   # the withheld speaker is the label
    metadata = { party = "row.party", complexity = "reply.complexity" }

    [[suites.talks.generate.strategies]]
    name = "talk_seed"
    weight = 2
    prompt = "Write a journalist's question broader than: {{ row.text[:500] }} ({{ row.party }})"

    [[suites.talks.generate.strategies]]
    name = "free"
    weight = 1
    palette = ["schools", "healthcare", "defence"]
    prompt = "Write a question about {{ topic }}. Not one of: {{ avoid | join(' / ') }}"
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from evalh.providers.base import ProviderConfig

_SOURCE = re.compile(r"^(row|reply)\.[A-Za-z0-9_.-]+$|^(strategy|topic|row_id)$")


class StrategyConfig(BaseModel):
    """One way of writing a case: a prompt template over a sampled corpus row (`row`) or,
    with a `palette`, over a sampled palette entry (`topic`)."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({"name", "weight", "prompt", "palette", "system"})

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    """The strategy's name, recorded in each case's metadata (`strategy`)."""
    weight: float = Field(1.0, gt=0)
    """Relative weight: each case picks its strategy at random in proportion (2 and 1: two
    thirds and one third)."""
    prompt: str
    """The generator's prompt, a template over `row` (the sampled corpus row without the
    withheld fields; `row.text` is its text), `row_id`, `topic` (a palette entry), `avoid`
    (the last `avoid_last` cases written, as text) and `strategy`."""
    system: str | None = None
    """A system prompt for the generator (a template too)."""
    palette: list[str] | None = Field(None, min_length=1)
    """Topics sampled instead of a corpus row; without it the strategy samples the corpus."""


class GeneratorConfig(BaseModel):
    """`[suites.S.generate]`: cases written by a model before the suite runs, stored in the
    run document with their provenance (see docs/generated-cases.md)."""

    model_config = ConfigDict(extra="forbid")
    SNAPSHOT: ClassVar[frozenset[str]] = frozenset({
        "corpus", "corpus_id", "corpus_text", "count", "generator", "strategies", "withhold", "input_field",
        "reply", "expected", "metadata", "avoid_last", "max_similarity", "max_attempts", "max_chars", "record",
    })

    corpus: str | None = None
    """A JSONL or CSV file of rows, or a directory of `.txt` files (one row each), relative to
    the project root; validated like a dataset, its digest and each row's recorded."""
    corpus_id: str = "id"
    """The column naming a row (unique); a directory's rows are named by file name."""
    corpus_text: str = "text"
    """The column holding a row's text (a directory's file contents)."""
    count: int = Field(10, ge=1)
    """How many cases to write; `evalh run --iterations N` overrides it."""
    generator: ProviderConfig
    """Who writes: a provider table (`provider`, `model`, `base_url`, …), any provider; never
    a model under test (refused like a judge, unless `--allow-self-judge`)."""
    strategies: list[StrategyConfig] = Field(min_length=1)
    """The strategies, each picked with probability weight ÷ total weight."""
    withhold: list[str] = Field(default_factory=list)
    """Row fields the generator never sees (not in `row`, and their values blanked out of
    the row's other text); they can still be carried into `expected` and `metadata`."""
    input_field: str = "question"
    """The case input is `{input_field: the reply}` (`reply = "text"`), or the reply object,
    which must hold this field (`reply = "json"`)."""
    reply: Literal["text", "json"] = "text"
    """`text`: the reply is the question. `json`: a JSON object (its other keys readable as
    `reply.KEY` by `expected` and `metadata`)."""
    expected: dict[str, str] = Field(default_factory=dict)
    """The case's `expected`: key → `row.FIELD`, `reply.KEY`, `strategy`, `topic` or `row_id`;
    `row.topic|topic` takes the first that has a value."""
    metadata: dict[str, str] = Field(default_factory=dict)
    """Case metadata carried the same way (reports can break down by them: `--by complexity`)."""
    avoid_last: int = Field(20, ge=0)
    """The rolling avoid-list: the last N cases written, shown to the prompt as `avoid`."""
    max_similarity: float = Field(0.8, gt=0, le=1)
    """A case whose word-set similarity (Jaccard) to one already written reaches this is a
    near-duplicate: rejected and asked again."""
    max_attempts: int = Field(3, ge=1, le=10)
    """Requests per case: a reply that is empty, not JSON when it should be, too long or a
    near-duplicate is asked again; after this many the case is a failed generation."""
    max_chars: int = Field(2000, ge=10)
    """A reply longer than this is garbage."""
    record: dict[str, Any] | None = None
    """Written by evalh, never by hand: what the generation produced (the frozen set's file and
    digest, counts, usage), so a resumed run and its record reuse it."""

    @field_validator("record")
    @classmethod
    def _by_evalh(cls, v: Any) -> Any:
        if v is not None and not (isinstance(v, dict) and v.get("by") == "evalh"):
            raise ValueError("`record` is written by evalh; leave it out")
        return v

    @model_validator(mode="after")
    def _sources(self) -> GeneratorConfig:
        for where in ("expected", "metadata"):
            for key, src in getattr(self, where).items():
                for part in src.split("|"):
                    if not _SOURCE.match(part):
                        raise ValueError(f"{where}.{key}: {part!r} must be row.FIELD, reply.KEY, strategy, topic "
                                         "or row_id (several joined by `|`: the first that has a value)")
                    if part.startswith("reply.") and self.reply != "json":
                        raise ValueError(f"{where}.{key}: {part!r} needs reply = \"json\"")
        if self.corpus is None and any(s.palette is None for s in self.strategies):
            raise ValueError("a strategy without a palette samples the corpus: give `corpus`")
        names = [s.name for s in self.strategies]
        if len(set(names)) != len(names):
            raise ValueError(f"strategy names must be unique: {names}")
        return self
