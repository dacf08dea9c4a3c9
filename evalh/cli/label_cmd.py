"""`evalh label import`, `evalh label report` and `evalh label serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt, RunsDirOpt

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
    run: Annotated[str, typer.Option("--run", metavar="RUN", help="The run the requests were exported from (id or path).")],
    rubric: Annotated[Path | None, typer.Option("--rubric", metavar="FILE", help="The current rubric file (default: the rubric of the latest export).", exists=True, dir_okay=False)] = None,
    replace: Annotated[bool, typer.Option("--replace", help="Let a rating replace the same rater's earlier rating of an item.")] = False,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Import human ratings into the ratings store beside the runs (`ratings/`).

    Each rating names its request_id and carries the request_sha256 and rubric_sha256 it
    was given. A stale rating — its request's blinded content changed, or it was made
    under another rubric — an incomplete one (a claim, field or dimension of the request
    left out: the missing claim ids are named), an unknown request, a malformed line or a
    duplicate rejects the whole import with file:line (exit 2); nothing is written.
    Importing the same file twice changes nothing. `"kind": "adjudication"` settles
    disputed items; the original ratings are kept. Ratings are bound to content, not to
    the run: they apply to every run whose request is byte-identical.

    Examples:

        evalh label import alice.jsonl bob.jsonl --run RUN_ID

        evalh label import fixes.jsonl --run RUN_ID --replace
    """
    from evalh.cli.project import open_store
    from evalh.console import err, safe_text
    from evalh.labels import import_ratings, load_labels, sidecar_path
    from evalh.labels.export import sha256_of_bytes
    from evalh.labels.store import load_store

    store = open_store(runs_dir, config)
    run_path = store.resolve(run)
    doc = store.load(run)
    labels = load_labels(sidecar_path(run_path, doc.run_id), doc.run_id)
    ratings = load_store(store.runs_dir)
    digest = sha256_of_bytes(rubric.read_bytes()) if rubric is not None else None
    summaries = import_ratings(doc, labels, ratings, list(files), rubric=digest, replace=replace)
    if quiet:
        return
    for s in summaries:
        err().print(safe_text(
            f"{s.path}: {s.ratings} ratings: {s.imported} imported, {s.unchanged} unchanged"
            + (f", {s.replaced} replaced" if s.replaced else "")
        ))
    written = summaries[-1].written if summaries else None
    err().print(safe_text(f"wrote {written}" if written else "nothing new to write"))


