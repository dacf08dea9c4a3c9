"""`evalh compare` reads two documents' facts a line at a time (`compare_load`), into
compact columns (`compare_facts`): its verdict must be the one `compare_runs` gives on the
same runs loaded whole, whatever the runs hold."""

from __future__ import annotations

import json
import math
import random
from array import array
from pathlib import Path
from typing import Any

import pytest
from compare_factory import ENV

from evalh.core.compare.decide import compare_runs
from evalh.core.compare.load import load_compared
from evalh.errors import RunDocumentError
from evalh.models import CaseResult, DatasetInfo, Run, Score, SuiteResult
from evalh.store import RunStore

STATUSES = ["passed", "passed", "passed", "failed", "errored", "judge_error", "skipped"]


def _result(rng: random.Random, cid: str, arm: str, attempt: int, shift: float,
            judges: tuple[str | None, ...] = (None, "m1", "m2")) -> CaseResult:
    status = rng.choice(STATUSES)
    if status == "passed" and rng.random() < shift:
        status = "failed"
    answered = status in ("passed", "failed")
    graded = rng.random() < 0.5
    score: float | None = None
    if answered:
        score = rng.random() if graded else (1.0 if status == "passed" else 0.0)
        if rng.random() < 0.03:
            score = math.nan  # a scorer's NaN: no figure
    scores = [
        Score(scorer="exact", value=score, passed=status == "passed"),
        Score(scorer="judge", value=rng.choice([None, rng.random()]), judge_model=rng.choice(judges)),
    ]
    return CaseResult(
        case_id=cid, case_digest=("d-" + cid) if rng.random() < 0.97 else ("x-" + cid),
        arm=arm, attempt=attempt, status=status, score=score, scores=scores,  # type: ignore[arg-type]
        metadata={"group": f"g{rng.randrange(6)}"} if rng.random() < 0.8 else {},
        latency_ms=rng.choice([None, rng.uniform(1, 900), 0.0]),
        cost_usd=rng.choice([None, rng.uniform(0, 0.01)]),
        cached=rng.random() < 0.1, input={"q": cid}, output={"a": rng.random()},
    )


def _run(run_id: str, seed: int, *, regime: str, arms: list[str], repeats: int, shift: float,
         status: str = "complete", cluster: str | None = "group",
         judges: tuple[str | None, ...] = (None, "m1", "m2"), aligned: bool = False) -> Run:
    """`aligned`: every case in both runs, in dataset order (results of one case together)."""
    rng = random.Random(seed)
    cases = []
    for i in range(60):
        if rng.random() < 0.05 and not aligned:
            continue  # a case only the other run has
        for arm in arms:
            for attempt in range(repeats):
                cases.append(_result(rng, f"c{i:03d}", arm, attempt, shift, judges))
    if not aligned:
        rng.shuffle(cases)
    snapshot = {"suites": {"s": {"regime": regime, "cluster": cluster, "gate_scores": ["judge"]},
                           "t": {"regime": "deterministic"}}}
    suites = {
        "s": SuiteResult(regime=regime, dataset=DatasetInfo(path="d.jsonl", sha256="ds", cases=60),  # type: ignore[arg-type]
                         cases=cases),
        "t": SuiteResult(dataset=DatasetInfo(path="t.jsonl", sha256="dt", cases=3),
                         cases=[_result(rng, f"t{i}", "default", 0, shift) for i in range(3)]),
    }
    if seed % 3 == 0:
        suites["only_" + run_id[-1]] = SuiteResult(
            dataset=DatasetInfo(path="o.jsonl", sha256="do", cases=1),
            cases=[_result(rng, "o1", "default", 0, 0.0)])
    return Run(run_id=run_id, status=status, started_at="2026-01-01T00:00:00Z",  # type: ignore[arg-type]
               environment=ENV, config=snapshot, suites=suites)


