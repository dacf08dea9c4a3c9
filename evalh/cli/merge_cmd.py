"""`evalh merge`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt


@translate_errors
def merge(
    runs: Annotated[list[str], typer.Argument(metavar="RUN", help="The shard runs: run ids (see `evalh runs`) or paths to run documents.")],
    label: Annotated[str | None, typer.Option("--label", "-l", metavar="LABEL", help="The merged run's label (default: the shards' own; required when theirs differ).")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", metavar="DIR", file_okay=False, help="Write the merged run into DIR (default: the runs directory).")] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Merge the shards of a sharded run (`evalh run --shard K/N`) into one run document.

    The merged run is the document one unsharded `evalh run` would have written: every
    shard's results in dataset order, the aggregates and summary recomputed over all of
    them, `merged_from` listing the shard run ids. Refused (exit 2, one line, nothing
    written) unless the runs are shards 1..N of one run, each exactly once: same config
    snapshot, seed, suites, dataset digests and commit; no case in two shards. The
    datasets are read from the project (they must be the ones the shards ran on).

    A partial shard makes the merged run partial (its reason names the shard): resume that
    shard and merge again. The exit code is the one the unsharded `evalh run` would have
    given: 0, or 1 when a deterministic case failed, a suite is over its max_error_rate or
    the run is partial.

    Examples:

        evalh merge 20261129T201530123Z-3fa9c1 20261129T201530456Z-7b2e04

        evalh merge shards/*/*.json --label "nightly"      # documents downloaded from CI jobs
    """
    from evalh.config import load_config
    from evalh.console import err, out, safe_text
    from evalh.core.run.merge import merge_runs
    from evalh.core.run.verdict import run_verdict
    from evalh.store import RunStore, resolve_runs_dir

    cfg = load_config(config)
    store = RunStore(resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir))
    merged = merge_runs([store.load(ref) for ref in runs], cfg, label=label)
    target = RunStore(output) if output is not None else store
    path = target.write(merged)
    verdict = run_verdict(merged)
    for reason in verdict.reasons:
        err().print(safe_text(reason, style="red"))
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text({
            "run_id": merged.run_id, "path": str(path), "status": merged.status,
            "merged_from": merged.merged_from, "exit_code": verdict.code, "reasons": verdict.reasons,
            "summary": merged.summary,
        }))
    elif not quiet:
        results = sum(len(s.cases) for s in merged.suites.values())
        err().print(safe_text(f"merged {len(merged.merged_from)} shards into run {merged.run_id} "
                              f"({merged.status}, {results} results)"))
        err().print(f"wrote {path}", markup=False, highlight=False)
    if verdict.code:
        raise typer.Exit(code=verdict.code)