@app.command("report")
@translate_errors
def report(
    run: Annotated[str, typer.Argument(metavar="RUN", help="A run id (see `evalh runs`) or a path to a run document.")],
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", metavar="SUITE", help="Report only this suite (repeatable). Default: every exported suite.")] = None,
    arm: Annotated[str | None, typer.Option("--arm", metavar="ARM", help="Report one arm (intervals need one arm).")] = None,
    positive: Annotated[str | None, typer.Option("--positive", metavar="VALUE", help="The value of the request's first field whose work-item rate is reported per stratum (e.g. `defect`).")] = None,
    random_sample: Annotated[bool, typer.Option("--random-sample", help="Attest the cases are a random sample, for cases whose metadata.sampling says nothing (it never overrides a case's own sampling).")] = False,
    by: Annotated[list[str] | None, typer.Option("--by", metavar="FIELD", help="Metadata field(s) to report apart (repeatable: crossed strata, e.g. --by practice --by destination). Default: stratum.")] = None,
    rubric: Annotated[Path | None, typer.Option("--rubric", metavar="FILE", help="Report the ratings of this rubric file (default: the latest export's); with it, a run never exported is reported from the ratings of byte-identical requests.", exists=True, dir_okay=False)] = None,
    target_width: Annotated[float | None, typer.Option("--target-width", metavar="W", help="Say how many more random labels would narrow each corrected interval to width W (labels_needed).", min=0.0)] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Report human labels: agreement before adjudication, judge–human confusion, strata apart.

    Stored ratings are re-verified against the run: ratings of byte-identical requests
    apply (also those made on an earlier run); ratings of changed content are stale —
    counted, never used; ratings under another rubric version are counted apart, never
    pooled. Per rated field: pairwise raw agreement and Cohen's kappa, Fleiss' kappa and
    Krippendorff's alpha (a null figure says why). For each judge scorer, its verdicts
    against the agreed human labels. Per stratum (--by, crossed): counts (withheld, not
    reviewed, failed captures, missing, disputed), selected-claim counts and unresolved
    claim ids, and work-item rates — the rubric's [[rates]] and --positive — with a Wilson
    95 % interval only where every condition holds (held-out split, random sampling,
    exhaustive claim coverage, complete agreed labels, equal attempts, one arm, known
    producer model and prompt digest); otherwise the interval is null with every reason.
    Per suite, arm and judge scorer: the judge's rate of --positive (default `pass`)
    corrected by the human labels (PPI++), with its 95 % interval and the labels gained —
    only where the labels are a random sample drawn by `export-requests --sample`; a
    rejudged run shows the figure under its earlier judge beside it.
    Every report says `releaseDecision: not-assessed` and `judgeUse: advisory-only`.

    Examples:

        evalh label report RUN_ID

        evalh label report RUN_ID --by practice --by destination --json

        evalh label report RUN_ID --suite panel --positive defect --random-sample
    """
    from evalh.cli.project import open_store
    from evalh.console import out
    from evalh.errors import EvalhError
    from evalh.labels import label_report, load_labels, sidecar_path
    from evalh.labels.rubric import parse_rubric
    from evalh.labels.store import load_store
    from evalh.report.terminal.labels import render_label_report

    store = open_store(runs_dir, config)
    run_path = store.resolve(run)
    doc = store.load(run)
    labels = load_labels(sidecar_path(run_path, doc.run_id), doc.run_id)
    ratings = load_store(store.runs_dir)
    scheme = parse_rubric(rubric.read_bytes(), rubric.name) if rubric is not None else None
    samples, before = None, None
    if doc.derived_from is not None and doc.derived_from.how == "rejudge" and not labels.samples:
        try:  # a rejudge keeps the outputs: the draw (and rubric) of the run it came from apply
            before = store.load(doc.derived_from.run_id)
            source = load_labels(sidecar_path(store.resolve(before.run_id), before.run_id), before.run_id)
            samples = source.samples
            if scheme is None and not labels.exports and source.exports:
                from evalh.labels.export import rubric_of

                scheme = rubric_of(source)
        except EvalhError:
            before = None
    result = label_report(doc, labels, ratings, suites=suite, arm=arm, positive=positive,
                          random_sample=random_sample, by=by, scheme=scheme, samples=samples, before=before,
                          target_width=target_width)
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text(result.to_dict()))
        return
    render_label_report(result, out())


@app.command("serve")
@translate_errors
def serve(
    run: Annotated[str, typer.Argument(metavar="RUN", help="A run id (see `evalh runs`) or a path to a run document, exported with `evalh export-requests`.")],
    rater: Annotated[str, typer.Option("--rater", metavar="NAME", help="Your name as a rater: every rating saved on the page carries it.")],
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free port).")] = 4024,
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Loopback address to bind (127.0.0.1, ::1 or localhost); nothing else is accepted.")] = "127.0.0.1",
    rubric: Annotated[Path | None, typer.Option("--rubric", metavar="FILE", help="Rate under this rubric version (default: the latest export's).", exists=True, dir_okay=False)] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
) -> None:
    """Serve a local labelling page for one rater over a run's exported requests.

    The page shows each blinded request (input, output with its claim spans highlighted),
    the rubric, and a question per field, claim field and quality dimension of the
    request's kind, with "cannot tell" where the rubric allows null. Keys: 1–9 choose an
    answer, 0 cannot tell, ↑/↓ move between questions, Enter save and go on, ←/→ previous
    or next request. Progress is shown; a reload resumes at the first request not yet
    rated. Each saved rating is validated like `evalh label import` and written atomically
    to the ratings store. Loopback only, with the dashboard's escaping and CSP; nothing
    hidden (labels, rationales, case names, metadata, other raters) reaches the page.
    Stop it with Ctrl-C.

    Examples:

        evalh label serve RUN_ID --rater alice

        evalh label serve RUN_ID --rater bob --port 0
    """
    from evalh.cli.project import open_store
    from evalh.console import err, safe_text
    from evalh.errors import EvalhError
    from evalh.labels import load_labels, sidecar_path
    from evalh.labels.export import sha256_of_bytes
    from evalh.labels.store import load_store
    from evalh.ui.label_server import LabelSession, make_label_server

    store = open_store(runs_dir, config)
    run_path = store.resolve(run)
    doc = store.load(run)
    labels = load_labels(sidecar_path(run_path, doc.run_id), doc.run_id)
    digest = sha256_of_bytes(rubric.read_bytes()) if rubric is not None else None
    session = LabelSession(doc, labels, load_store(store.runs_dir), rater, rubric=digest)
    try:
        server = make_label_server(session, host, port)
    except OSError as exc:
        raise EvalhError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (pick another with --port)") from None
    bound_host, bound_port = str(server.server_address[0]), server.server_address[1]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    err().print(safe_text(f"evalh labelling page for {rater} on http://{shown}:{bound_port}/ — "
                          f"{len(session.requests)} requests of run {doc.run_id} (Ctrl-C to stop)"))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
