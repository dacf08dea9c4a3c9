"""The pull-request comment of `evalh ci comment` (the GitHub Action at the repository
root posts it): its body from a comparison, and one sticky comment kept up to date
through GitHub's REST API.

The body starts with the verdict, then each suite's verdict with its regressed cases
named (at most `MAX_CASES` a suite, the rest counted), the cases a stochastic row would
need to settle (where the comparison says), the baseline's age, a link to the run's
artifacts, and the full markdown comparison folded. Every name from a run is escaped
(`md_escape`): case ids and reasons are untrusted text. A hidden marker line makes the
comment findable: `upsert_comment` edits the comment that carries it, or creates one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from evalh.errors import EvalhError
from evalh.report.render import md_escape

MARKER = "<!-- evalh: pull-request comment (updated in place) -->"
MAX_CASES = 20
MAX_BODY = 60_000
"""GitHub refuses comments over 65 536 characters: the folded comparison is cut before."""


class CommentFailed(EvalhError):
    """The comments API refused or could not be reached (one line, no token in it)."""


def comment_body(comparison: Mapping[str, Any], markdown: str | None = None,
                 artifacts_url: str | None = None) -> str:
    """The comment's markdown. A comment is public: every credential evalh knows of (the job's
    credential-named environment, what the config registered) is scrubbed from what goes
    in, whoever wrote the files."""
    from evalh.redact import scrub_text, scrub_value

    comparison = scrub_value(dict(comparison))
    markdown = scrub_text(markdown) if markdown else markdown
    artifacts_url = scrub_text(artifacts_url) if artifacts_url else artifacts_url
    verdict = str(comparison.get("verdict") or "unknown")
    gate = "FAIL" if comparison.get("fails_gate") else "pass"
    lines = [MARKER, f"## evalh: **{md_escape(verdict.upper())}** (gate: {gate})", ""]
    for reason in comparison.get("gate_reasons") or []:
        lines.append(f"- {md_escape(str(reason))}")
    if comparison.get("gate_reasons"):
        lines.append("")
    for name, suite in (comparison.get("suites") or {}).items():
        if not isinstance(suite, dict):
            continue
        lines.append(f"**{md_escape(str(name))}** ({md_escape(str(suite.get('regime')))}): "
                     f"{md_escape(str(suite.get('verdict')))}")
        cases = (suite.get("cases") or {}).get("regressed") or []
        for case in cases[:MAX_CASES]:
            arm = f" [{md_escape(str(case.get('arm')))}]" if case.get("arm") not in (None, "default") else ""
            lines.append(f"- `{md_escape(str(case.get('case_id')))}`{arm}: {md_escape(str(case.get('base')))} → "
                         f"{md_escape(str(case.get('candidate')))}")
        if len(cases) > MAX_CASES:
            lines.append(f"- and {len(cases) - MAX_CASES} more regressed cases (in the full comparison)")
        for m in suite.get("metrics") or []:
            if isinstance(m, dict) and m.get("cases_needed"):
                lines.append(f"- {md_escape(str(m.get('name')))}: {md_escape(str(m.get('verdict')))}; "
                             f"about {m['cases_needed']} cases would settle a change of "
                             f"{md_escape(str(m.get('cases_needed_for') or 'twice the allowance'))}")
        lines.append("")
    age = comparison.get("baseline_age")
    if isinstance(age, dict):
        when = str(age.get("started_at") or "?")[:10]
        behind = (f"{age['commits_behind']} commits behind {md_escape(str(age.get('against')))}"
                  if age.get("commits_behind") is not None else "commits behind: unknown")
        lines.append(f"Baseline {md_escape(str(age.get('run_id')))} of {md_escape(when)}, {behind}"
                     + (" — **older than " + f"{age.get('max_age_days')} days: set a new one**" if age.get("stale") else ""))
        lines.append("")
    if artifacts_url:
        lines.append(f"[Run documents and JUnit reports]({artifacts_url})")
        lines.append("")
    head = "\n".join(lines)
    if markdown:
        room = MAX_BODY - len(head) - 200
        full = markdown if len(markdown) <= room else markdown[:room] + "\n\n… (cut: the whole comparison is in the job summary)"
        head += f"\n<details><summary>The full comparison</summary>\n\n{full}\n\n</details>\n"
    return head


@dataclass(frozen=True)
class PullRequest:
    api_url: str
    repository: str
    number: int


def pull_request(env: Mapping[str, str] | None = None) -> PullRequest | None:
    """The pull request a GitHub Actions job runs for (None: not a pull-request event)."""
    env = os.environ if env is None else env
    repo = env.get("GITHUB_REPOSITORY")
    if not repo or not env.get("GITHUB_EVENT_NAME", "").startswith("pull_request"):
        return None
    number: Any = None
    event_path = env.get("GITHUB_EVENT_PATH")
    if event_path and Path(event_path).is_file():
        try:
            event = json.loads(Path(event_path).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            event = {}
        number = (event.get("pull_request") or {}).get("number") or event.get("number")
    if number is None:
        ref = env.get("GITHUB_REF", "")  # refs/pull/N/merge
        parts = ref.split("/")
        if len(parts) >= 3 and parts[1] == "pull" and parts[2].isdigit():
            number = int(parts[2])
    if not isinstance(number, int):
        return None
    return PullRequest(env.get("GITHUB_API_URL", "https://api.github.com").rstrip("/"), repo, number)


def upsert_comment(pr: PullRequest, token: str, body: str, *, client: httpx.Client | None = None) -> tuple[str, int]:
    """Edit the comment carrying `MARKER` on `pr`, or create it: ("updated" | "created", id)."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/vnd.github+json",
               "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "evalh"}
    own = client is None
    http = client or httpx.Client(timeout=30.0)
    base = f"{pr.api_url}/repos/{pr.repository}"
    try:
        found: int | None = None
        page = 1
        while found is None:
            resp = http.get(f"{base}/issues/{pr.number}/comments", params={"per_page": 100, "page": page},
                            headers=headers)
            _check(resp, "list the comments")
            items = resp.json()
            found = next((c["id"] for c in items if isinstance(c, dict) and MARKER in str(c.get("body", ""))), None)
            if len(items) < 100:
                break
            page += 1
        if found is not None:
            _check(http.patch(f"{base}/issues/comments/{found}", json={"body": body}, headers=headers), "edit the comment")
            return "updated", found
        resp = http.post(f"{base}/issues/{pr.number}/comments", json={"body": body}, headers=headers)
        _check(resp, "create the comment")
        return "created", int(resp.json()["id"])
    except httpx.HTTPError as exc:
        raise CommentFailed(f"GitHub comments API at {pr.api_url}: {type(exc).__name__}") from None
    finally:
        if own:
            http.close()


def _check(resp: httpx.Response, what: str) -> None:
    if resp.status_code >= 400:
        hint = " (the job's token needs `pull-requests: write`)" if resp.status_code in (401, 403, 404) else ""
        raise CommentFailed(f"could not {what} on the pull request: HTTP {resp.status_code}{hint}")
