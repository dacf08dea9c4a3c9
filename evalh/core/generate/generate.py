"""Generated cases: a model writes a suite's cases from a corpus or a palette before the
suite is planned (`[suites.S.generate]`, `evalh.generate_spec`).

For each of `count` cases, drawn with a `random.Random` seeded by the run's seed and the
suite's name: a strategy, in proportion to the weights; then a corpus row (or, for a
strategy with a `palette`, a topic). The strategy's prompt is rendered over the row *without
its withheld fields* (their values are blanked from the rest of the row too), the topic and
the rolling avoid-list (the last `avoid_last` cases written), and sent to the generator — any
provider, never a model under test. A reply that is empty, too long, not the JSON asked for,
or a near-duplicate of a case already written (word-set Jaccard ≥ `max_similarity`) is asked
again with the reason; after `max_attempts` the case is a *failed generation*: it stays in
the set, and the run records it `errored` with error type `GenerationFailed` without
calling the target (`evalh.targets.pacing.before_call`), counted apart in the record.

The set is frozen before the suite runs: written once as a dataset file
(`<runs dir>/generated/<suite>-<digest>.jsonl`, content-addressed), the suite's `dataset`
pointed at it, and a `record` (file, digest, counts, usage, corpus digest) put into the
suite's `generate` config, so the run document carries both in its config snapshot and
every case with its provenance in `metadata.generated` (strategy, corpus row id and digest,
topic, generator model, prompt digest, attempts). `--resume` takes the set the run recorded
and `rejudge` the results the run stored: neither generates again. `evalh generate -o FILE`
writes a set as an ordinary dataset.

Generation calls go through the provider layer (cache, retries, prices) and are charged to
the run's budget; what they spent is in the record, and the budget the cases get is what is
left. `--dry-run` estimates them without a call.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalh.core.generate.draws import (
    Corpus,
    carried,
    draws,
    load_corpus,
    read_reply,
    render_prompt,
    similarity,
    words,
)
from evalh.errors import ConfigError, EvalhError
from evalh.jsonio import jsonl_bytes
from evalh.models import Case

if TYPE_CHECKING:
    from evalh.config import Config, SuiteConfig
    from evalh.generate_spec import GeneratorConfig
    from evalh.services import RunServices

GENERATION_FAILED = "generation_error"
"""The metadata key of a failed generation (its reason)."""


class GenerationRefused(EvalhError):
    """The generator is a model under test (exit 2, nothing written)."""








# --------------------------------------------------------------------------- generation


@dataclass
class Generated:
    cases: list[Case] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def check_generator(spec: GeneratorConfig, suite: SuiteConfig, allow_self: bool) -> None:
    """The generator must not be a model under test (like a judge)."""
    from evalh.scorers.judge_base import model_key

    for _, target in suite.arm_targets():
        subject = target.model_id()
        if subject and model_key(subject) == model_key(spec.generator.model) and not allow_self:
            raise GenerationRefused(
                f"suite {suite.name!r}: generator model {spec.generator.model!r} is the model under test "
                f"({subject!r}): cases must not be written by the model they test; use another generator "
                "model, or pass --allow-self-judge (recorded in the run)")


async def _generate(spec: GeneratorConfig, suite: str, corpus: Corpus | None, count: int, seed: int,
                    services: RunServices) -> Generated:
    from evalh.errors import BudgetExceeded
    from evalh.providers import ChatRequest, ProviderError, get_provider

    client = get_provider(spec.generator, services)
    width = max(4, len(str(count)))
    accepted: list[tuple[str, frozenset[str]]] = []
    out = Generated()
    usage: dict[str, Any] = {"calls": 0, "cached": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0, "cost_unknown": 0}
    counts: dict[str, Any] = {"requested": count, "generated": 0, "failed": 0, "rejected_duplicates": 0, "rejected_garbage": 0,
              "by_strategy": {s.name: 0 for s in spec.strategies},
              "drawn_by_strategy": {s.name: 0 for s in spec.strategies}}
    stopped: str | None = None
    for draw in draws(spec, corpus, count, seed, suite):
        reason = services.budget.exhausted()
        if reason:
            stopped = f"{reason}: {count - draw.index} of {count} cases not generated"
            break
        counts["drawn_by_strategy"][draw.strategy.name] += 1
        avoid = [q for q, _ in accepted[-spec.avoid_last:]] if spec.avoid_last else []
        system, prompt = render_prompt(spec, draw, avoid)
        prompt_sha = hashlib.sha256(((system or "") + "\0" + prompt).encode()).hexdigest()
        messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
        case_input: dict[str, Any] | None = None
        problem = ""
        attempts = 0
        for attempt in range(spec.max_attempts):
            attempts = attempt + 1
            try:
                reply = await client.chat(ChatRequest(
                    model=spec.generator.model, messages=messages, system=system,
                    max_tokens=spec.generator.max_tokens, temperature=spec.generator.temperature,
                    params=dict(spec.generator.params), attempt=attempt, cache_salt=f"generate:{seed}:{suite}:{draw.index}",
                ))
            except BudgetExceeded as exc:
                stopped = str(exc.args[0]) if exc.args else "budget reached"
                break
            except ProviderError as exc:
                problem = f"generator call failed: {exc}"
                continue
            usage["calls"] += 1
            usage["cached"] += int(reply.cached)
            usage["tokens_in"] += reply.tokens_in or 0
            usage["tokens_out"] += reply.tokens_out or 0
            if reply.cost_usd is None and not reply.cached:
                usage["cost_unknown"] += 1
            else:
                usage["cost_usd"] += reply.cost_usd or 0.0
            got, why = read_reply(spec, reply.text)
            if got is not None:
                q = str(got[spec.input_field])
                ws = words(q)
                close = next(((p, s) for p, w in accepted if (s := similarity(ws, w)) >= spec.max_similarity), None)
                if close is None:
                    case_input, problem = got, ""
                    accepted.append((q, ws))
                    break
                counts["rejected_duplicates"] += 1
                why = f"a near-duplicate (similarity {close[1]:.2f}) of an earlier case: {close[0]!r}"
            else:
                counts["rejected_garbage"] += 1
            problem = f"reply {attempts}: {why}"
            messages = [*messages, {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": f"That reply cannot be used: {why}. Write another one."}]
        if stopped and case_input is None:
            break
        provenance = {
            "strategy": draw.strategy.name, "generator_model": spec.generator.model, "prompt_sha256": prompt_sha,
            "attempts": attempts, "index": draw.index,
        }
        if draw.row is not None:
            provenance.update(corpus_row=draw.row.id, corpus_row_sha256=draw.row.sha256)
        if draw.topic is not None:
            provenance["topic"] = draw.topic
        metadata: dict[str, Any] = {"strategy": draw.strategy.name, "generated": provenance}
        if draw.row is not None:
            metadata["group"] = f"row:{draw.row.id}"  # cases of one corpus row are related
        cid = f"{suite}.g{draw.index + 1:0{width}d}"
        if case_input is None:
            counts["failed"] += 1
            metadata[GENERATION_FAILED] = problem or "no usable reply"
            out.cases.append(Case(id=cid, input={spec.input_field: None}, metadata=metadata))  # type: ignore[arg-type]
            continue
        for key, src in spec.metadata.items():
            metadata[key] = carried(src, draw, case_input)
        expected = {key: v for key, src in spec.expected.items() if (v := carried(src, draw, case_input)) is not None} or None
        inp = {spec.input_field: case_input[spec.input_field]}  # other reply keys only where carried
        counts["generated"] += 1
        counts["by_strategy"][draw.strategy.name] += 1
        out.cases.append(Case(id=cid, input=inp, expected=expected, metadata=metadata))  # type: ignore[arg-type]
    out.record = {
        "by": "evalh", "seed": seed, "generator_model": spec.generator.model, **counts,
        "stopped": stopped, "usage": usage,
        "corpus": {"path": corpus.display, "sha256": corpus.sha256, "rows": len(corpus.rows)} if corpus else None,
    }
    return out


@contextmanager
def templates_of(config: Config, suite: SuiteConfig) -> Iterator[None]:
    """A template that does not render is bad config: one line naming the file and suite."""
    from evalh.targets.templates import TemplateError

    try:
        yield
    except TemplateError as exc:
        raise ConfigError(f"{config.path}: suites.{suite.name}.generate: {exc}") from None


def generate_suite(config: Config, suite: SuiteConfig, *, seed: int, count: int | None, services: RunServices,
                   allow_self: bool = False) -> Generated:
    """Write the suite's cases (blocking: runs its own event loop)."""
    from evalh.providers import close_providers

    spec = suite.generate
    assert spec is not None
    check_generator(spec, suite, allow_self)
    corpus = load_corpus(config.resolve(spec.corpus), spec.corpus, spec.corpus_id, spec.corpus_text) if spec.corpus else None
    n = count or spec.count
    with templates_of(config, suite):  # every prompt renders, before the first call
        for d in draws(spec, corpus, n, seed, suite.name):
            render_prompt(spec, d, [])

    async def main() -> Generated:
        try:
            return await _generate(spec, suite.name, corpus, count or spec.count, seed, services)
        finally:
            await close_providers(services)

    return asyncio.run(main())


