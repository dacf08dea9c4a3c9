"""inspect_ai logs (`.eval`, a zip of JSON entries, and `.json`) as an `ImportedRun`.

Read as JSON, without inspect_ai: the log's `eval` (task, model, dataset, config, git
revision, package versions), `plan` and `samples`. One task is one suite; a sample is a
case (its id, input, target as `expected`, metadata), its epoch an attempt (epoch 1 is
attempt 0). Each scorer of `sample.scores` is a scorer: a value `C`/`I` (inspect's CORRECT
and INCORRECT), a boolean, or `P`/`N` (partial, no answer: not a pass) is a verdict; a
number is a graded score, never read as a verdict. `sample.error` makes the result
`errored`. Tokens are `sample.model_usage` summed over models (or `output.usage`), cost
its `total_cost` where inspect recorded one, latency the model's `output.time` (else the
sample's `total_time`). What has no place in a run document is named in the notes.

`.eval` entries are compressed with zstd by inspect_ai 0.3.1xx and later: reading them
needs the `zstandard` package (`pip install 'evalh[inspect]'`).
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any

import orjson

from evalh.importers.base import (
    ForeignFileError,
    ImportedRun,
    ImportedSuite,
    ScorerKind,
    as_dict,
    count,
    graded_score,
    load_json,
    number,
    safe_name,
    verdict_score,
)
from evalh.models import CaseResult, ErrorInfo, GitInfo, Score

_ZSTD = 93
_VERDICTS = {"C": True, "I": False, "P": False, "N": False}
"""inspect_ai's CORRECT, INCORRECT, PARTIAL and NOANSWER: only C passes."""
_VERDICT_VALUES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""As inspect_ai's `value_to_float` reads them."""


