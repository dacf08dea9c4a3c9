"""`evalh ci comment`: the sticky pull-request comment of the GitHub Action."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import JsonOpt

app = typer.Typer(
    name="ci",
    help="What CI does around a comparison: the pull-request comment (the action.yml at evalh's repository root uses it).",
    no_args_is_help=True,
    rich_markup_mode=None,
)


@app.command("comment")
@translate_errors
def comment(
    compare_json: Annotated[Path, typer.Option("--compare-json", metavar="FILE", exists=True, dir_okay=False, help="`evalh compare --format json` output.")],
    markdown: Annotated[Path | None, typer.Option("--markdown", metavar="FILE", exists=True, dir_okay=False, help="`evalh compare --format markdown` output, folded under the summary.")] = None,
    artifacts_url: Annotated[str | None, typer.Option("--artifacts-url", metavar="URL", help="Where the run documents and JUnit reports are (default: this workflow run's page).")] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the comment instead of posting it.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """Create or update one comment on the pull request with the comparison's verdict.

    The comment starts with the verdict and the gate, then each suite's verdict with its
    regressed cases named, the baseline's age, a link to the artifacts, and the whole
    markdown comparison folded. It is found again by a hidden marker and edited in place:
    one comment per pull request, whatever the number of pushes.

    Reads GitHub Actions' environment: GITHUB_TOKEN (needs `pull-requests: write`),
    GITHUB_REPOSITORY, GITHUB_EVENT_NAME and GITHUB_EVENT_PATH (the pull request's
    number), GITHUB_API_URL. Outside a pull request it says so and posts nothing.

    With --json: {posted: created|updated|null, comment_id, pull_request, body}.

    Exit 0 when the comment is posted (or there is no pull request); 2 when the API
    refuses it or the input is bad (one line; the token is never printed).

    Examples:

        evalh ci comment --compare-json reports/compare.json --markdown reports/compare.md

        evalh ci comment --compare-json reports/compare.json --dry-run
    """
    import json

    from evalh.console import err, out
    from evalh.errors import EvalhError
    from evalh.report.pr_comment import comment_body, pull_request, upsert_comment

    try:
        comparison = json.loads(compare_json.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EvalhError(f"{compare_json}: not the JSON of `evalh compare --format json` ({exc})") from None
    if not isinstance(comparison, dict) or "suites" not in comparison:
        raise EvalhError(f"{compare_json}: not the JSON of `evalh compare --format json` (no suites)")
    if artifacts_url is None and os.environ.get("GITHUB_RUN_ID") and os.environ.get("GITHUB_REPOSITORY"):
        server = os.environ.get("GITHUB_SERVER_URL", "https://github.com").rstrip("/")
        artifacts_url = f"{server}/{os.environ['GITHUB_REPOSITORY']}/actions/runs/{os.environ['GITHUB_RUN_ID']}#artifacts"
    from evalh.jsonio import document_text

    try:
        folded = markdown.read_text(encoding="utf-8") if markdown else None
    except (OSError, ValueError) as exc:
        raise EvalhError(f"{markdown}: cannot be read as text ({exc})") from None
    try:
        body = comment_body(comparison, folded, artifacts_url)
    except (AttributeError, TypeError, KeyError, ValueError) as exc:  # `suites` there, the rest not compare's
        raise EvalhError(f"{compare_json}: not the JSON of `evalh compare --format json` "
                         f"({type(exc).__name__}: {exc})") from None
    result: dict[str, object] = {"posted": None, "comment_id": None, "pull_request": None, "body": body}
    pr = None if dry_run else pull_request()
    if dry_run:
        if not json_out:
            out().file.write(body)
    elif pr is None:
        err().print("not a pull request: no comment posted", markup=False, highlight=False)
    else:
        token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
        if not token:
            raise EvalhError("GITHUB_TOKEN is not set: the comment needs the job's token (pull-requests: write)")
        how, comment_id = upsert_comment(pr, token, body)
        result.update(posted=how, comment_id=comment_id, pull_request=f"{pr.repository}#{pr.number}")
        err().print(f"{how} comment {comment_id} on {pr.repository}#{pr.number}", markup=False, highlight=False)
    if json_out:
        out().file.write(document_text(result))