def cases_jsonl(cases: list[Case]) -> bytes:
    """The cases as a dataset file, every registered secret scrubbed: a generator that
    quotes its request (its key) must not put the key in a file people commit."""
    from evalh.redact import scrub_secrets

    return scrub_secrets(jsonl_bytes({"id": c.id, "input": c.input, "expected": c.expected,
                                      "metadata": c.metadata.model_dump(mode="json", exclude_none=True)}
                                     for c in cases))


# --------------------------------------------------------------------------- freezing


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def freeze(config: Config, suite: SuiteConfig, generated: Generated, runs_dir: Path) -> SuiteConfig:
    """Write the set (after the dataset's own cases, if any) as a content-addressed dataset
    file and return the suite pointed at it, with the record in its `generate` config."""
    from evalh.atomic import atomic_write_bytes

    assert suite.generate is not None
    own: list[Case] = []
    if suite.dataset:
        from evalh.datasets import load_dataset

        own = list(load_dataset(config.resolve(suite.dataset), display=suite.dataset).cases)
    data = cases_jsonl(own + generated.cases)
    digest = hashlib.sha256(data).hexdigest()
    path = runs_dir / "generated" / f"{suite.name}-{digest[:16]}.jsonl"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)
    record = {**generated.record, "file": _relative(path, config.root), "sha256": digest,
              "from_dataset": suite.dataset or None, "cases": len(own) + len(generated.cases)}
    spec = suite.generate.model_copy(update={"record": record})
    return suite.model_copy(update={"dataset": record["file"], "generate": spec})


