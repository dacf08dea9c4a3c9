"""Two stored runs, read for `compare_runs`: their headers and the facts it pairs.

A document in the streamed layout is read twice over its first line (the header of each
run decides what the facts of the other keep: the cluster field and the gated scorers,
`compare.suite_options`) and once over its results, one line at a time, into compact
columns (`compare_facts`): no model per result, nothing of their inputs or outputs kept.
A document of the earlier, indented layout is parsed whole, once (`RunStore.load_facts`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from evalh.core.compare.corrected import CorrectedPair
from evalh.core.compare.decide import Facts, suite_options
from evalh.core.compare.facts import DEFAULT_OPTIONS, suite_facts
from evalh.core.compare.facts_read import read_facts, unfolded
from evalh.core.compare.models import ComparePolicy, Comparison
from evalh.models import Run
from evalh.store import RunStore, read_streamed


@dataclass(frozen=True)
class Compared:
    """Two runs as `compare_runs` reads them: headers (results left out) and facts."""

    base: Run
    candidate: Run
    facts: tuple[Facts, Facts]

    def compare(self, policy: ComparePolicy | None = None, corrected: Mapping[tuple[str, str], CorrectedPair] | None = None
                ) -> Comparison:
        from evalh.core.compare.decide import compare_runs

        return compare_runs(self.base, self.candidate, policy, facts=self.facts, corrected=corrected)


PARALLEL_BYTES = 64 << 20
"""Documents larger than this together are read side by side (`load_compared(parallel=)`)."""


def load_compared(store: RunStore, base_ref: str, candidate_ref: str, *, parallel: bool = False) -> Compared:
    """The runs `base_ref` and `candidate_ref` (ids or document paths) of `store`.

    `parallel`: when the machine has a second core and the documents are large, the base is
    read in a forked worker process while this one reads the candidate (its facts come back
    as one buffer of raw columns, `SuiteFacts.pack`; its rows are checked against the
    candidate's, `compare_facts.unfolded`). For a single-threaded caller (the CLI): a
    process with threads must not fork.

    Raises `RunNotFound`, `InvalidRunId` or `RunDocumentError` (exit code 2), naming the
    file and, for a damaged result, its line or field."""
    refs = (base_ref, candidate_ref)
    paths = [store.resolve(ref) for ref in refs]
    # A streamed document: its header now, its facts below. One of the earlier layout is
    # parsed whole once (its results as models, their facts taken from them).
    heads = [read_streamed(path, str(path), header_only=True) for path in paths]
    whole = [store.load_facts(ref) if head is None else None for ref, head in zip(refs, heads, strict=True)]
    base, cand = (head or run for head, run in zip(heads, whole, strict=True))
    assert base is not None and cand is not None
    options = suite_options(base, cand)
    sides: list[Facts | None] = [
        None if run is None else {name: suite_facts(s.cases, options.get(name, DEFAULT_OPTIONS))
                                  for name, s in run.suites.items()}
        for run in whole
    ]
    if (parallel and sides == [None, None] and _second_core()
            and sum(p.stat().st_size for p in paths) > PARALLEL_BYTES):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool

        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
            # The base's rows are checked here against the candidate's (`unfolded`): two runs
            # of the same cases need one check, made while the worker packs its facts.
            other = pool.submit(read_facts, paths[0], str(paths[0]), options, rows="unchecked")
            sides[1] = read_facts(paths[1], str(paths[1]), options)
            try:
                sides[0] = other.result()
            except BrokenProcessPool:  # the worker died (killed, out of memory): read it here
                sides[0] = read_facts(paths[0], str(paths[0]), options)
        if sides[0] is not None and (sides[1] is None or unfolded(sides[0], sides[1])):
            sides[0] = read_facts(paths[0], str(paths[0]), options, rows="lookup")
    for k, path in enumerate(paths):
        if sides[k] is None:
            sides[k] = read_facts(path, str(path), options)
    b, c = sides
    if b is None or c is None:  # replaced between its header and its results
        from evalh.errors import RunDocumentError

        raise RunDocumentError(f"{paths[0] if b is None else paths[1]}: changed while it was read: try again")
    return Compared(base, cand, (b, c))


def _second_core() -> bool:
    import os
    import sys

    if not sys.platform.startswith("linux"):  # fork is the start method this relies on
        return False
    return len(os.sched_getaffinity(0)) > 1
