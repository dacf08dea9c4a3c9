"""`evalh label import` and `evalh label report`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, RunsDirOpt

app = typer.Typer(
    name="label",
    help=(
        "Human labels for a run: import ratings bound to the exported requests, and report "
        "agreement. Start with `evalh export-requests`."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("import")
@translate_errors
def import_(
    files: Annotated[list[Path], typer.Argument(metavar="FILE", help="Ratings files: JSONL (one rating a line) or a JSON array.", exists=True, dir_okay=False, readable=True)],
    run: Annotated[str, typer.Option("--run", help="The run the requests were exported from (id or path).")],
    rubric: Annotated[Path | None, typer.Option("--rubric", help="The current rubric file (default: the rubric of the latest export).", exists=True, dir_okay=False)] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Let a rating replace the same rater's earlier label of a request.")] = False,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
) -> None:
    """Import human ratings into `<run_id>.labels.json` beside the run.

    Each rating names its request_id and carries the request_sha256 and rubric_sha256 it
    was given. A stale rating — its request's input or output changed, or it was made
    under another rubric — or an unknown request, a malformed line or a duplicate rejects
    the whole import with file:line (exit 2); nothing is written. Importing the same file
    twice changes nothing. `"kind": "adjudication"` settles a disputed request; the
    original ratings are kept.

    Examples:

        evalh label import alice.jsonl bob.jsonl --run RUN_ID

        evalh label import fixes.jsonl --run RUN_ID --replace
    """
    from evalh.cli.project import open_store
    from evalh.console import err, safe_text
    from evalh.labels import import_ratings, load_labels, save_labels, sidecar_path
    from evalh.labels.export import sha256_of_bytes

    store = open_store(runs_dir, config)
    run_path = store.resolve(run)
    doc = store.load(run)
    side = sidecar_path(run_path, doc.run_id)
    labels = load_labels(side, doc.run_id)
    digest = sha256_of_bytes(rubric.read_bytes()) if rubric is not None else None
    summaries = [import_ratings(doc, labels, f, rubric=digest, replace=replace) for f in files]
    save_labels(side, labels)  # only after every file validated: all or nothing
    for s in summaries:
        err().print(safe_text(
            f"{s.path}: {s.imported} imported, {s.unchanged} unchanged"
            + (f", {s.replaced} replaced" if s.replaced else "")
        ))
    err().print(safe_text(f"wrote {side}"))


@app.command("report")
@translate_errors
def report(
    run: Annotated[str, typer.Argument(help="A run id (see `evalh runs`) or a path to a run document.")],
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", metavar="SUITE", help="Report only this suite (repeatable). Default: every exported suite.")] = None,
    arm: Annotated[str | None, typer.Option("--arm", help="Report one arm (intervals need one arm).")] = None,
    positive: Annotated[str | None, typer.Option("--positive", help="The label whose rate is reported per stratum (e.g. `defect`, `true`).")] = None,
    random_sample: Annotated[bool, typer.Option("--random-sample", help="Attest the cases are a random held-out sample (needed for intervals).")] = False,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Report human labels: agreement before adjudication, judge–human confusion, strata apart.

    Pairwise raw agreement and Cohen's kappa between raters (a null kappa says why: no
    overlap, or constant labels). For each judge scorer in the run, its verdicts against
    the agreed human labels. Per stratum: counts, labels, and with --positive the share of
    cases with that label, with a Wilson 95 % interval only where its assumptions hold
    (random held-out sample, complete agreed labels, equal attempts, one arm); otherwise
    the interval is null and the reasons are listed. Every report says
    `releaseDecision: not-assessed` and `judgeUse: advisory-only`.

    Examples:

        evalh label report RUN_ID

        evalh label report RUN_ID --suite panel --positive defect --random-sample --json
    """
    from evalh.cli.project import open_store
    from evalh.console import out
    from evalh.labels import label_report, load_labels, sidecar_path
    from evalh.report.terminal.labels import render_label_report

    store = open_store(runs_dir, config)
    run_path = store.resolve(run)
    doc = store.load(run)
    labels = load_labels(sidecar_path(run_path, doc.run_id), doc.run_id)
    result = label_report(doc, labels, suites=suite, arm=arm, positive=positive, random_sample=random_sample)
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text(result))
        return
    render_label_report(result, out())
