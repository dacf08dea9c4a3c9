"""`evalh run`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt


@translate_errors
def run(
    suite: Annotated[
        list[str] | None,
        typer.Option("--suite", "-s", help="Suite to run (repeatable). Default: every suite that can run, cheapest first."),
    ] = None,
    label: Annotated[str | None, typer.Option("--label", "-l", help="A label stored with the run, e.g. 'prompt=v2'.")] = None,
    repeats: Annotated[int | None, typer.Option("--repeats", "-n", min=1, help="Run each case N times (attempt 0..N-1).")] = None,
    concurrency: Annotated[int | None, typer.Option("--concurrency", "-j", min=1, help="Cases in flight at once.")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", min=0.001, help="Per-case timeout in seconds.")] = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Seed of the order shuffle (recorded in the run).")] = None,
    max_cost: Annotated[float | None, typer.Option("--max-cost", min=0, help="Stop starting cases once this many USD are spent; the run is written partial.")] = None,
    max_tokens: Annotated[int | None, typer.Option("--max-tokens", min=0, help="Stop starting cases once this many tokens are used.")] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache: every model call goes to the provider.")] = False,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run suites against their targets, score every case, and write one run document.

    Exit 0 when every deterministic case passed; 1 when a deterministic case failed or
    errored; 2 on bad usage or bad input (nothing is written then).

    Examples:

        evalh run --suite gate

        evalh run --suite live --repeats 5 --label "prompt=v2" --max-cost 2
    """
    from evalh.cli.progress import ProgressObserver
    from evalh.cli.render_run import render_run
    from evalh.config import load_config
    from evalh.console import err, out, warn
    from evalh.core.session import RunOptions, execute, prepare_run
    from evalh.store import RunStore, resolve_runs_dir

    cfg = load_config(config)
    directory = resolve_runs_dir(runs_dir, cfg.root, cfg.settings.runs_dir)
    options = RunOptions(
        suites=suite, label=label, seed=seed, repeats=repeats, concurrency=concurrency,
        timeout_s=timeout, max_cost_usd=max_cost, max_tokens=max_tokens, use_cache=not no_cache,
    )
    prepared = prepare_run(cfg, options, directory)
    for name, missing in prepared.skipped:
        warn(f"skipped suite {name!r}: needs {', '.join(missing)}")
    if not prepared.plan.suites:
        from evalh.errors import EvalhError

        raise EvalhError("no suite can run (see the skipped suites above)")
    store = RunStore(directory)
    result = execute(prepared, store, ProgressObserver(enabled=not quiet and not json_out))
    path = store.path_for(result.run_id)
    if json_out:
        import orjson

        out().file.write(orjson.dumps(
            {"run_id": result.run_id, "path": str(path), "status": result.status,
             "summary": result.summary}, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif not quiet:
        render_run(result, out())
        err().print(f"wrote {path}", markup=False, highlight=False)
    if not result.summary.get("deterministic_ok", True):
        raise typer.Exit(code=1)


