"""`evalh baseline set RUN [RUN ...]`, `evalh baseline show` and `evalh baseline noise`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt

app = typer.Typer(
    name="baseline",
    help=(
        "The BASELINE marker: the run(s) `evalh compare` and `evalh run --compare-baseline` "
        "compare against. A text file at the project root holding one run id a line; commit "
        "it. Several runs of one configuration are pooled per case, and `baseline noise` "
        "measures how far they move against each other."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("set")
@translate_errors
def set_(
    runs: Annotated[list[str], typer.Argument(
        metavar="RUN_ID...",
        help="Run id(s) (see `evalh runs`) or path(s) to run documents: several runs of one "
             "configuration make one pooled baseline.")],
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Make RUN_ID (or several runs) the baseline: write their ids to BASELINE at the
    project root, one a line.

    Every run must exist in the runs directory and be a valid run document. Several runs
    must be runs of one configuration: their suites must agree in what ran (target,
    scorers, dataset digest, regime, arms); seed, label, thresholds and start time may
    differ. `evalh compare` then pools them per case (their attempts together) and says how
    many it used; `evalh baseline noise` measures their noise floor. A run that is not
    complete, or a shard of a run, can be in the baseline, with a warning. Exit 0; 2 on a missing or unreadable
    run, a run named twice, or runs of different configurations (BASELINE is left as it was).

    Examples:

        evalh baseline set 20261129T201530123Z-3fa9c1 && git add BASELINE

        evalh baseline set RUN_A RUN_B RUN_C && evalh baseline noise && git add BASELINE BASELINE.noise.json
    """
    from evalh.baseline import check_baseline_runs, noise_path, write_baseline
    from evalh.cli.project import open_project
    from evalh.console import err, warn

    root, store = open_project(config, runs_dir)
    ids, warnings = check_baseline_runs(store, runs)
    for warning in warnings:
        warn(warning)
    path = write_baseline(root, ids)
    if quiet:
        return
    shown = ids[0] if len(ids) == 1 else f"{len(ids)} runs ({', '.join(ids)})"
    err().print(f"baseline: {shown} (wrote {path})", markup=False, highlight=False)
    if len(ids) > 1:
        err().print(f"measure their noise floor with `evalh baseline noise` (writes "
                    f"{noise_path(root).name})", markup=False, highlight=False)


@app.command("show")
@translate_errors
def show(
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Print the baseline run id(s) (stdout), one a line; exit 2 when no baseline is set.

    With --json: `run_id` (the first), `run_ids` (all), `runs` (each with `run_exists`),
    the marker's `path` and `noise` (the noise file's path, or null when it is missing or
    was measured on other runs).

    Examples:

        evalh baseline show

        evalh show "$(evalh baseline show | head -n 1)"
    """
    from evalh.baseline import baseline_path, noise_path, read_noise, require_baseline_ids
    from evalh.cli.project import open_project
    from evalh.console import out, warn
    from evalh.errors import RunNotFound
    from evalh.jsonio import document_text

    root, store = open_project(config, runs_dir)
    ids = require_baseline_ids(root)
    exists: dict[str, bool] = {}
    for run_id in ids:
        try:
            exists[run_id] = store.resolve(run_id) is not None
        except RunNotFound:
            exists[run_id] = False
            warn(f"BASELINE names {run_id}, which is not in {store.runs_dir}")
    noise = None
    if len(ids) > 1:
        doc, why = read_noise(root, ids)
        if why:
            warn(why)
        noise = str(noise_path(root)) if doc is not None else None
    if json_out:
        doc = {"run_id": ids[0], "path": str(baseline_path(root)), "run_exists": exists[ids[0]],
               "run_ids": ids, "runs": [{"run_id": i, "run_exists": exists[i]} for i in ids],
               "noise": noise}
        out().file.write(document_text(doc))
    else:
        out().file.write("".join(f"{i}\n" for i in ids))


@app.command("noise")
@translate_errors
def noise(
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Measure the noise floor of the baseline runs and store it beside BASELINE.

    Every pair of baseline runs is compared as `evalh compare` would (A/A: nothing changed
    between them), and each suite's cases are counted directly. Per suite: how many cases
    flip (their outcome differs between two baseline runs, out of the cases at least two
    runs have), and per metric row the spread (min, max, sd) of its change across the
    pairs and the A/A verdicts; and the pass-rate drop a candidate run like these catches
    against them pooled with 80 % power (`detectable`). Written to BASELINE.noise.json (atomically), shown by
    `evalh compare` against BASELINE, one line per suite. Needs at least two baseline runs.
    Exit 0; 2 with fewer than two baseline runs or a run that cannot be read.

    Examples:

        evalh baseline set RUN_A RUN_B RUN_C && evalh baseline noise

        evalh baseline noise --json | jq '.suites.panel.cases'
    """
    from evalh.baseline import check_poolable, require_baseline_ids, write_noise
    from evalh.cli.project import open_project
    from evalh.console import err, inert, out
    from evalh.core.compare.noise import measure_noise, noise_line
    from evalh.errors import EvalhError
    from evalh.gcpause import gc_paused
    from evalh.jsonio import document_text
    from evalh.store import now_iso

    root, store = open_project(config, runs_dir)
    ids = require_baseline_ids(root)
    if len(ids) < 2:
        raise EvalhError(
            f"BASELINE names one run ({ids[0]}): the noise floor needs at least two; "
            "set several runs of one configuration with `evalh baseline set RUN_A RUN_B ...`"
        )
    with gc_paused():
        runs = [store.load(i) for i in ids]
        check_poolable(runs)
        doc = measure_noise(runs, measured_at=now_iso())
    path = write_noise(root, doc)
    if json_out:
        out().file.write(document_text(doc))
    else:
        console = out()
        console.file.write(f"{len(ids)} baseline runs, {doc['pairs']} pairs\n")
        for name, s in doc["suites"].items():
            line = noise_line(doc, name) or f"noise floor: suite {name} is in one baseline run only"
            console.file.write(inert(f"{name} ({s['regime']}): {line}") + "\n")
    if not quiet:
        err().print(f"wrote {path}", markup=False, highlight=False)