CASES = [
    dict(regime="stochastic", arms=["default"], repeats=1),
    dict(regime="stochastic", arms=["default"], repeats=3),
    dict(regime="stochastic", arms=["a", "b"], repeats=2),
    dict(regime="stochastic", arms=["default"], repeats=2, cluster=None),
    dict(regime="deterministic", arms=["default"], repeats=1),
    dict(regime="deterministic", arms=["a", "b"], repeats=3),
    dict(regime="stochastic", arms=["default"], repeats=1, changed=dict(repeats=2, judges=("m3",))),
    dict(regime="deterministic", arms=["default"], repeats=1, aligned=True),
    dict(regime="deterministic", arms=["a", "b"], repeats=2, aligned=True),
    dict(regime="stochastic", arms=["default"], repeats=1, aligned=True),
]


@pytest.mark.parametrize("kind", range(len(CASES)))
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_streamed_facts_give_the_verdict_of_the_whole_runs(tmp_path: Path, kind: int, seed: int) -> None:
    store = RunStore(tmp_path)
    spec: dict[str, Any] = dict(CASES[kind])
    changed = spec.pop("changed", {})  # what the candidate ran differently
    base = _run("20260101T000000000Z-00000a", seed, shift=0.0, **spec)
    cand = _run("20260101T000001000Z-00000b", seed + 100, shift=0.3,
                status="partial" if seed == 3 else "complete", **{**spec, **changed})
    store.write(base)
    store.write(cand)
    whole = compare_runs(store.load(base.run_id), store.load(cand.run_id))
    loaded = load_compared(store, base.run_id, cand.run_id)
    assert all(not s.cases for s in loaded.base.suites.values())  # headers only
    streamed = loaded.compare()
    assert streamed.to_dict() == whole.to_dict()
    assert whole.to_dict()["suites"]["s"]["metrics"]  # the comparison compared something
    if changed:  # what the results show of how the suite ran is a difference of configuration
        keys = {(d.suite, d.key.split("[")[0]) for d in streamed.config_differences}
        assert {("s", "repeats"), ("s", "judge_models")} <= keys
    for name, s in whole.suites.items():
        assert list(streamed.suites[name].compared_cases()) == list(s.compared_cases())


def _damage(path: Path, line: int, edit: Any) -> None:
    lines = path.read_bytes().split(b"\n")
    body = lines[line]
    comma = body.endswith(b",")
    obj = json.loads(body[:-1] if comma else body)
    edit(obj)
    lines[line] = json.dumps(obj, separators=(",", ":")).encode() + (b"," if comma else b"")
    path.write_bytes(b"\n".join(lines))


def test_a_result_line_of_another_shape_is_read_as_the_model_reads_it(tmp_path: Path) -> None:
    store = RunStore(tmp_path)
    spec: dict[str, Any] = CASES[0]
    base = _run("20260101T000000000Z-00000a", 5, shift=0.0, **spec)
    cand = _run("20260101T000001000Z-00000b", 6, shift=0.2, **spec)
    for run in (base, cand):
        store.write(run)

    def coerced(obj: dict[str, Any]) -> None:  # pydantic's lax mode takes these
        obj["score"] = str(obj["score"]) if obj["score"] is not None else "0.5"
        obj["latency_ms"] = "12"
        obj["cached"] = 0

    _damage(store.path_for(cand.run_id), 4, coerced)
    whole = compare_runs(store.load(base.run_id), store.load(cand.run_id))
    assert load_compared(store, base.run_id, cand.run_id).compare().to_dict() == whole.to_dict()


