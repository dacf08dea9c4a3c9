"""`evalh import`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt

if TYPE_CHECKING:
    from evalh.config import Thresholds


def _project_thresholds(config: Path | None) -> dict[str, Thresholds]:
    """The allowances of the project's suites (none outside a project): an imported suite
    records those of the suite of its name, as a run of that suite would."""
    from evalh.config import load_config
    from evalh.errors import ConfigError
    from evalh.scaffold import find_config

    try:
        path = config or find_config()
    except ConfigError:
        return {}
    return {name: suite.thresholds for name, suite in load_config(path, check_datasets=False).suites.items()}


@translate_errors
def import_(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH...", help="inspect_ai logs (.eval, .json) or promptfoo result files (promptfoo eval -o results.json).")],
    regime: Annotated[str | None, typer.Option("--regime", metavar="REGIME", help="deterministic or stochastic (default: stochastic where the file has several epochs or repeats).")] = None,
    label: Annotated[str | None, typer.Option("--label", "-l", metavar="LABEL", help="Label of the new run (default: the tool, task and model).")] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Import inspect_ai logs and promptfoo results as evalh runs, one run a file.

    Samples or test cases become cases (id, input, target or assertions as `expected`,
    metadata), epochs or repeats attempts, each named scorer a scorer (pass/fail and graded
    kept apart), errors `errored`; tokens, cost and latency where the file records them;
    the model and task config go in the run's config snapshot, the git sha where recorded.
    What cannot be mapped is named in the run's `config.import.notes`. Then `compare`,
    `report`, `ui`, `rejudge` and `label` work on the imported runs as on any.

    Prints each new run's id (with --json, what `evalh run --json` prints: one object a
    file, with the run's own exit code and reasons). Exit 0; 1 when an imported run
    measured nothing (every result of a suite errored: it is kept, and named); 2 when a
    file cannot be read (one line naming it; nothing is written).

    Examples:

        evalh import logs/2026-12-01T10-00-00_capitals_abc.eval

        evalh baseline set "$(evalh import main-results.json)"

        evalh import pr-results.json --json
    """
    from evalh.cli.project import open_project
    from evalh.console import err, out
    from evalh.core.request.imported import import_runs
    from evalh.errors import ConfigError
    from evalh.importers import read_file

    if regime not in (None, "deterministic", "stochastic"):
        raise ConfigError(f"--regime: {regime!r} is neither deterministic nor stochastic")
    chosen: Literal["deterministic", "stochastic"] | None = regime  # type: ignore[assignment]
    root, store = open_project(config, runs_dir)
    from evalh.core.results.outcome import error_gates
    from evalh.core.run.verdict import run_verdict

    imported = [read_file(p) for p in paths]  # every file read and planned before anything is written
    nothing: list[str] = []
    runs = import_runs(imported, store, root, regime=chosen, label=label, thresholds=_project_thresholds(config))
    for item, run in zip(imported, runs, strict=True):
        path = store.path_for(run.run_id)
        nothing += [f"{item.source.name} (run {run.run_id}): {g.line()}: the import measured nothing"
                    for g in error_gates(run) if g.measured_nothing]
        if json_out:
            from evalh.core.request.run_request import RunOutcome
            from evalh.jsonio import document_text

            verdict = run_verdict(run)  # the run's own code and reasons, as `evalh run --json` gives them
            out().file.write(document_text(RunOutcome(code=verdict.code, reasons=verdict.reasons,
                                                      run=run, path=path).to_dict()))
            continue
        out().file.write(run.run_id + "\n")
        if not quiet:
            counts = ", ".join(f"{name}: {s.aggregate.passed} passed, {s.aggregate.failed} failed, "
                               f"{s.aggregate.errored} errored of {s.aggregate.n}" for name, s in run.suites.items())
            err().print(f"imported {item.source.name} ({item.format} {item.tool_version or '?'}) as {path} — {counts}",
                        markup=False, highlight=False)
            for note in run.config.get("import", {}).get("notes", []):
                err().print(f"  note: {note}", markup=False, highlight=False)
    if nothing:
        from evalh.console import error_line

        for line in nothing:
            error_line(line)
        raise typer.Exit(code=1)