def generating_suites(config: Config, names: list[str] | None, *, dry_run: bool = False) -> list[SuiteConfig]:
    from evalh.core.run.plan import select_suites

    chosen, _ = select_suites(config, names, require_credentials=not dry_run)
    return [s for s in chosen if s.generate is not None and s.generate.record is None]


def with_generated(config: Config, names: list[str] | None, runs_dir: Path, *, seed: int,
                   iterations: int | None, max_cost_usd: float | None, max_tokens: int | None,
                   allow_self: bool = False, use_cache: bool = True) -> tuple[Config, dict[str, float]]:
    """The config with every chosen generating suite's cases written and frozen, and what
    generating spent (`cost_usd`, `tokens`), for the run's budget."""

    suites = generating_suites(config, names)
    spent = {"cost_usd": 0.0, "tokens": 0.0}
    if not suites:
        return config, spent
    services = _services(config, max_cost_usd, max_tokens, allow_self, use_cache)
    updated = dict(config.suites)
    for suite in suites:
        generated = generate_suite(config, suite, seed=seed, count=iterations, services=services, allow_self=allow_self)
        updated[suite.name] = freeze(config, suite, generated, runs_dir)
    spent["cost_usd"] = services.budget.cost_usd
    spent["tokens"] = float(services.budget.tokens)
    return config.model_copy(update={"suites": updated}), spent


def restore_generated(config: Config, recorded: dict[str, Any]) -> Config:
    """For `--resume`: each generating suite takes the set its run recorded (never a new one)."""
    from evalh.generate_spec import GeneratorConfig

    updated = dict(config.suites)
    for name, snap in (recorded.get("suites") or {}).items():
        gen = (snap or {}).get("generate") if isinstance(snap, dict) else None
        suite = updated.get(name)
        if suite is None or suite.generate is None or not isinstance(gen, dict) or not gen.get("record"):
            continue
        spec = suite.generate.model_copy(update={"record": GeneratorConfig.model_validate(
            {**suite.generate.model_dump(), "record": gen["record"]}).record})
        updated[name] = suite.model_copy(update={"dataset": snap.get("dataset") or gen["record"]["file"], "generate": spec})
    return config.model_copy(update={"suites": updated})


# --------------------------------------------------------------------------- `evalh run`


@dataclass
class RunGeneration:
    """What `evalh run` plans with: the config (generated suites frozen), the seed that drew
    them, the budget left for the cases, and lines to show."""

    config: Config
    seed: int | None
    max_cost_usd: float | None
    max_tokens: int | None
    notes: list[str] = field(default_factory=list)
    _keep: Any = None  # a dry run's placeholder directory, alive while the plan is estimated