@pytest.mark.parametrize(("edit", "field"), [
    (lambda o: o.update(status="passd"), "status"),
    (lambda o: o.update(case_id=None), "case_id"),
    (lambda o: o.update(score="high"), "score"),
    (lambda o: o["scores"][0].update(value=[1]), "scores.0.value"),
])
def test_a_damaged_result_is_refused_naming_its_field(tmp_path: Path, edit: Any, field: str) -> None:
    store = RunStore(tmp_path)
    spec: dict[str, Any] = CASES[0]
    base = _run("20260101T000000000Z-00000a", 7, shift=0.0, **spec)
    store.write(base)
    path = store.path_for(base.run_id)
    _damage(path, 5, edit)  # the fourth result of suite s (lines: header, suites, opener, ...)
    with pytest.raises(RunDocumentError) as exc:
        load_compared(store, base.run_id, base.run_id)
    assert str(exc.value).startswith(f"{path}: invalid run document at suites.s.cases.2.{field}:")


# --------------------------------------------------------------------------- the chunked reader


def _reference_lines(fh: Any, head: dict[str, Any], shown: str) -> Any:
    """The layout checked one line at a time, as `iter_case_lines` did before it read
    chunks: the reference the chunked reader must agree with, result for result and error
    for error."""
    from evalh.document import HEADS, _check_opener

    names = list(head[HEADS])
    pos, number = fh.tell(), 1

    def line() -> bytes:
        nonlocal pos, number
        data = fh.readline()
        number += 1
        pos += len(data)
        return data

    def bad(what: str) -> RunDocumentError:
        return RunDocumentError(f"{shown}:{number}: not valid JSON in the run document's layout: expected {what}")

    if line() != b'"suites":{\n':
        raise bad('"suites":{')
    for k, name in enumerate(names):
        opener = line()
        key = json.dumps(name).encode() + b":"
        if not (opener.startswith(key + b"{") and opener.endswith(b'"cases":[\n')):
            raise bad(f"the start of suite {name!r}")
        tail = b',"cases":[\n'
        _check_opener(opener[len(key):-len(tail)] + b"}" if opener.endswith(tail) else b"{}",
                      head[HEADS][name], name, f"{shown}:{number}")
        n, more = 0, True
        while True:
            at = pos
            data = line()
            if data.startswith(b"{") and more:
                more = data.endswith(b",\n")
                n += 1
                yield name, at, data[:-2] if more else data[:-1] if data.endswith(b"\n") else data
                continue
            if data == (b"]},\n" if k < len(names) - 1 else b"]}\n") and (not more or n == 0):
                break
            raise bad(f"a result of suite {name!r} or its end")
        expected = head[HEADS][name].get("results")
        if isinstance(expected, int) and expected != n:
            raise RunDocumentError(f"{shown}:{number}: suite {name!r} holds {n} results, its header says {expected}")
    if line() != b"}}\n":
        raise bad("the end of the document")
    while rest := fh.read(1 << 16):
        if rest.strip():
            raise bad("nothing after the end of the document")


def _outcome(read: Any, path: Path) -> tuple[list[Any], str | None]:
    from evalh.document import read_head

    got: list[Any] = []
    with path.open("rb") as fh:
        head = read_head(fh)
        assert head is not None
        try:
            for item in read(fh, head, "doc"):
                got.append(item)
        except RunDocumentError as exc:
            return got, str(exc)
    return got, None


EDITS = {
    "none": lambda ls, r: None,
    "a comma dropped mid-suite": lambda ls, r: ls.__setitem__(r[3], ls[r[3]][:-1]),
    "two results on a line": lambda ls, r: ls.__setitem__(r[2], ls[r[2]] + ls[r[3]]),
    "a blank line": lambda ls, r: ls.insert(r[5], b""),
    "a result cut short": lambda ls, r: ls.__setitem__(r[4], ls[r[4]][:40]),
    "the last comma added": lambda ls, r: ls.__setitem__(r[-1], ls[r[-1]] + b","),
    "the end of a suite dropped": lambda ls, r: ls.__delitem__(r[-1] + 1),
    "bytes after the end": lambda ls, r: ls.append(b"  x"),
    "the final newline dropped": lambda ls, r: ls.pop(),
    "the results end the file": lambda ls, r: ls.__delitem__(slice(r[-1] + 1, None)),
}


