"""What `compare_runs` pairs, as compact columns: the per-case facts of one suite of one run.

A (case, arm) with several attempts is one row: its attempts counted by status, its scores,
latencies and costs kept as values (repeats averaged later, by `compare.metrics`). The
columns are arrays, not objects: a row costs ~60 bytes beside its case id, so the facts of
two runs of a million results each fit in a few hundred MB, where one `CaseResult` model
a result took ~3 KB.

Two ways in, one structure: `suite_facts` from result models (a run in memory: `evalh run
--compare-baseline`, pooled baselines, the API) and `read_facts` from a run document in the
streamed layout (`evalh.document`), a chunk of result lines at a time, without a model per
result.
A line of another shape than evalh writes is validated as a `CaseResult` (the same
coercions and the same named error as every other reader); so is every line of a document
in the earlier, indented layout, which `evalh.store` loads whole.
"""

from __future__ import annotations

import math
import pickle
from array import array
from collections.abc import Iterable
from itertools import accumulate, compress
from operator import ne
from typing import Any

from evalh.core.compare.columns import Values, put_values, row_range
from evalh.models import CaseResult

STATUSES = ("passed", "failed", "errored", "judge_error", "skipped")
OUTCOMES = ("errored", "failed", "judge_error", "passed", "skipped")
"""A case's outcome codes (`SuiteFacts.outcomes`), by priority: one errored attempt makes
the case errored, else one failed one failed, and so on."""
ERRORED, FAILED, JUDGE_ERROR, PASSED, SKIPPED = range(5)


def _outcome_of(bits: int) -> int:
    """The outcome code of a row from its bits: 8 errored, 4 failed, 2 judge_error, 1 passed."""
    for bit, code in ((8, ERRORED), (4, FAILED), (2, JUDGE_ERROR), (1, PASSED)):
        if bits & bit:
            return code
    return SKIPPED


_OUTCOME_OF = bytes(_outcome_of(b) for b in range(256))
_ONE_IF_ANY = bytes([0] + [1] * 255)
_INDEX = {s: i for i, s in enumerate(STATUSES)}
_PASSED, _FAILED, _ERRORED, _JUDGE_ERROR, _SKIPPED = range(5)
NO_DIGEST = -1
"""The digest column's value for a result without a content digest (`hash` of a str is
never -1, so it cannot collide with one)."""

Options = tuple[str | None, frozenset[str]]
"""(cluster field or None, scorers whose values are kept apart): what a suite's facts hold,
decided from both runs' configuration (`compare.snapshot_options`)."""
DEFAULT_OPTIONS: Options = ("group", frozenset())


