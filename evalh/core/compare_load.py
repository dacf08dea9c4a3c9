"""Two stored runs, read for `compare_runs`: their headers and the facts it pairs.

A document in the streamed layout is read twice over its first line (the header of each
run decides what the facts of the other keep: the cluster field and the gated scorers,
`compare.suite_options`) and once over its results, one line at a time, into compact
columns (`compare_facts`): no model per result, nothing of their inputs or outputs kept.
A document of the earlier, indented layout is loaded whole (`RunStore.load_facts`).
"""

from __future__ import annotations

from dataclasses import dataclass

from evalh.core.compare import Facts, suite_options
from evalh.core.compare_facts import DEFAULT_OPTIONS, read_facts, suite_facts
from evalh.core.compare_models import ComparePolicy, Comparison
from evalh.models import Run
from evalh.store import RunStore


@dataclass(frozen=True)
class Compared:
    """Two runs as `compare_runs` reads them: headers (results left out) and facts."""

    base: Run
    candidate: Run
    facts: tuple[Facts, Facts]

    def compare(self, policy: ComparePolicy | None = None) -> Comparison:
        from evalh.core.compare import compare_runs

        return compare_runs(self.base, self.candidate, policy, facts=self.facts)


def load_compared(store: RunStore, base_ref: str, candidate_ref: str) -> Compared:
    """The runs `base_ref` and `candidate_ref` (ids or document paths) of `store`.

    Raises `RunNotFound`, `InvalidRunId` or `RunDocumentError` (exit code 2), naming the
    file and, for a damaged result, its line or field."""
    base, cand = store.load_header(base_ref), store.load_header(candidate_ref)
    options = suite_options(base, cand)
    sides: list[Facts] = []
    for ref in (base_ref, candidate_ref):
        path = store.resolve(ref)
        facts = read_facts(path, str(path), options)
        if facts is None:  # the earlier layout: parsed whole, as every reader of it does
            run = store.load_facts(ref)
            facts = {name: suite_facts(s.cases, options.get(name, DEFAULT_OPTIONS))
                     for name, s in run.suites.items()}
        sides.append(facts)
    return Compared(base, cand, (sides[0], sides[1]))