@pytest.mark.parametrize("size", [64, 700, 1 << 20])
@pytest.mark.parametrize("edit", list(EDITS))
def test_the_chunked_reader_agrees_with_the_line_by_line_layout_check(tmp_path: Path, edit: str, size: int) -> None:
    from functools import partial

    from evalh.document import iter_case_chunks, iter_case_lines

    store = RunStore(tmp_path)
    store.write(_run("20260101T000000000Z-00000a", 3, regime="stochastic", arms=["default"], repeats=1, shift=0.1))
    path = store.path_for("20260101T000000000Z-00000a")
    lines = path.read_bytes().split(b"\n")
    results = [i for i, x in enumerate(lines) if x.startswith(b'{"case_id":"c')]
    EDITS[edit](lines, results)
    path.write_bytes(b"\n".join(lines))
    expected = _outcome(_reference_lines, path)
    assert (expected[1] is None) == (edit in ("none", "two results on a line"))  # lines, not JSON
    chunked = partial(iter_case_chunks, size=size)

    def flat(fh: Any, head: dict[str, Any], shown: str) -> Any:  # the chunks' lines, one by one
        for name, at, view, count in chunked(fh, head, shown):
            block = bytes(view)
            for line in block.split(b"\n")[:count] if block.endswith(b"\n") else [block]:
                yield name, at, line[:-1] if line.endswith(b",") else line
                at += len(line) + 1

    assert _outcome(flat, path) == expected
    assert _outcome(iter_case_lines, path) == expected


def test_a_line_holding_two_results_is_refused_as_every_reader_refuses_it(tmp_path: Path) -> None:
    """Joined into one array, two results on one line would parse: the facts reader must
    still count results by lines, as the header and every other reader do."""
    from evalh.core.compare.facts_read import read_facts

    store = RunStore(tmp_path)
    store.write(_run("20260101T000000000Z-00000a", 3, regime="stochastic", arms=["default"], repeats=1, shift=0.1))
    path = store.path_for("20260101T000000000Z-00000a")
    lines = path.read_bytes().split(b"\n")
    results = [i for i, x in enumerate(lines) if x.startswith(b'{"case_id":"c')]
    lines[results[2]] += lines[results[3]]
    path.write_bytes(b"\n".join(lines))
    for read in (lambda: store.load("20260101T000000000Z-00000a"), lambda: read_facts(path, "doc", {})):
        with pytest.raises(RunDocumentError, match="not valid JSON"):
            read()


def _stored_pair(tmp_path: Path, kind: int, seed: int) -> tuple[RunStore, Run, Run]:
    """A base and a worse candidate of `CASES[kind]`, written to a store in `tmp_path`."""
    store = RunStore(tmp_path)
    spec: dict[str, Any] = dict(CASES[kind])
    spec.pop("changed", None)
    base = _run("20260101T000000000Z-00000a", seed, shift=0.0, **spec)
    cand = _run("20260101T000001000Z-00000b", seed + 100, shift=0.3, **spec)
    for run in (base, cand):
        store.write(run)
    return store, base, cand


def test_facts_read_in_a_worker_process_come_back_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Large documents are read side by side, the base in a forked worker: its facts,
    pickled back, must compare as the ones read here."""
    import pickle

    from evalh.core.compare import load as compare_load
    from evalh.core.compare.facts_read import read_facts

    store, base, cand = _stored_pair(tmp_path, 2, 4)
    path = store.path_for(base.run_id)
    here = read_facts(path, "doc", {"s": ("group", frozenset({"judge"}))})
    assert here is not None
    back = pickle.loads(pickle.dumps(here))
    for name, facts in here.items():
        other = back[name]
        assert other.rows == facts.rows and other.case_ids == facts.case_ids
        for row in range(len(facts)):
            assert (other.outcome(row), other.score(row), other.latencies.values(row), other.cluster_of(row),
                    other.scorer_mean("judge", row)) == (
                facts.outcome(row), facts.score(row), facts.latencies.values(row), facts.cluster_of(row),
                facts.scorer_mean("judge", row))
    monkeypatch.setattr(compare_load, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(compare_load, "_second_core", lambda: True)
    forked = compare_load.load_compared(store, base.run_id, cand.run_id, parallel=True).compare()
    assert forked.to_dict() == compare_runs(store.load(base.run_id), store.load(cand.run_id)).to_dict()


_PARENT = 0
"""The test's own process: `_dies_in_a_worker` kills any other."""


