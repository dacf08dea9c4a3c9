"""`evalh generate`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt


@translate_errors
def generate(
    suite: Annotated[str, typer.Option("--suite", "-s", metavar="SUITE", help="The suite whose `generate` table writes the cases.")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", dir_okay=False, help="The dataset to write (JSONL).")],
    iterations: Annotated[int | None, typer.Option("--iterations", "-n", min=1, metavar="N", help="How many cases to write (default: the table's count).")] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="SEED", help="Seed of the sampling (default: [evalh] seed, else a random one; printed).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0, metavar="USD", help="Stop generating once this many USD are spent.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=0, metavar="TOKENS", help="Stop generating once this many tokens are used.")] = None,
    allow_self_judge: Annotated[bool, typer.Option("--allow-self-judge", help="Let a model under test write its own cases (refused otherwise).")] = False,
    config: ConfigOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Write a suite's generated cases to FILE as an ordinary dataset, to freeze them: point
    a suite's `dataset` at FILE and later runs use these cases instead of writing new ones.

    Each case keeps its provenance in `metadata.generated` (strategy, corpus row and its
    digest, topic, generator model, prompt digest). Cases the generator failed to write are
    left out and counted. Exit 0 when at least one case was written; 1 when none was (the
    generator down, every reply unusable, a budget spent before the first case): FILE is
    then not written; 2 on bad input or a generator that is a model under test.

    Examples:

        evalh generate --suite parliament -o datasets/parliament.frozen.jsonl

        evalh generate --suite parliament --iterations 300 --seed 1 -o generated.jsonl --json
    """
    from evalh.config import load_config
    from evalh.console import err, out
    from evalh.core.generate.generate import generate_to_file

    cfg = load_config(config)
    record = generate_to_file(cfg, suite, output, seed=seed, iterations=iterations, max_cost_usd=max_cost,
                              max_tokens=max_tokens, allow_self=allow_self_judge)
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text(record))
        return
    if quiet:
        return
    err().print(
        f"wrote {record['cases']} cases to {output} (seed {record['seed']}; {record['failed']} failed generations "
        f"left out, {record['rejected_duplicates']} near-duplicates asked again; "
        f"{record['usage']['calls']} generator calls)"
        + (f"; stopped: {record['stopped']}" if record.get("stopped") else ""),
        markup=False, highlight=False)