class SuiteFacts:
    """Every (case, arm) of one suite of one run, one row each in first-seen order."""

    __slots__ = ("_capacity", "_cluster_index", "_outcomes", "arm_names", "arm_of", "case_ids", "cluster", "cluster_by",
                 "cluster_names", "costs", "counts", "digest", "graded", "latencies", "results",
                 "judge_models", "max_attempt", "_last", "_rows", "scorer_values", "scorers", "scores",
                 "status_counts")

    def __init__(self, options: Options = DEFAULT_OPTIONS, expected: int = 0, *, lookup: bool = True) -> None:
        """`expected`: how many results are coming, when known (the columns are sized
        for them at once; they grow by half otherwise). `lookup`: keep the case-id lookup
        while lines come (`add_lines`); without it, a line of the (case, arm) of the line
        before it is its attempt, and `folded` says whether that was every row's."""
        self.cluster_by, self.scorers = options
        self._rows: dict[str, dict[str, int]] | None = {} if lookup else None
        """arm → case id → row (`rows`)."""
        self._last: tuple[str | None, str | None] = (None, None)
        """(arm, case id) of the last line `add_lines` read."""
        self.case_ids: list[str] = []
        self.arm_of = array("H")
        self.arm_names: list[str] = []
        self.digest = array("q")
        self.cluster = array("i")
        self.cluster_names: list[str] = []
        self._cluster_index: dict[str, int] = {}
        self.counts = tuple(array("I") for _ in STATUSES)
        """Attempts of each row by status (`STATUSES` order)."""
        self.scores = Values()
        """Scores of the attempts that passed or failed (NaN left out)."""
        self.latencies = Values()
        self.costs = Values()
        self.graded = bytearray()
        """1 where some score is not the pass indicator (1 on a pass, 0 on a fail)."""
        self.scorer_values: dict[str, Values] = {s: Values() for s in sorted(self.scorers)}
        self.results = 0
        self.status_counts = [0] * len(STATUSES)
        """Results (attempts) of the whole suite by status."""
        self.max_attempt = -1
        """The highest attempt number of any result (-1: none)."""
        self.judge_models: set[str] = set()
        """Every judge model a score names (the configuration comparison lists them)."""
        self._capacity = 0
        self._grow(max(expected, 16))
        self._outcomes: bytes | None = None

    # ---------------------------------------------------------------- building

    def _grow(self, extra: int) -> None:
        """Room for `extra` more rows in every column: no attempt, no value, no digest (-1),
        no cluster (-1). The arrays grow in place."""
        for column in (*self.counts, self.arm_of):
            column.frombytes(bytes(column.itemsize * extra))
        for column in (self.digest, self.cluster):
            column.frombytes(b"\xff" * (column.itemsize * extra))  # -1
        for values in (self.scores, self.latencies, self.costs, *self.scorer_values.values()):
            values._grow(extra)
        self.graded.extend(bytes(extra))
        self._capacity += extra

    def _arm_rows(self, arm: str) -> dict[str, int]:
        """The case → row lookup of `arm`, made (and the arm named) when it is first seen."""
        found = self.rows.get(arm)
        if found is None:
            found = self.rows[arm] = {}
            self.arm_names.append(arm)
        return found

    def extend(self, results: Iterable[Any]) -> None:
        """Results (attempts): `CaseResult` models, or a document's lines as `_line_type`
        reads them (the same attributes). A (case, arm) seen first here is a new row; its
        digest and cluster are those of its first result."""
        case_ids, arm_names = self.case_ids, self.arm_names
        counts, status_counts, index_of = self.counts, self.status_counts, _INDEX
        scores, latencies, costs, graded = self.scores, self.latencies, self.costs, self.graded
        digests, clusters, arm_of, cluster_by = self.digest, self.cluster, self.arm_of, self.cluster_by
        kept = self.scorer_values if self.scorers else None
        judges, max_attempt, isfinite = self.judge_models, self.max_attempt, math.isfinite
        # the first value of a row, written here (most rows hold one): `Values.add` otherwise
        score_n, score_first = scores.n, scores.first
        latency_n, latency_first = latencies.n, latencies.first
        last_arm: str | None = None
        by_case: dict[str, int] = {}
        arm_index = 0
        n = 0
        for r in results:
            n += 1
            arm = r.arm
            if arm != last_arm:
                by_case, arm_index, last_arm = self._arm_rows(arm), arm_names.index(arm), arm
            new = len(case_ids)
            row = by_case.setdefault(r.case_id, new)
            if row == new:  # a (case, arm) not seen before
                if new == self._capacity:
                    self._grow(max(16, new // 2))
                case_ids.append(r.case_id)
                if arm_index:
                    arm_of[row] = arm_index
                digest = r.case_digest
                if digest is not None:
                    digests[row] = hash(digest)
                if cluster_by:  # a model's metadata, or a line's cluster field (`_line_type`)
                    metadata = r.metadata
                    value = metadata.get(cluster_by) if type(metadata) is dict else metadata.value
                    if value is not None:
                        clusters[row] = self._cluster(str(value))
            if r.attempt > max_attempt:
                max_attempt = r.attempt
            given = r.scores
            for s in given:
                if s.judge_model:
                    judges.add(s.judge_model)
            index = index_of.get(r.status, _SKIPPED)
            status_counts[index] += 1
            counts[index][row] += 1
            if index == _SKIPPED:
                continue
            if index <= _FAILED:  # answered: its scores are figures of the product
                score = r.score  # a scorer's NaN is no figure (the stored document writes null)
                if score is not None and isfinite(score):
                    if score_n[row]:
                        scores.add(row, score)
                    else:
                        score_first[row], score_n[row] = score, 1
                    if score != (1.0 if index == _PASSED else 0.0):
                        graded[row] = 1
                if kept is not None:
                    for s in given:
                        values, value = kept.get(s.scorer), s.value
                        if values is not None and value is not None and isfinite(value):
                            values.add(row, value)
            # A cached reply has neither the target's latency nor its cost (it is recorded
            # as 0): counted, it would make a warm cache look like a cheaper product.
            if r.cached:
                continue
            latency, cost = r.latency_ms, r.cost_usd
            if latency is not None and isfinite(latency):
                if latency_n[row]:
                    latencies.add(row, latency)
                else:
                    latency_first[row], latency_n[row] = latency, 1
            if cost is not None and isfinite(cost):
                costs.add(row, cost)
        self.results += n
        self.max_attempt = max_attempt
        self._outcomes = None

    def add_lines(self, results: list[Any]) -> None:
        """A chunk of result lines as `_line_type` decodes them: the facts `extend` takes
        from them, a column at a time (a comprehension or an array constructor a field)
        rather than a loop a line. In the usual chunk every line is a (case, arm) not seen
        before, of one arm: each column of its rows is then written in one slice."""
        m = len(results)
        if not m:
            return
        case_ids = self.case_ids
        n0 = len(case_ids)
        ids = [r.case_id for r in results]  # (a comprehension reads a field faster than map(attrgetter))
        arms = [r.arm for r in results]
        if self._rows is None:
            line_rows, new_ids, new_arms, firsts, index = self._runs(ids, arms, results)
        else:
            line_rows, new_ids, new_arms, firsts, index = self._looked_up(ids, arms, results)
        # the new rows n0 … n0 + k - 1: their case, arm, digest and cluster, from their first result
        k = len(new_ids)
        if n0 + k > self._capacity:
            self._grow(max(16, n0 // 2, n0 + k - self._capacity))
        end = n0 + k
        case_ids.extend(new_ids)
        if new_arms is not None:
            self.arm_of[n0:end] = array("H", new_arms)
        elif index:
            self.arm_of[n0:end] = array("H", [index]) * k
        digests = [r.case_digest for r in firsts]
        self.digest[n0:end] = array("q", map(hash, digests) if digests.count(None) == 0 else
                                    [NO_DIGEST if d is None else hash(d) for d in digests])
        if self.cluster_by:
            self.cluster[n0:end] = array("i", self._clusters([r.metadata.value for r in firsts]))
        # every line: its attempt, judges and status
        self.results += m
        self.max_attempt = max(self.max_attempt, max([r.attempt for r in results]))
        models = {s.judge_model for r in results for s in r.scores}
        models.discard(None)
        models.discard("")
        self.judge_models.update(models)
        self._outcomes = None
        idx = list(map(_INDEX.__getitem__, [r.status for r in results]))
        tally = [idx.count(s) for s in range(len(STATUSES))]
        for status, t in enumerate(tally):
            self.status_counts[status] += t
        counts = self.counts
        if line_rows is None:  # new rows: their counts are 0
            for status, t in enumerate(tally):
                if t == m:
                    counts[status][n0:end] = array("I", [1]) * m
                elif t:
                    counts[status][n0:end] = array("I", [s == status for s in idx])
        else:
            for row, status in zip(line_rows, idx, strict=True):
                counts[status][row] += 1
        # answered (passed, failed): its scores are figures of the product; a scorer's NaN is none
        answered = tally[_PASSED] + tally[_FAILED]
        if answered:
            scores = [r.score for r in results]
            full = answered == m and scores.count(None) == 0 and math.isfinite(sum(scores))
            values = scores if full else [
                x if s <= _FAILED and x is not None and math.isfinite(x) else None
                for x, s in zip(scores, idx, strict=True)]
            put_values(self.scores, values, full, line_rows, n0)
            if not full or not (tally[_FAILED] == m and scores.count(0.0) == m
                                or tally[_PASSED] == m and scores.count(1.0) == m):
                # graded: a score other than the pass indicator (1 on a pass, 0 on a fail)
                graded = [x is not None and x != (s == _PASSED) for x, s in zip(values, idx, strict=True)]
                if line_rows is None:
                    self.graded[n0:end] = bytes(graded)
                else:
                    for row in compress(line_rows, graded):
                        self.graded[row] = 1
            if self.scorers:
                kept = self.scorer_values
                for j, (r, s) in enumerate(zip(results, idx, strict=True)):
                    if s > _FAILED:
                        continue
                    row = n0 + j if line_rows is None else line_rows[j]
                    for score in r.scores:
                        values_of, value = kept.get(score.scorer), score.value
                        if values_of is not None and value is not None and math.isfinite(value):
                            values_of.add(row, value)
        # A cached reply has neither the target's latency nor its cost (it is recorded as
        # 0): counted, it would make a warm cache look like a cheaper product. Nor has a
        # skipped one.
        if tally[_SKIPPED] == m:
            return
        cached = [r.cached for r in results]
        every = tally[_SKIPPED] == 0 and cached.count(True) == 0
        for column, xs in ((self.latencies, [r.latency_ms for r in results]), (self.costs, [r.cost_usd for r in results])):
            if xs.count(None) == m:
                continue
            full = every and xs.count(None) == 0 and math.isfinite(sum(xs))
            if not full:
                xs = [x if x is not None and not c and s != _SKIPPED and math.isfinite(x) else None
                      for x, c, s in zip(xs, cached, idx, strict=True)]
            put_values(column, xs, full, line_rows, n0)

    def _runs(self, ids: list[str], arms: list[str], results: list[Any]) -> _Placed:
        """The rows of a chunk's lines when no lookup is kept (a document's lines, read in
        order): a line of the (case, arm) of the line before it is an attempt of its row,
        any other line a new row. A document lists a case's attempts and arms together, so
        that is every row; `folded` checks it once the suite is read (a case whose lines are
        apart would be two rows; apart within one chunk, `LinesApart` is raised at once), and
        `facts_from` reads a document where it does not hold again with the lookup. A million-entry dict filled a line at a time cost more than
        anything else the lines are read into."""
        m, n0, names = len(ids), len(self.case_ids), self.arm_names
        last_arm, last_id = self._last
        arm = arms[0]
        if arms.count(arm) == m:  # one arm
            if arm not in names:
                names.append(arm)
            index = names.index(arm)
            starts = list(map(ne, ids, [last_id if arm == last_arm else None, *ids[:-1]]))
            new_arms = None
        else:
            for a in dict.fromkeys(arms):
                if a not in names:
                    names.append(a)
            starts = [a != pa or c != pc for a, c, pa, pc in zip(arms, ids, [last_arm, *arms[:-1]],
                                                                 [last_id, *ids[:-1]], strict=True)]
            new_arms = list(map(names.index, compress(arms, starts)))
            index = 0
        self._last = (arms[-1], ids[-1])
        new_ids = ids if starts.count(False) == 0 else list(compress(ids, starts))
        if len(set(new_ids if new_arms is None else zip(new_ids, new_arms, strict=True))) != len(new_ids):
            raise LinesApart  # a case's lines apart within the chunk (a shuffled document): no use going on
        if new_ids is ids:  # each line a new row
            return None, ids, new_arms, results, index
        line_rows = list(accumulate(starts, initial=n0 - 1))[1:]
        return line_rows, new_ids, new_arms, list(compress(results, starts)), index

    def _looked_up(self, ids: list[str], arms: list[str], results: list[Any]) -> _Placed:
        """The rows of a chunk's lines through the lookup (`rows`): a (case, arm) keeps
        the row it was first seen in, wherever its lines are."""
        arm_names = self.arm_names
        m, n0 = len(ids), len(self.case_ids)
        arm = arms[0]
        line_rows: list[int] | None = None  # each line's row; None: line j is row n0 + j
        new_arms: list[int] | None = None  # each new row's arm; None: all `arm`
        if arms.count(arm) == m:  # one arm: rows found with one dict operation a line, in C
            by_case = self._arm_rows(arm)
            # A case seen first on line j gets row n0 + j, one seen before keeps its row
            # (< n0, or that of its first line here): each is at most n0 + j, so the rows
            # sum to that of n0 … n0 + m - 1 only when every line is a new row.
            found = list(map(by_case.setdefault, ids, range(n0, n0 + m)))
            if sum(found) == (2 * n0 + m - 1) * m // 2:
                return None, ids, None, results, arm_names.index(arm)
            # a case of several attempts, or one the previous chunk began: the new rows renumbered n0, n0 + 1, …
            first_lines = sorted({row - n0 for row in found if row >= n0})
            new_ids = [ids[j] for j in first_lines]
            renumbered = {n0 + j: n0 + k for k, j in enumerate(first_lines)}
            by_case.update(zip(new_ids, range(n0, n0 + len(new_ids)), strict=True))
            line_rows = [renumbered.get(row, row) for row in found]
            return line_rows, new_ids, None, [results[j] for j in first_lines], arm_names.index(arm)
        # several arms: a row a line, in first-seen order
        line_rows, new_ids, new_arms, first_lines = [], [], [], []
        last_arm, by_case, index = None, {}, 0
        for j, (a, case_id) in enumerate(zip(arms, ids, strict=True)):
            if a != last_arm:
                by_case, index, last_arm = self._arm_rows(a), arm_names.index(a), a
            row = by_case.get(case_id)
            if row is None:
                row = by_case[case_id] = n0 + len(new_ids)
                new_ids.append(case_id)
                new_arms.append(index)
                first_lines.append(j)
            line_rows.append(row)
        return line_rows, new_ids, new_arms, [results[j] for j in first_lines], 0

    def folded(self) -> bool:
        """No (case, arm) is in two rows (`_runs` gives a case whose lines are apart two)."""
        n = len(self.case_ids)
        if len(self.arm_names) <= 1:
            return len(set(self.case_ids)) == n
        return len(set(zip(self.case_ids, self.arm_of, strict=False))) == n  # (arm_of has room past the rows)

    def _clusters(self, values: list[Any]) -> list[int]:
        """The cluster index of each value (-1 for None), names added as first seen."""
        index = self._cluster_index
        try:
            found = list(map(index.get, values))  # names seen before (the usual case)
        except TypeError:  # an unhashable value (a list): named by its str
            found = [None]
        if None not in found:
            return found  # type: ignore[return-value]
        # a new name (added in first-seen order), no value, or one that is not a str
        names = [v if type(v) is str else None if v is None else str(v) for v in values]
        for name in dict.fromkeys(names):
            if name is not None and name not in index:
                self._cluster(name)
        return [-1 if name is None else index[name] for name in names]

    def _cluster(self, name: str) -> int:
        index = self._cluster_index.get(name)
        if index is None:
            index = self._cluster_index[name] = len(self.cluster_names)
            self.cluster_names.append(name)
        return index

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        """Pickled as one buffer (`pack`): how a worker process hands its facts back."""
        return (SuiteFacts.unpack, (self.pack(),))

    def pack(self) -> bytes:
        """The facts as one buffer, for a process forked from this one (the same machine:
        the columns' bytes as they are in memory): a small pickled head (names, counts,
        sizes), then each column cut to the rows, the rows' further values and the case
        ids joined by NUL, each as raw bytes. A million rows pack and unpack at memory
        speed; their lookup (`rows`) is not sent, and is rebuilt only if it is asked for."""
        n = len(self.case_ids)
        buffers: list[Any] = [memoryview(column)[:n] for column in (self.arm_of, self.digest, self.cluster, *self.counts)]
        buffers.append(memoryview(self.graded)[:n])
        for values in (self.scores, self.latencies, self.costs, *self.scorer_values.values()):
            rows = sorted(values.more)
            flat = array("d", [x for row in rows for x in values.more[row]])
            buffers += [memoryview(values.n)[:n], memoryview(values.first)[:n], array("q", rows), flat]
        joined = "\0".join(self.case_ids)
        ids = None if joined.count("\0") != max(n - 1, 0) else joined.encode()  # (an id holding a NUL: a list)
        if ids is not None:
            buffers.append(ids)
        head = pickle.dumps({
            "n": n, "sizes": [memoryview(b).nbytes for b in buffers],
            "case_ids": self.case_ids if ids is None else None,
            **{name: getattr(self, name) for name in _PACKED_SCALARS},
        })
        return b"".join([len(head).to_bytes(8, "little"), head, *buffers])

    @classmethod
    def unpack(cls, data: bytes) -> SuiteFacts:
        """The facts `pack` made."""
        view = memoryview(data)
        k = int.from_bytes(view[:8], "little")
        head = pickle.loads(view[8:8 + k])
        sizes = iter(head.pop("sizes"))
        pos = 8 + k

        def take() -> memoryview:
            nonlocal pos
            size = next(sizes)
            pos += size
            return view[pos - size:pos]

        def column(typecode: str) -> array[Any]:
            out = array(typecode)
            out.frombytes(take())
            return out

        facts = cls.__new__(cls)
        n, case_ids = head.pop("n"), head.pop("case_ids")
        for name, value in head.items():
            setattr(facts, name, value)
        facts.arm_of, facts.digest, facts.cluster = column("H"), column("q"), column("i")
        facts.counts = tuple(column("I") for _ in STATUSES)
        facts.graded = bytearray(take())
        columns = []
        for _ in range(3 + len(facts.scorers)):
            values = Values()
            values.n, values.first = column("I"), column("d")
            rows, flat = column("q"), column("d")
            at = 0
            for row in rows:
                count = values.n[row]
                values.more[row] = flat[at:at + count].tolist()
                at += count
            columns.append(values)
        facts.scores, facts.latencies, facts.costs = columns[:3]
        facts.scorer_values = dict(zip(sorted(facts.scorers), columns[3:], strict=True))
        if case_ids is None:
            case_ids = str(take(), "utf-8").split("\0") if n else []
        facts.case_ids = case_ids
        facts._cluster_index = {name: i for i, name in enumerate(facts.cluster_names)}
        facts._capacity = n
        facts._rows = None
        facts._last = (None, None)
        facts._outcomes = None
        return facts

    @property
    def rows(self) -> dict[str, dict[str, int]]:
        """arm → case id → row. Facts a worker handed back (`unpack`) build it when first
        asked: the comparison of two runs holding the same cases in the same order never
        does."""
        rows = self._rows
        if rows is None:
            names, arm_of = self.arm_names, self.arm_of
            rows = self._rows = {arm: {} for arm in names}
            if len(names) == 1:
                rows[names[0]] = dict(zip(self.case_ids, range(len(self.case_ids)), strict=True))
            else:
                for row, case_id in enumerate(self.case_ids):
                    rows[names[arm_of[row]]][case_id] = row
        return rows

    # ---------------------------------------------------------------- reading

    def __len__(self) -> int:
        return len(self.case_ids)

    def arm(self, row: int) -> str:
        return self.arm_names[self.arm_of[row]]

    def cluster_of(self, row: int) -> str | None:
        index = self.cluster[row]
        return None if index < 0 else self.cluster_names[index]

    def passed(self, row: int) -> int:
        return self.counts[_PASSED][row]

    def failed(self, row: int) -> int:
        return self.counts[_FAILED][row]

    def errored(self, row: int) -> int:
        return self.counts[_ERRORED][row]

    def judge_error(self, row: int) -> int:
        return self.counts[_JUDGE_ERROR][row]

    def skipped(self, row: int) -> int:
        return self.counts[_SKIPPED][row]

    def valid(self, row: int) -> int:
        """Attempts with a pass/fail outcome."""
        return self.counts[_PASSED][row] + self.counts[_FAILED][row]

    def tried(self, row: int) -> int:
        """Attempts that reached an outcome, an error included (skipped ones excluded)."""
        c = self.counts
        return c[_PASSED][row] + c[_FAILED][row] + c[_ERRORED][row] + c[_JUDGE_ERROR][row]

    def pass_frac(self, row: int) -> float | None:
        valid = self.valid(row)
        return self.counts[_PASSED][row] / valid if valid else None

    def error_frac(self, row: int) -> float | None:
        """Share of attempts that measured nothing: the target errored, or a judge did."""
        tried = self.tried(row)
        return (self.counts[_ERRORED][row] + self.counts[_JUDGE_ERROR][row]) / tried if tried else None

    def score(self, row: int) -> float | None:
        return self.scores.mean(row)

    def scorer_mean(self, name: str, row: int) -> float | None:
        values = self.scorer_values.get(name)
        return values.mean(row) if values is not None else None

    def scorer_count(self, name: str, row: int) -> int:
        values = self.scorer_values.get(name)
        return values.count(row) if values is not None else 0

    def binary_scores(self, row: int) -> bool:
        """Every pass/fail attempt scored 1 on a pass and 0 on a fail: its mean score is
        its pass rate."""
        return not self.graded[row] and self.scores.n[row] == self.valid(row)

    def outcome(self, row: int) -> str:
        """One status for the case: errored > failed > judge_error > passed > skipped."""
        return OUTCOMES[self.outcomes()[row]]

    def outcomes(self) -> bytes:
        """The outcome of every row, as its index in `OUTCOMES` (computed once, in C: a
        bit a status a row, combined and looked up in `_OUTCOME_OF`)."""
        n = len(self.case_ids)
        if self._outcomes is None or len(self._outcomes) != n:
            def has(status: int) -> int:  # a byte a row: 1 where it has attempts of `status`
                column = self.counts[status]
                raw, width = column[:n].tobytes(), column.itemsize
                lanes = 0  # each byte of a row's count, or-ed together into one byte a row
                for k in range(width):
                    lanes |= int.from_bytes(raw[k::width], "little")
                return int.from_bytes(lanes.to_bytes(n, "little").translate(_ONE_IF_ANY), "little")

            bits = has(_ERRORED) << 3 | has(_FAILED) << 2 | has(_JUDGE_ERROR) << 1 | has(_PASSED)
            self._outcomes = bits.to_bytes(n, "little").translate(_OUTCOME_OF)
        return self._outcomes

    def outcomes_of(self, rows: array[int]) -> bytes:
        """`outcomes` of `rows`, in their order."""
        outcomes = self.outcomes()
        if len(rows) == len(outcomes) and rows == row_range(len(rows)):  # every row, in order
            return outcomes
        return bytes(map(outcomes.__getitem__, rows))

    def same_rows(self, other: SuiteFacts) -> bool:
        """Both hold the same (case, arm) rows in the same order."""
        n = len(self.case_ids)
        return (n == len(other.case_ids) and self.arm_names == other.arm_names
                and self.case_ids == other.case_ids and self.arm_of[:n] == other.arm_of[:n])

    def digest_differs(self, other: SuiteFacts) -> set[int]:
        """The rows (of two suites with the `same_rows`) whose content digests differ."""
        n = len(self.case_ids)
        mine, theirs = self.digest[:n], other.digest[:n]
        if mine == theirs:
            return set()
        return {row for row, (a, b) in enumerate(zip(mine, theirs, strict=True))
                if a != b and a != NO_DIGEST and b != NO_DIGEST}

    def count(self, status: str) -> int:
        """Results (attempts) of the suite with `status`."""
        return self.status_counts[_INDEX[status]]



_Placed = tuple[list[int] | None, list[str], list[int] | None, list[Any], int]
"""Where a chunk's lines go (`SuiteFacts.add_lines`): each line's row (None: line j is a new
row, the j-th), the new rows' case ids, their arms (None: all of arm `index`), the first
result of each, and `index`."""

_PACKED_SCALARS = ("arm_names", "cluster_by", "cluster_names", "judge_models", "max_attempt", "results",
                   "scorers", "status_counts")
"""What `SuiteFacts.pack` sends pickled, beside the columns."""


def suite_facts(results: Iterable[CaseResult], options: Options = DEFAULT_OPTIONS) -> SuiteFacts:
    """The facts of a suite's results in memory."""
    facts = SuiteFacts(options)
    facts.extend(results)
    return facts


class LinesApart(Exception):
    """A case's lines are apart in a chunk read without the lookup (`SuiteFacts._runs`)."""