def _dies_in_a_worker(*args: Any, **kw: Any) -> Any:
    import os
    import signal

    from evalh.core.compare.facts_read import read_facts

    if os.getpid() != _PARENT:
        os.kill(os.getpid(), signal.SIGKILL)
    return read_facts(*args, **kw)


def test_a_worker_that_dies_leaves_the_base_read_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker killed (out of memory, a signal): the comparison still comes, the base
    read in this process, not a BrokenProcessPool traceback."""
    import os
    import sys

    from evalh.core.compare import load as compare_load

    store, base, cand = _stored_pair(tmp_path, 0, 8)
    monkeypatch.setattr(compare_load, "read_facts", _dies_in_a_worker)
    monkeypatch.setattr(sys.modules[__name__], "_PARENT", os.getpid())
    monkeypatch.setattr(compare_load, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(compare_load, "_second_core", lambda: True)
    got = compare_load.load_compared(store, base.run_id, cand.run_id, parallel=True).compare()
    assert got.to_dict() == compare_runs(store.load(base.run_id), store.load(cand.run_id)).to_dict()


def _columns(facts: Any) -> dict[str, Any]:
    """Everything a `SuiteFacts` holds, cut to its rows (the columns have room past them)."""
    n = len(facts)

    def values(v: Any) -> list[list[float]]:
        return [v.values(row) for row in range(n)]

    return {
        "rows": facts.rows, "case_ids": facts.case_ids, "arm_names": facts.arm_names,
        "arm_of": facts.arm_of[:n].tolist(), "digest": facts.digest[:n].tolist(),
        "cluster": [facts.cluster_of(row) for row in range(n)],
        "counts": [c[:n].tolist() for c in facts.counts], "graded": bytes(facts.graded[:n]),
        "scores": values(facts.scores), "latencies": values(facts.latencies), "costs": values(facts.costs),
        "first": [(v.n[:n].tolist(), v.first[:n].tolist()) for v in (facts.scores, facts.latencies, facts.costs)],
        "scorer_values": {name: values(v) for name, v in facts.scorer_values.items()},
        "results": facts.results, "status_counts": facts.status_counts, "max_attempt": facts.max_attempt,
        "judge_models": facts.judge_models, "outcomes": facts.outcomes(),
    }


@pytest.mark.parametrize("chunk", [1, 2000, 1 << 20])
@pytest.mark.parametrize("kind", range(len(CASES)))
def test_the_facts_of_a_documents_lines_are_those_of_its_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: int, chunk: int
) -> None:
    """A chunk of lines goes into the columns a field at a time (`SuiteFacts.add_lines`), a
    result model a line at a time (`extend`): column for column the same facts, whether a
    chunk holds one line, a few (a case's attempts and arms split between two chunks) or
    the whole suite."""
    from evalh.core.compare import facts_read as compare_facts
    from evalh.core.compare.decide import suite_options
    from evalh.core.compare.facts import suite_facts
    from evalh.document import read_head

    monkeypatch.setattr(compare_facts, "CHUNK_BYTES", chunk)
    store = RunStore(tmp_path)
    spec: dict[str, Any] = dict(CASES[kind])
    spec.pop("changed", None)
    run = _run("20260101T000000000Z-00000a", kind, shift=0.2, **spec)
    for i, r in enumerate(run.suites["s"].cases):
        if r.status not in ("passed", "failed") and i % 2:
            r.score = 0.5  # no figure of the product: an errored or skipped result's score is not one
        if i % 7 == 3:  # a cluster field that is not a string: its str is the cluster
            r.metadata = {"group": [i % 2]} if i % 3 else {"group": i % 4}
    store.write(run)
    loaded = store.load(run.run_id)
    options = suite_options(loaded, loaded)
    path = store.path_for(run.run_id)
    read = compare_facts.read_facts(path, "doc", options)
    assert read is not None
    for name, s in loaded.suites.items():
        assert _columns(read[name]) == _columns(suite_facts(s.cases, options[name]))
    assert read["s"].results == len(loaded.suites["s"].cases) >= 50  # every result
    # Both ways of finding a line's row: by the line before it (a case's lines together, as
    # evalh writes them) and by the case-id lookup (read again when they are apart).
    together = spec.get("aligned", False) or spec["repeats"] == 1 and spec["arms"] == ["default"]
    with path.open("rb") as fh:
        head = read_head(fh)
        try:  # apart within a chunk: refused at once; else found apart once read
            runs = compare_facts._facts_from(fh, head, "doc", options, lookup=False)
            folded = runs["s"].folded()
        except compare_facts.LinesApart:
            folded = False
    assert folded == together
    if together:
        assert _columns(runs["s"]) == _columns(read["s"])
    with path.open("rb") as fh:
        head = read_head(fh)
        assert _columns(compare_facts._facts_from(fh, head, "doc", options, lookup=True)["s"]) == _columns(read["s"])


@pytest.mark.parametrize("chunk", [1, 2000, 1 << 20])
def test_a_line_read_alone_amid_chunks_gives_the_same_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """A line of another shape is read alone (`add_line`, through the lookup), its chunk's
    other lines with it: the facts are those of the models all the same."""
    from evalh.core.compare import facts_read as compare_facts
    from evalh.core.compare.decide import suite_options
    from evalh.core.compare.facts import suite_facts

    monkeypatch.setattr(compare_facts, "CHUNK_BYTES", chunk)
    store = RunStore(tmp_path)
    run = _run("20260101T000000000Z-00000a", 4, regime="deterministic", arms=["a", "b"], repeats=2,
               shift=0.2, aligned=True)
    store.write(run)
    path = store.path_for(run.run_id)
    for line in (9, 40, 100):
        _damage(path, line, lambda o: o.update(latency_ms=str(o["latency_ms"] or 3)))  # lax: "3" is 3.0
    loaded = store.load(run.run_id)
    options = suite_options(loaded, loaded)
    read = compare_facts.read_facts(path, "doc", options)
    assert read is not None
    for name, s in loaded.suites.items():
        assert _columns(read[name]) == _columns(suite_facts(s.cases, options[name]))


@pytest.mark.parametrize("kind", range(len(CASES)))
def test_facts_handed_back_as_bytes_are_the_facts_read(tmp_path: Path, kind: int) -> None:
    """A worker hands its facts back as one buffer (`SuiteFacts.pack`, what pickling one
    sends): unpacked, every column is the one read, the rows' lookup included (rebuilt
    when asked for), whatever arms, attempts and order the runs hold."""
    import pickle

    from evalh.core.compare.decide import suite_options
    from evalh.core.compare.facts import SuiteFacts
    from evalh.core.compare.facts_read import read_facts

    store, base, cand = _stored_pair(tmp_path, kind, 11)
    options = suite_options(store.load(base.run_id), store.load(cand.run_id))
    read = read_facts(store.path_for(base.run_id), "doc", options)
    assert read is not None
    for facts in read.values():
        packed = facts.pack()
        assert isinstance(packed, bytes)
        back = SuiteFacts.unpack(packed)
        assert back._rows is None  # not sent: built when first asked for
        assert _columns(back) == _columns(facts)
        assert _columns(pickle.loads(pickle.dumps(facts))) == _columns(facts)
    assert any(len(v) > 1 for f in read.values() for v in f.scores.more.values()) == (CASES[kind].get("repeats", 1) > 1)


def test_facts_of_ids_holding_a_nul_and_of_no_row_come_back_the_same() -> None:
    from compare_factory import result

    from evalh.core.compare.facts import SuiteFacts, suite_facts

    for facts in (suite_facts([result("a\0b", "passed"), result("c", "failed", score=0.5)]),
                  suite_facts([]), SuiteFacts(("group", frozenset({"judge"})))):
        assert _columns(SuiteFacts.unpack(facts.pack())) == _columns(facts)


def test_a_row_of_256_attempts_has_its_outcome() -> None:
    """`outcomes` reads each byte of a row's counts (256 attempts: a low byte of 0)."""
    from compare_factory import result

    from evalh.core.compare.columns import row_range
    from evalh.core.compare.facts import FAILED, PASSED, suite_facts

    facts = suite_facts([result("a", "failed", attempt=k) for k in range(256)] + [result("b", "passed")])
    assert facts.failed(0) == 256
    assert facts.outcomes() == bytes([FAILED, PASSED])
    assert facts.outcomes_of(row_range(2)) == bytes([FAILED, PASSED])
    assert facts.outcomes_of(array("q", [1, 0])) == bytes([PASSED, FAILED])