def _recorded_config(runs_dir: Path, run_id: str) -> dict[str, Any]:
    from evalh.journal import Journal
    from evalh.store import RunStore

    store = RunStore(runs_dir)
    journal = store.journal_path(run_id)
    if journal.is_file():
        header, _ = Journal.read(journal)
        if header and isinstance(header.get("config"), dict):
            return header["config"]
    try:
        return store.load(run_id).config
    except Exception:  # no such run: `--resume` says so itself
        return {}


def estimate_generation(config: Config, suite: SuiteConfig, seed: int, count: int | None) -> tuple[str, list[Case]]:
    """A dry run's line for one generating suite (requests, tokens, cost; no call) and
    placeholder cases for the plan's estimate."""
    from evalh.providers.prices import merged_prices

    spec = suite.generate
    assert spec is not None
    corpus = load_corpus(config.resolve(spec.corpus), spec.corpus, spec.corpus_id, spec.corpus_text) if spec.corpus else None
    n = count or spec.count
    tokens_in = 0
    cases = []
    width = max(4, len(str(n)))
    for d in draws(spec, corpus, n, seed, suite.name):
        with templates_of(config, suite):
            system, prompt = render_prompt(spec, d, [])
        tokens_in += (len(system or "") + len(prompt)) // 4 + 1
        cases.append(Case(id=f"{suite.name}.g{d.index + 1:0{width}d}", input={spec.input_field: "(to be generated)"},
                          metadata={"strategy": d.strategy.name}))  # type: ignore[arg-type]
    tokens_out = n * spec.generator.max_tokens
    price = merged_prices(dict(config.prices)).get(spec.generator.model)
    cost = (f"${(tokens_in * price.input + tokens_out * price.output) / 1e6:.4f}" if price is not None
            else "unknown (no price)")
    line = (f"suite {suite.name}: generating {n} cases: {n} requests to {spec.generator.model} (up to "
            f"{n * spec.max_attempts} with re-asks), ~{tokens_in} input tokens, at most {tokens_out} output "
            f"tokens, cost at most {cost}")
    return line, cases


def with_placeholders(config: Config, suites: list[SuiteConfig], seed: int,
                      iterations: int | None) -> tuple[Config, list[str], Any]:
    """The config with each generating suite planned on placeholder cases (its corpus read and
    its templates rendered, nothing called), the estimate lines, and the temporary directory
    holding the placeholders (alive as long as it is referenced)."""
    import tempfile

    keep = tempfile.TemporaryDirectory(prefix="evalh-generate-")
    updated = dict(config.suites)
    notes = []
    for suite in suites:
        line, cases = estimate_generation(config, suite, seed, iterations)
        notes.append(line)
        own: list[Case] = []
        if suite.dataset:
            from evalh.datasets import load_dataset

            own = list(load_dataset(config.resolve(suite.dataset), display=suite.dataset).cases)
        path = Path(keep.name) / f"{suite.name}.jsonl"
        path.write_bytes(cases_jsonl(own + cases))
        updated[suite.name] = suite.model_copy(update={"dataset": str(path)})
    return config.model_copy(update={"suites": updated}), notes, keep


def for_validate(config: Config) -> tuple[Config, Any]:
    """`evalh validate`: generating suites checked on placeholder cases (corpus, templates)."""
    suites = [s for s in config.suites.values() if getattr(s, "generate", None) is not None]
    if not suites:
        return config, None
    seed = config.settings.seed if config.settings.seed is not None else 0
    cfg, _, keep = with_placeholders(config, suites, seed, None)
    return cfg, keep


