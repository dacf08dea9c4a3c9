"""`evalh init`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import JsonOpt, QuietOpt


@translate_errors
def init(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The project root (default: the current directory).", file_okay=False)] = Path("."),
    target: Annotated[str | None, typer.Option("--target", "-t", metavar="MODULE:FUNCTION", help="Point the suite at an existing function instead of writing a stub.")] = None,
    package: Annotated[str | None, typer.Option("--package", "-p", metavar="PACKAGE", help="Write the target stub into this package (default: the project's only package, else evals/).")] = None,
    ci: Annotated[str | None, typer.Option("--ci", metavar="CI", help="Also write a CI workflow: `github` (.github/workflows/evals.yml).")] = None,
    methodology: Annotated[str | None, typer.Option("--methodology", metavar="NAME", help="Turn on a named methodology preset for every suite: `bias-aware` (N >= 5 repeats, suites named, a --label, judge != subject, blind and calibrated judges of distinct models, a named runs_dir; docs/methodology-bias.md).")] = None,
    json_out: JsonOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Start a project: evalh.toml, a small dataset, a target stub, .gitignore entries.

    Writes `evalh.toml` with one deterministic suite `smoke`, its cases in
    `evals/smoke.jsonl`, a target stub `evalh_target.py` in your package (or in `evals/`
    when there is not exactly one; `--target` uses an existing function instead), and adds
    `eval_runs/` and `.evalh/` (the response cache) to `.gitignore`. `--ci github` also
    writes `.github/workflows/evals.yml`. Afterwards `evalh run` works at once, offline.

    Nothing is overwritten: when a file it would write exists, it exits 2 naming it and
    writes nothing (`.gitignore` only gets the lines it lacks). In a project that has an
    `evalh.toml` already, `evalh init --ci github` adds only the workflow.

    The workflow installs evalh the way it is installed here: the wheel's path in the
    project (commit the wheel), the VCS URL it came from, or a version pin.

    Examples:

        evalh init && evalh run

        evalh init --target myapp.answer:answer_question

        evalh init --ci github      # also later, in a project evalh init made

        evalh init --methodology bias-aware     # refuse runs the methodology would not count
    """
    from evalh.console import err, out
    from evalh.scaffold import init_project

    plan = init_project(directory, target=target, package=package, ci=ci, methodology=methodology)
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text({
            "root": str(plan.root), "target": plan.target, "stub": plan.stub,
            "written": plan.written, "gitignore_added": plan.gitignore, "kept": plan.kept,
            "install": plan.install.requirement if plan.install else None,
        }))
        return
    if quiet:
        return
    for rel in plan.written:
        err().print(f"wrote {rel}" + (" (appended " + ", ".join(plan.gitignore) + ")"
                                      if rel == ".gitignore" else ""), markup=False, highlight=False)
    for rel in plan.kept:
        err().print(f"kept {rel} (exists): only the CI files were added", markup=False, highlight=False)
    if plan.install is not None:
        err().print(f"the workflow installs evalh with: pip install {plan.install.requirement}"
                    + (f" ({plan.install.note})" if plan.install.note else ""), markup=False, highlight=False)
    if plan.kept:
        return
    where = "" if directory == Path(".") else f"cd {directory} && "
    step = (f"edit {plan.stub} and evals/smoke.jsonl, then" if plan.stub
            else "put your function's inputs and expected outputs in evals/smoke.jsonl, then")
    command = "evalh run --suite smoke --label first" if methodology else "evalh run"
    err().print(f"next: {where}{command}   ({step} `{command}` again)", markup=False, highlight=False)