@pytest.mark.parametrize("kind", range(len(CASES)))
def test_the_base_read_in_a_worker_gives_the_verdict_of_the_whole_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: int
) -> None:
    """Read side by side, the base's rows (from the worker) are checked against the
    candidate's (the same cases in the same order need no check of their own), else on
    their own, and read again by case id where a case's lines are apart."""
    from evalh.core.compare import load as compare_load

    store, base, cand = _stored_pair(tmp_path, kind, 12)
    monkeypatch.setattr(compare_load, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(compare_load, "_second_core", lambda: True)
    forked = compare_load.load_compared(store, base.run_id, cand.run_id, parallel=True).compare()
    assert forked.to_dict() == compare_runs(store.load(base.run_id), store.load(cand.run_id)).to_dict()


def test_two_runs_whose_cases_have_lines_apart_alike_are_read_by_case_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base and candidate hold the same lines in the same order, a case's attempts
    apart: the same rows unchecked on both sides would prove nothing."""
    from evalh.core.compare import load as compare_load

    store = RunStore(tmp_path)
    runs = [_run(run_id, 3, regime="stochastic", arms=["default"], repeats=3, shift=0.0, aligned=True)
            for run_id in ("20260101T000000000Z-00000a", "20260101T000001000Z-00000b")]
    for run in runs:
        cases = run.suites["s"].cases
        run.suites["s"].cases = cases[0::3] + cases[1::3] + cases[2::3]  # attempt 0 of every case, then 1, then 2
        store.write(run)
    from evalh.core.compare import facts_read as compare_facts
    from evalh.document import read_head

    with store.path_for(runs[0].run_id).open("rb") as fh:  # in one chunk: found apart at once
        head = read_head(fh)
        with pytest.raises(compare_facts.LinesApart):
            compare_facts._facts_from(fh, head, "doc", {}, lookup=False)
    monkeypatch.setattr(compare_load, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(compare_load, "_second_core", lambda: True)
    loaded = compare_load.load_compared(store, runs[0].run_id, runs[1].run_id, parallel=True)
    assert [len(side["s"]) for side in loaded.facts] == [60, 60]  # a row a case, not an attempt
    whole = compare_runs(store.load(runs[0].run_id), store.load(runs[1].run_id))
    assert loaded.compare().to_dict() == whole.to_dict()