def for_run(config: Config, *, suites: list[str] | None, runs_dir: Path, seed: int | None, iterations: int | None,
            max_cost_usd: float | None, max_tokens: int | None, resume: str | None, dry_run: bool,
            allow_self: bool, use_cache: bool = True) -> RunGeneration:
    """The generation step of `evalh run`, before anything is planned."""
    if not any(getattr(s, "generate", None) is not None for s in config.suites.values()):
        if iterations is not None:
            raise EvalhError("--iterations: no suite has a `generate` table")
        return RunGeneration(config, seed, max_cost_usd, max_tokens)
    if resume is not None:
        if iterations is not None:
            raise EvalhError("--resume keeps the run's generated cases: drop --iterations")
        return RunGeneration(restore_generated(config, _recorded_config(runs_dir, resume)), seed, max_cost_usd, max_tokens)
    from evalh.core.run.plan import resolve_seed

    seed = resolve_seed(seed, config)  # drawn here, so the run records the seed that drew its cases
    if dry_run:
        cfg, notes, keep = with_placeholders(config, generating_suites(config, suites, dry_run=True), seed, iterations)
        return RunGeneration(cfg, seed, max_cost_usd, max_tokens, notes, keep)
    cfg, spent = with_generated(config, suites, runs_dir, seed=seed, iterations=iterations,
                                max_cost_usd=max_cost_usd, max_tokens=max_tokens, allow_self=allow_self,
                                use_cache=use_cache)
    cost = max_cost_usd if max_cost_usd is not None else config.settings.max_cost_usd
    toks = max_tokens if max_tokens is not None else config.settings.max_tokens
    notes = []
    for s in cfg.suites.values():
        rec = s.generate.record if s.generate is not None else None
        if rec and (s.name in (suites or [s.name])):
            u = rec["usage"]
            spent_text = f"${u['cost_usd']:.4f}" + (f" + {u['cost_unknown']} unpriced" if u["cost_unknown"] else "")
            notes.append(f"suite {s.name}: generated {rec['generated']} of {rec['requested']} cases "
                         f"({rec['failed']} failed, {rec['rejected_duplicates']} near-duplicates asked again; "
                         f"{u['calls']} generator calls" + (f" ({u['cached']} cached)" if u["cached"] else "") + f", {u['tokens_in'] + u['tokens_out']} tokens, {spent_text})"
                         + (f"; stopped: {rec['stopped']}" if rec.get("stopped") else ""))
    return RunGeneration(
        cfg, seed,
        None if cost is None else max(0.0, cost - spent["cost_usd"]),
        None if toks is None else max(0, toks - int(spent["tokens"])),
        notes,
    )


# --------------------------------------------------------------------------- `evalh generate`


def _services(config: Config, max_cost_usd: float | None, max_tokens: int | None, allow_self: bool,
              use_cache: bool = True) -> RunServices:
    from evalh.providers.cache import ResponseCache, default_cache_dir
    from evalh.providers.prices import merged_prices
    from evalh.services import Budget, RunServices

    services = RunServices(
        root=config.root, prices=merged_prices(dict(config.prices)),
        budget=Budget(max_cost_usd=max_cost_usd if max_cost_usd is not None else config.settings.max_cost_usd,
                      max_tokens=max_tokens if max_tokens is not None else config.settings.max_tokens),
        allow_self_judge=allow_self, max_retry_wait_s=config.settings.max_retry_wait_s,
    )
    if use_cache:
        services.cache = ResponseCache(default_cache_dir(config.root))
    return services


def generate_to_file(config: Config, name: str, out: Path, *, seed: int | None, iterations: int | None,
                     max_cost_usd: float | None = None, max_tokens: int | None = None,
                     allow_self: bool = False) -> dict[str, Any]:
    """`evalh generate`: write a suite's generated cases (the failed ones left out, counted)
    to `out` as an ordinary dataset; returns the generation's record."""
    from evalh.atomic import atomic_write_bytes
    from evalh.core.run.plan import resolve_seed

    suite = config.suite(name)
    if suite.generate is None:
        raise EvalhError(f"suite {name!r} has no `generate` table")
    seed = resolve_seed(seed, config)
    services = _services(config, max_cost_usd, max_tokens, allow_self)
    generated = generate_suite(config, suite, seed=seed, count=iterations, services=services, allow_self=allow_self)
    good = [c for c in generated.cases if not getattr(c.metadata, GENERATION_FAILED, None)]
    if not good:  # a generation that wrote nothing is never a success, nor an empty dataset
        record = generated.record
        first = next((str(getattr(c.metadata, GENERATION_FAILED)) for c in generated.cases
                      if getattr(c.metadata, GENERATION_FAILED, None)), None)
        why = (f"{record.get('failed', 0)} of {record.get('requested', 0)} generations failed"
               + (f" (the first: {first})" if first else "")
               + (f"; stopped: {record['stopped']}" if record.get("stopped") else ""))
        raise EvalhError(f"suite {name!r}: no case generated: {why}; {out} not written", exit_code=1)
    data = cases_jsonl(good)
    atomic_write_bytes(out, data)
    return {**generated.record, "file": str(out), "sha256": hashlib.sha256(data).hexdigest(), "cases": len(good)}