def _entry(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> Any:
    if info.compress_type != _ZSTD:
        return orjson.loads(zf.read(info))
    try:
        import zstandard
    except ImportError:
        raise ForeignFileError(f"{path}: its entries are zstd-compressed; reading them needs the "
                               "zstandard package (pip install 'evalh[inspect]')") from None
    with open(path, "rb") as fh:  # the entry's raw bytes: after its local header
        fh.seek(info.header_offset)
        header = fh.read(30)
        name_len, extra_len = struct.unpack("<HH", header[26:30])
        fh.seek(info.header_offset + 30 + name_len + extra_len)
        raw = fh.read(info.compress_size)
    data = zstandard.ZstdDecompressor().stream_reader(raw).read()
    return orjson.loads(data)


def _read_eval_zip(path: Path) -> dict[str, Any]:
    """A `.eval` log as the `.json` form: the header with its samples."""
    try:
        with zipfile.ZipFile(path) as zf:
            infos = {i.filename: i for i in zf.infolist()}
            if "header.json" in infos:
                log = _entry(path, zf, infos["header.json"])
            elif "_journal/start.json" in infos:  # a log whose run did not finish
                log = _entry(path, zf, infos["_journal/start.json"])
                log.setdefault("status", "started")
            else:
                raise ForeignFileError(f"{path}: a zip without header.json: not an inspect_ai .eval log")
            log["samples"] = [_entry(path, zf, i) for name, i in infos.items()
                              if name.startswith("samples/") and name.endswith(".json")]
    except (zipfile.BadZipFile, orjson.JSONDecodeError, OSError) as exc:
        raise ForeignFileError(f"{path}: not a readable .eval log ({exc})") from None
    if not isinstance(log, dict):
        raise ForeignFileError(f"{path}: header.json is not an object")
    return log


def _text(value: Any) -> str | None:
    """A message's or a completion's text (content parts joined)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [str(p["text"]) for p in value if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def _score(name: str, raw: dict[str, Any], run: ImportedRun, kinds: dict[str, ScorerKind]) -> Score:
    value = raw.get("value")
    rationale = raw.get("explanation") if isinstance(raw.get("explanation"), str) else None
    details: dict[str, Any] = {}
    if raw.get("answer") is not None:
        details["answer"] = raw["answer"]
    if raw.get("metadata"):
        details["metadata"] = raw["metadata"]
    if isinstance(value, str) and value in _VERDICTS:
        kinds.setdefault(name, "pass_fail")
        if value in ("P", "N"):
            details["inspect_value"] = value
        return verdict_score(name, _VERDICTS[value], _VERDICT_VALUES[value], rationale, details)
    if isinstance(value, bool):
        kinds.setdefault(name, "pass_fail")
        return verdict_score(name, value, None, rationale, details)
    n = number(value)
    if n is not None:
        kinds.setdefault(name, "graded")
        if not 0.0 <= n <= 1.0:
            run.note(f"scorer {name}: values outside 0-1 are kept in the score's details, not as its value")
        return graded_score(name, n, rationale, details)
    kinds.setdefault(name, "graded")
    run.note(f"scorer {name}: a value that is neither a verdict (C/I/P/N, true/false) nor a number "
             "(a list or dict of values) is kept in the score's details, not scored")
    return Score(scorer=name, value=None, passed=None, abstained=True, rationale=rationale,
                 details={**details, "raw_value": value})


def _usage(sample: dict[str, Any]) -> tuple[int | None, int | None, float | None]:
    usage = sample.get("model_usage")
    rows = [u for u in usage.values() if isinstance(u, dict)] if isinstance(usage, dict) and usage else []
    if not rows:
        out_usage = (sample.get("output") or {}).get("usage")
        rows = [out_usage] if isinstance(out_usage, dict) else []
    if not rows:
        return None, None, None
    tin = [count(u.get("input_tokens")) for u in rows]
    tout = [count(u.get("output_tokens")) for u in rows]
    costs = [number(u.get("total_cost")) for u in rows]
    return (sum(t for t in tin if t is not None) if any(t is not None for t in tin) else None,
            sum(t for t in tout if t is not None) if any(t is not None for t in tout) else None,
            sum(c for c in costs if c is not None) if costs and all(c is not None for c in costs) else None)


def _result(sample: dict[str, Any], run: ImportedRun, kinds: dict[str, ScorerKind], path: Path) -> CaseResult:
    sid = sample.get("id")
    if sid is None or isinstance(sid, bool) or not isinstance(sid, str | int):
        raise ForeignFileError(f"{path}: a sample without an id (string or integer)")
    epoch = sample.get("epoch", 1)
    if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 1:
        raise ForeignFileError(f"{path}: sample {sid!r}: epoch {epoch!r} is not a positive integer")
    output = as_dict(sample.get("output"))
    completion = output.get("completion")
    if not isinstance(completion, str):  # the first choice's message, content parts joined
        choices = output.get("choices")
        first = as_dict(choices[0]) if isinstance(choices, list) and choices else {}
        completion = _text(as_dict(first.get("message")).get("content"))
    tokens_in, tokens_out, cost = _usage(sample)
    seconds = number(output.get("time"))
    if seconds is None:
        seconds = number(sample.get("total_time"))
    metadata = as_dict(sample.get("metadata"))
    error = sample.get("error")
    err = None
    if isinstance(error, dict) and error:
        message = str(error.get("message") or "error")
        kind = message.split("(", 1)[0] if "(" in message and message.split("(", 1)[0].isidentifier() else "Error"
        err = ErrorInfo(type=kind, message=message[:2000])
    scores = [] if err else [_score(str(n), s, run, kinds) for n, s in (sample.get("scores") or {}).items()
                             if isinstance(s, dict)]
    if err is None and not scores:
        run.note("samples without scores are kept, failed (an unscored result is never a pass)")
    if sample.get("limit"):
        run.note("a sample's limit (tokens, messages, time) is not mapped: its result is kept as scored")
    return CaseResult(
        case_id=str(sid), arm="default", attempt=epoch - 1, status="errored" if err else "failed",
        input=sample.get("input"), expected=sample.get("target"), metadata=dict(metadata),
        output=completion if err is None else None, error=err, scores=scores,
        latency_ms=round(seconds * 1000, 3) if seconds is not None else None,
        tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=cost,
        started_at=sample.get("started_at") if isinstance(sample.get("started_at"), str) else None,
    )


def read_inspect_log(path: Path, doc: Any = None) -> ImportedRun:
    """`path` (`doc`: its JSON when parsed already)."""
    log = _read_eval_zip(path) if path.suffix == ".eval" else (doc if doc is not None else load_json(path))
    if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
        raise ForeignFileError(f"{path}: no `eval` header: not an inspect_ai log")
    ev: dict[str, Any] = log["eval"]
    version = (ev.get("packages") or {}).get("inspect_ai")
    stats = log.get("stats")
    started = [v for v in ((stats.get("started_at") if isinstance(stats, dict) else None), ev.get("created"))
               if isinstance(v, str) and v]
    run = ImportedRun(source=path, format="inspect_ai", tool_version=version if isinstance(version, str) else None,
                      suites={}, started_at=started[0] if started else None)
    status = log.get("status")
    if status != "success":
        run.note(f"the inspect_ai run's status is {status!r}: only the samples it logged are imported")
    if log.get("samples") is None or (not log["samples"] and (ev.get("dataset") or {}).get("samples")):
        raise ForeignFileError(f"{path}: the log holds no samples (written with --no-log-samples?): nothing to import")
    revision = ev.get("revision")
    if isinstance(revision, dict) and revision.get("type") == "git" and revision.get("commit"):
        run.git = GitInfo(sha=str(revision["commit"]), dirty=revision.get("dirty") if isinstance(revision.get("dirty"), bool) else None)
    order = [s["name"] for s in ev.get("scorers") or []  # the order the task named them
             if isinstance(s, dict) and isinstance(s.get("name"), str)]
    kinds: dict[str, ScorerKind] = {}  # what each scorer's values say it is
    samples = [s for s in log["samples"] if isinstance(s, dict)]
    results = [_result(s, run, kinds, path) for s in samples]
    ids = as_dict(ev.get("dataset")).get("sample_ids")
    rank = {str(i): n for n, i in enumerate(ids)} if isinstance(ids, list) else {}
    results.sort(key=lambda r: (rank.get(r.case_id, len(rank)), r.case_id, r.attempt))  # the dataset's order
    scorers = {n: kinds[n] for n in dict.fromkeys([*order, *kinds]) if n in kinds}
    if any(len(s.get("messages") or []) > 2 or s.get("events") for s in samples):
        run.note("the samples' message histories and event transcripts are not imported: the output is "
                 "the final completion")
    if any(s.get("store") for s in samples):
        run.note("the samples' store (state a solver kept) is not imported")
    task = safe_name(str(ev.get("task") or "task"), "task")
    model = ev.get("model")
    target = {"kind": "inspect_ai", "model": model if isinstance(model, str) else None}
    generate = ev.get("model_generate_config") or (log.get("plan") or {}).get("config")
    if generate:
        target["generate_config"] = generate
    if ev.get("model_args"):
        target["model_args"] = ev["model_args"]
    config = {k: ev[k] for k in ("task", "task_version", "task_args", "task_file", "config", "dataset", "solver",
                                 "scorers", "model_roles", "tags", "metadata") if ev.get(k) not in (None, {}, [])}
    plan = log.get("plan")
    if isinstance(plan, dict) and plan.get("steps"):
        config["plan"] = plan["steps"]
    run.label = f"inspect_ai {task} ({model})" if model else f"inspect_ai {task}"
    dataset = ev.get("dataset") or {}
    run.suites[task] = ImportedSuite(
        name=task, results=results, target=target, config=config, scorers=scorers,
        dataset=str(dataset.get("location") or dataset.get("name") or task),
    )
    if (log.get("results") or {}).get("scores"):
        run.note("inspect_ai's metrics (accuracy, stderr, ...) are not imported: evalh computes its own from the scores")
    return run
