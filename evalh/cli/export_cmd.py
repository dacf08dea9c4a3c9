"""`evalh export-requests`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, QuietOpt, RunsDirOpt


@translate_errors
def export_requests(
    run_id: Annotated[str, typer.Argument(metavar="RUN_ID", help="A run id (see `evalh runs`) or a path to a run document.")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="Where to write the requests (JSON); `-` for stdout.", dir_okay=False)],
    rubric: Annotated[Path, typer.Option("--rubric", "-r", metavar="FILE", help="The rubric labellers follow (any text file); ratings bind to its SHA-256.", exists=True, dir_okay=False, readable=True)],
    suite: Annotated[list[str] | None, typer.Option("--suite", "-s", metavar="SUITE", help="Export only this suite (repeatable). Default: every suite.")] = None,
    arm: Annotated[list[str] | None, typer.Option("--arm", metavar="ARM", help="Export only this arm (repeatable). Default: every arm.")] = None,
    sample: Annotated[int | None, typer.Option("--sample", metavar="N", help="Export only N results of each suite and arm, drawn at random (needs --seed) and recorded in the label sidecar: what makes a corrected (PPI) figure valid.", min=1)] = None,
    seed: Annotated[int | None, typer.Option("--seed", metavar="S", help="Seed of the random draw (--sample, --target-width).")] = None,
    target_width: Annotated[float | None, typer.Option("--target-width", metavar="W", help="Draw as many more results as the corrected interval needs to narrow to width W, more from the strata where judge and humans disagree most (needs an earlier --sample with ratings imported, and --seed).", min=0.0)] = None,
    positive: Annotated[str, typer.Option("--positive", metavar="LABEL", help="With --target-width: the label whose rate is corrected.")] = "pass",
    by: Annotated[list[str] | None, typer.Option("--by", metavar="FIELD", help="With --target-width: the case metadata field(s) whose values are the strata (default stratum).")] = None,
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Write blinded labelling requests for a run: what a labeller or a rubric judge should see.

    Each request holds the case's input and the target's output under an opaque request
    id, with a SHA-256 over exactly that content. Expected labels, rationales, scores,
    case ids, metadata and producer details are left out. The mapping back to cases, and a
    record of the export (rubric and manifest digests), go to `<run_id>.labels.json`
    beside the run; the run document is not modified. Re-exporting keeps request ids.

    Labellers return JSON lines of {request_id, request_sha256, rubric_sha256, rater,
    label}; load them with `evalh label import`.

    Examples:

        evalh export-requests RUN_ID --suite panel --rubric docs/rubric.md -o requests.json

        evalh export-requests RUN_ID --rubric rubric.md --sample 100 --seed 7 -o requests.json
    """
    from evalh.atomic import atomic_write_files
    from evalh.cli.project import open_store
    from evalh.console import err, out
    from evalh.jsonio import document_bytes
    from evalh.labels import build_export, labels_bytes, load_labels, save_labels, sidecar_path

    if seed is not None and sample is None and target_width is None:
        from evalh.labels import LabelError

        raise LabelError("--seed is the seed of a random draw: give --sample N (or --target-width W) with it")
    store = open_store(runs_dir, config)
    run_path = store.resolve(run_id)
    run = store.load(run_id)
    side = sidecar_path(run_path, run.run_id)
    labels = load_labels(side, run.run_id)
    only = None
    if sample is not None or target_width is not None:
        from evalh.labels.sample import draw_for_export

        only = draw_for_export(run, labels, store.runs_dir, rubric=rubric, suites=suite, arms=arm, sample=sample,
                               seed=seed, target_width=target_width, positive=positive, by=by or ["stratum"])
    refused: list[str] = []
    document, counts = build_export(
        run, labels, rubric=rubric.read_bytes(), rubric_name=rubric.name, suites=suite, arms=arm, only=only,
        refused=refused
    )
    data = document_bytes(document)
    if str(output) == "-":
        # The registry first: if printing the export fails, its ids are simply reused next time.
        save_labels(side, labels)
        out().file.write(data.decode())
    else:  # both or neither: a folder that cannot take the export leaves the registry as it was
        atomic_write_files([(side, labels_bytes(labels)), (output, data)])
    if quiet:
        return
    from evalh.console import safe_text

    for line in refused:  # a case whose claims quote scrubbed text: that case, not the run
        err().print(safe_text(f"left out {line}"))
    skipped = f"; skipped {counts['skipped_errored']} without an output" if counts["skipped_errored"] else ""
    if counts["refused_scrubbed"]:
        skipped += f"; left out {counts['refused_scrubbed']} whose claims quote scrubbed text"
    where = "stdout" if str(output) == "-" else str(output)
    err().print(safe_text(
        f"wrote {counts['exported']} blinded requests to {where} "
        f"(manifest {document['manifest']['sha256'][:12]}…, rubric {document['rubric']['sha256'][:12]}…){skipped}"
    ))
