"""The one runner core: plan → produce → score → save.

Every command that executes cases comes through `run_plan`. Per suite (cheapest first) it
expands the (case, arm, attempt) triples the plan does not carry already, shuffles them
with the run's seed, and runs them with a bounded number in flight: each arm's output
source (`evalh.targets.base.OutputSource`: a live target, or a stored run's outputs)
produces the output, the scorers score it. Sync targets run in a worker thread; each call
has a timeout (`evalh.core.run.sources.LiveSource`), enforced by one watchdog per worker
task (`evalh.core.run.deadlines`). A target that raises or times out gives an
`errored` result with the exception's type and message: never a pass, never dropped. Each
finished result is appended to the run's journal before anything else happens, and the run
document is written atomically at the end — also when the run stops early (budget,
interrupt), then as `partial` with the reason.

Memory is bounded by the work in flight, not by the run's size: a journaled result is not
kept as a model, only as compact numbers (`evalh.core.run.retained`: where its journal line is,
its place in the document, what the aggregates read), the items to run are codes expanded
one at a time, and the document's result lines are streamed from the journal at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
from array import array
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from evalh.context import CaseContext, case_scope
from evalh.core.analysis.contrasts import suite_claims
from evalh.core.results.aggregate import aggregate_facts
from evalh.core.results.outcome import decide_status, summarize
from evalh.core.results.sizes import measure
from evalh.core.run.deadlines import install as install_watchdog
from evalh.core.run.finish import finish_from_journal
from evalh.core.run.items import NullObserver, Observer, WorkItem, WorkItems
from evalh.core.run.plan import RunPlan, SuitePlan
from evalh.core.run.requirements import FirstReply
from evalh.core.run.retained import JournalLines, StreamedResults, SuiteResults
from evalh.core.run.shuffle import present
from evalh.core.run.sources import error_info
from evalh.core.run.workers import DaemonExecutor
from evalh.datasets import case_ids
from evalh.errors import BudgetExceeded, EvalhError
from evalh.gcpause import FreezeWindow, NoWindow
from evalh.journal import shared_fields_set
from evalh.models import (
    Case,
    CaseResult,
    DatasetInfo,
    ErrorInfo,
    GitInfo,
    Run,
    Score,
    SuiteResult,
    output_sha256,
)
from evalh.provenance import environment_info, git_info
from evalh.redact import scrub_with_spans, secret_env_values
from evalh.store import RunStore, now_iso
from evalh.targets.base import CallContext, Produced, TargetOutput
from evalh.targets.python_callable import with_reported_model

if TYPE_CHECKING:
    from evalh.scorers.base import Scorer


class Runner:
    def __init__(self, plan: RunPlan, store: RunStore, observer: Observer | None = None) -> None:
        self.plan = plan
        self.store = store
        self.observer = observer or NullObserver()
        # Per suite, what is kept of each journaled result (evalh.core.run.retained): numbers,
        # not models. The plan's carried results join them once the journal is open.
        self.kept: dict[str, SuiteResults] = {}
        self.stop_reason: str | None = None
        self.started_at = plan.started_at or now_iso()
        self.journal = store.journal(plan.run_id)
        self._dataset_sha: dict[str, str] = {}
        self._git: Future[GitInfo] | None = None
        self._secrets: list[str] | None = None  # the environment's, read at the first result
        self._first_reply = FirstReply()
        self.gc_window: FreezeWindow = NoWindow()

    @staticmethod
    def _facts(case: Case) -> tuple[str, dict[str, Any]]:
        # not cached: a case is made anew from its compact record when its item runs
        # (evalh.datasets.CaseList), and a cache would hold every case of the run
        return case.digest, case.metadata.model_dump(mode="json", exclude_none=True)

    def suite_results(self, suite: SuitePlan) -> SuiteResults:
        """What the run keeps of `suite`'s results (evalh.core.run.retained)."""
        kept = self.kept.get(suite.name)
        if kept is None:
            def order() -> dict[str, int]:
                return {case_id: i for i, case_id in enumerate(case_ids(suite.cases))}

            kept = self.kept[suite.name] = SuiteResults(suite.name, order)
        return kept

    @property
    def kept_total(self) -> int:
        return sum(len(k) for k in self.kept.values())

    def _carry(self, journal_was_there: bool) -> None:
        """The plan's carried results (a resume's finished ones, a rejudge's not judged again)
        are the run's as they are: kept like the others, at their line in this run's journal
        (where its document is streamed from) — the line a resume read it from, else a new
        one (a rejudge's, a result only the partial document held)."""
        if not any(self.plan.carried.get(s.name) for s in self.plan.suites):
            return
        lines = self._journaled() if journal_was_there else {}
        for suite in self.plan.suites:
            carried = self.plan.carried.get(suite.name)
            if not carried:
                continue
            kept = self.suite_results(suite)
            for result in carried:
                found = lines.get((suite.name, result.case_id, result.arm, result.attempt))
                if found is not None and found[2] != _digest(_json(result)):
                    found = None  # the line says something else (an older evalh wrote it): anew
                where = found[:2] if found is not None else self.journal.append(suite.name, result)
                kept.add(result, where)
            self.plan.carried[suite.name] = []  # kept as numbers now: the models can go

    def _journaled(self) -> dict[tuple[str, str, str, int], tuple[int, int, bytes]]:
        """(suite, case, arm, attempt) → (offset, length, digest of the result's JSON) of the
        latest result line of each in the journal as it was opened (the line `core.run.resume`
        read the result from)."""
        import orjson

        out: dict[tuple[str, str, str, int], tuple[int, int, bytes]] = {}
        at = 0
        with self.journal.path.open("rb") as fh:
            for line in fh:
                if line.endswith(b"\n") and line.startswith(b'{"suite":'):
                    try:
                        obj = orjson.loads(line)
                        r = obj["result"]
                        body = line[line.index(b',"result":') + 10:-2]
                        key = (obj["suite"], r["case_id"], r.get("arm", "default"), r.get("attempt", 0))
                        out[key] = (at, len(line), _digest(body))
                    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                        pass  # not a result line (a set-up note): the resume refused a bad one already
                at += len(line)
        return out

    def dataset_sha(self, suite: SuitePlan) -> str:
        if suite.name not in self._dataset_sha:
            self._dataset_sha[suite.name] = suite.dataset.sha256
        return self._dataset_sha[suite.name]

    # ------------------------------------------------------------------ one item

    async def _produce(self, suite: SuitePlan, item: WorkItem) -> Produced:
        source = item.arm.source
        assert source is not None, "a suite planned without its targets is not run"
        ctx = CallContext(self.plan.run_id, suite.name, item.arm.name, item.attempt, self.plan.services)
        return await source.produce(item.case, ctx)

    async def _score(self, suite: SuitePlan, item: WorkItem, out: TargetOutput) -> list[Score]:
        from evalh.scorers.base import ScoreContext

        subject = item.arm.source.subject_model if item.arm.source is not None else None
        sctx = ScoreContext(
            run_id=self.plan.run_id, suite=suite.name, arm=item.arm.name, attempt=item.attempt,
            target_output=out, services=self.plan.services, subject_model=subject,
        )
        scores = []
        for scorer in suite.scorers:
            try:
                scores.append(await scorer.score(item.case, out.output, sctx))
            except BaseException as exc:  # sys.exit() in a custom scorer too (sources.CONTROL_FLOW)
                from evalh.core.run.sources import CONTROL_FLOW

                if isinstance(exc, CONTROL_FLOW):
                    raise
                err = error_info(exc)
                scores.append(
                    Score(scorer=scorer.config.display_name, error=f"{err.type}: {err.message}")
                )
        return scores

    async def run_item(self, suite: SuitePlan, item: WorkItem) -> CaseResult:
        """One (case, arm, attempt): its output from the arm's source, scored. What the
        output cost is charged to the run's budget unless it was cached or recorded before."""
        digest, metadata = self._facts(item.case)
        # a replayed output (rejudge) keeps the order and seed its case was shown with
        source = item.arm.source
        prior = source.recorded(item.case, item.arm.name, item.attempt) if source is not None else None
        shown = present(suite, item.case, item.attempt, self.plan.seed, prior)  # suites.S.shuffle
        case, item = shown.case, WorkItem(shown.case, item.arm, item.attempt)
        scope = CaseContext(self.plan.run_id, suite.name, case.id, item.arm.name, item.attempt, shown.seed)
        with case_scope(scope, alone=suite.concurrency == 1):
            await self._first_reply.before_call(suite)  # require.judge_not_subject
            produced = await self._produce(suite, item)
            self._first_reply.after_reply(suite, produced.output, self.plan.services.allow_self_judge)
        out, err = produced.output, produced.error
        if out is not None and err is None and prior is None:  # a replayed output was checked when produced
            err = self._claims_error(suite, case, out.output)  # require.claims over the output
        latency = round(produced.latency_ms, 3) if produced.latency_ms is not None else None
        base = dict(
            case_id=case.id, case_digest=digest, arm=item.arm.name, attempt=item.attempt,
            input=case.input, expected=case.expected, metadata=dict(metadata),
            latency_ms=latency, started_at=produced.started_at, shuffle=shown.permutation, seed=shown.seed,
        )
        if out is None or err is not None:
            result = CaseResult(status="errored", error=err, **base)
        else:
            result = await self._scored(suite, item, out, base)
            if prior is not None and prior.scrubbed and not result.scrubbed:
                result.scrubbed = prior.scrubbed  # a replayed output was scrubbed when it was produced
        if not result.cached and not produced.recorded:
            self.plan.services.budget.charge(
                cost_usd=result.cost_usd, tokens_in=result.tokens_in, tokens_out=result.tokens_out
            )
        return result

    @staticmethod
    def _claims_error(suite: SuitePlan, case: Case, output: Any) -> ErrorInfo | None:
        """A reply whose claims (`require.claims` with `text_path = "output…"`) are not its
        exact spans is an errored result of its case, naming the claim: never the run's."""
        req = suite.config.require if suite.config is not None else None
        if req is None or req.claims is None or not req.claims.text_path.startswith("output"):
            return None
        from evalh.core.run.requirements import exact_text_problem

        parts = {"input": case.input, "expected": case.expected, "metadata": case.metadata.model_dump(mode="json"),
                 "output": output}
        problem = exact_text_problem(req, parts, with_output=True)
        return ErrorInfo(type="ClaimSpanError", message=problem) if problem is not None else None

    async def _scored(self, suite: SuitePlan, item: WorkItem, out: TargetOutput, base: dict[str, Any]) -> CaseResult:
        scores = await self._score(suite, item, out)
        judge_names = {s.config.display_name for s in suite.scorers if s.kind == "judge"}
        advisory = {s.config.display_name for s in suite.scorers if s.config.advisory}
        status, score = decide_status(scores, judge_names, advisory)
        error = next(
            (ErrorInfo(type="ScorerError", message=s.error) for s in scores
             if s.error and s.scorer not in judge_names and (s.scorer not in advisory or len(advisory) == len(suite.scorers))),
            None,
        )
        cost = out.cost_usd
        if cost is None and not out.cached:
            cost = self.plan.services.cost_of(out.model, out.tokens_in, out.tokens_out)
        # The output as the document will hold it (secrets replaced), and its digest of that.
        if self._secrets is None:
            self._secrets = secret_env_values()
        output, cuts = scrub_with_spans(out.output, env=self._secrets)
        return CaseResult(
            status=status, score=score, scores=scores, output=output,
            output_sha256=output_sha256(output), scrubbed=cuts or None, trace=out.trace,
            tokens_in=out.tokens_in, tokens_out=out.tokens_out,
            cost_usd=0.0 if out.cached else cost, cached=out.cached, truncated=out.truncated,
            error=error, measured=measure(output, out.tokens_out), **base,
        )

    # ------------------------------------------------------------------ one suite

    def _items(self, suite: SuitePlan, rng: random.Random) -> WorkItems:
        """Every (case, arm, attempt) not carried, shuffled with the run's seed."""
        kept = self.suite_results(suite)
        done = {key for key in kept.row_keys() if key[0] >= 0}
        arms = [a.name for a in suite.arms]
        codes = array("q")
        code = 0
        limits = suite.attempts  # per case, fewer attempts than `repeats` (run.rounds)
        for case in range(len(suite.cases)):
            limit = suite.repeats if limits is None else limits[case]
            for arm in arms:
                for attempt in range(suite.repeats):
                    if attempt < limit and (not done or (case, arm, attempt) not in done):
                        codes.append(code)
                    code += 1
        rng.shuffle(codes)  # the same draws, and order, as for a list of that length
        return WorkItems(suite, codes)

    def _record(self, suite: SuitePlan, result: CaseResult, position: int | None = None) -> None:
        self.suite_results(suite).add(result, self.journal.append(suite.name, result), position)
        self.observer.on_result(suite, result)
        self.gc_window.tick()  # what the run keeps, off the collector's books (evalh.gcpause)

    async def _prepare_scorers(self, suite: SuitePlan) -> None:
        """Scorers with a `prepare(suite_plan, services) -> dict` hook run it before the
        suite's first case (a judge calibrates there and may refuse itself by raising an
        EvalhError); what it returns is kept in the suite's `details` under its name."""
        for scorer in suite.scorers:
            try:
                info = await scorer.prepare(suite, self.plan.services)  # no-op by default
            except BudgetExceeded as exc:
                # set-up calls (judge calibration) are admitted against the budget: the
                # run stops as `partial` before the suite's first case
                self.stop_reason = str(exc.args[0])
                if len(exc.args) > 1:
                    suite.details[scorer.config.display_name] = {"calibration": exc.args[1]}
                return
            if info:
                suite.details[scorer.config.display_name] = info
                self.journal.note_prepared(suite.name, scorer.config.display_name, info)

    async def _finalize_scorers(self, suite: SuitePlan) -> None:
        """Scorers with a `finalize(suite_plan, results, services) -> dict` hook see every
        result of the suite once it is done (pairwise judging across arms, suite-level
        figures such as consistency_under_order_swap)."""
        from evalh.scorers.base import Scorer as Base

        finalizing = [s for s in suite.scorers if type(s).finalize is not Base.finalize]
        if not finalizing:  # the no-op default changes nothing: no result is compared twice
            return
        # The hook is handed every result of the suite, in the order they were recorded: the
        # one place the suite's results are all in memory, read back from the journal.
        kept = self.suite_results(suite)
        results = [shared_fields_set(r)  # 3 KB less each while they are held
                   for r in JournalLines(self.journal.path, self.kept).models(suite.name, range(len(kept)))]
        before = [_json(r) for r in results]
        try:
            await self._finalize_each(suite, finalizing, results)
        finally:
            # what finalizing wrote into the results (a pairwise judge's pairs) is journaled
            # again: the document is streamed from the journal, and a run killed later
            # resumes with it instead of paying for it again
            for j, (result, was) in enumerate(zip(results, before, strict=True)):
                if _json(result) != was:
                    kept.replace(j, result, self.journal.append(suite.name, result))

    async def _finalize_each(self, suite: SuitePlan, scorers: list[Scorer], results: list[CaseResult]) -> None:
        for scorer in scorers:
            try:
                info = await scorer.finalize(suite, results, self.plan.services)
            except BudgetExceeded as exc:  # judging after the suite is admitted against the budget
                self.stop_reason = str(exc.args[0])
                info = exc.args[1] if len(exc.args) > 1 else None
            if info:
                suite.details.setdefault(scorer.config.display_name, {}).update(info)
            if self.stop_reason:
                return

    async def run_suite(self, suite: SuitePlan, rng: random.Random) -> None:
        await self._prepare_scorers(suite)
        if self.stop_reason:
            return
        items = self._items(suite, rng)
        self.observer.on_suite(suite, len(items))
        if suite.processes > 1 and len(items) > 1:  # spread over worker processes
            from evalh.core.run.procs import run_in_processes

            if await run_in_processes(self, suite, items):  # False: it runs in this process (it asks git after its forks)
                if not self.stop_reason:
                    await self._finalize_scorers(suite)
                return
        queue = iter(items)  # taken in order, one at a time, by every worker

        async def worker() -> None:
            dog = install_watchdog()  # the timeout of each case this worker runs (core.run.deadlines)
            try:
                while not self.stop_reason:
                    item = next(queue, None)
                    if item is None:
                        return
                    reason = self.plan.services.budget.exhausted()
                    if reason:
                        self.stop_reason = reason
                        return
                    self._record(suite, await self.run_item(suite, item), item.position)
            finally:
                dog.close()

        workers: list[asyncio.Task[None]] = []
        try:
            # Started one loop pass apart: what a worker's first case left for the loop to do
            # (a model target's connection being opened, its request) goes on while the next
            # workers start. Started at once, no request would leave before every worker had
            # prepared its first case, and the replies, all due together, would be handled one
            # after another in every round of the run (58.6 ms a call at 50 ms, 54 staggered).
            for _ in range(min(suite.concurrency, len(items)) or 1):
                workers.append(asyncio.create_task(worker()))
                await asyncio.sleep(0)
            self.ask_git()  # once every worker has its first case under way
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
        if not self.stop_reason:
            await self._finalize_scorers(suite)

    # ------------------------------------------------------------------ the run

    def result_lines(self) -> JournalLines:
        """The run's results as its journal holds them, in document order."""
        return JournalLines(self.journal.path, self.kept)

    def build_run(self, status: str, reason: str | None) -> Run:
        """The run without its results (`cases` empty, as `RunStore.load_header` reads a
        document): the aggregates from the numbers kept per result, in document order; the
        metrics, contrasts and sweep a suite configures from its results read back from
        the journal (`retained.StreamedResults`). `RunStore.write(run, self.result_lines())`
        writes the whole document."""
        stamp = now_iso()  # when the run ended: its last result, not the summing up below
        plan = self.plan
        lines = self.result_lines()
        suites: dict[str, SuiteResult] = {}
        for suite in plan.suites:
            kept = self.suite_results(suite)
            results = StreamedResults(lines, suite.name)  # read only by what a suite configures
            arms = {a.name: aggregate_facts(kept.facts_in_order(a.name)) for a in suite.arms}
            metrics, contrasts = suite_claims(suite.config, results, plan.root)  # suites.S.metrics, .contrasts
            suites[suite.name] = SuiteResult(
                regime=suite.regime,
                target=with_reported_model(suite.target_snapshot, suite.config),  # a Python product's own model
                dataset=DatasetInfo(
                    path=suite.dataset_display, sha256=self.dataset_sha(suite), cases=len(suite.cases)
                ),
                aggregate=aggregate_facts(kept.facts_in_order()),
                arms=arms,
                baseline_arm=suite.arms[0].name if suite.arms else None,
                details=suite.details, metrics=metrics, contrasts=contrasts,
                sweep=_sweep(suite, results),
            )
        run = Run(
            run_id=plan.run_id, label=plan.label, status=status,  # type: ignore[arg-type]
            status_reason=reason, started_at=self.started_at,
            finished_at=stamp if status == "complete" else None,  # finished_at means "completed"
            stopped_at=None if status == "complete" else stamp,
            git=self._git_info(), environment=environment_info(), config=plan.config_snapshot,
            seed=plan.seed, derived_from=plan.derived_from,
            limits=_limits(plan.services.limits), suites=suites, rounds=list(plan.rounds),
        )
        run.summary = summarize(run)
        return run

    def ask_git(self) -> None:
        """Ask for the git state in the background (three subprocesses), once: when the first
        suite's workers have all started their first cases, not while they do (the
        subprocesses and their thread take CPU the first cases need); for worker processes,
        once they are forked (`procs.run_in_processes`), never before: a fork while git's
        pipes are open would leave the worker holding them, and the answer waiting on it.
        `_git_info` asks at the end if no suite got that far."""
        if self.plan.git is None and self._git is None:
            git_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalh-git")
            self._git = git_pool.submit(git_info, self.plan.root)
            git_pool.shutdown(wait=False)

    def _git_info(self) -> GitInfo:
        if self.plan.git is not None:
            return self.plan.git
        if self._git is None:
            return git_info(self.plan.root)
        try:
            return self._git.result(timeout=30)
        except Exception:
            return GitInfo()

    async def run(self) -> Run:
        """Every suite of the plan, then the run document (see the module docstring)."""
        # Sync targets run in the loop's default executor (evalh.handoff.in_thread): a thread per
        # call in flight (bounded by --concurrency), or one shared thread for a function found
        # cheap; a call that hangs past its timeout holds neither the next cases nor the
        # process's exit (evalh.core.run.workers).
        asyncio.get_running_loop().set_default_executor(DaemonExecutor("evalh-target"))
        header = {
            "run_id": self.plan.run_id, "label": self.plan.label, "seed": self.plan.seed,
            "started_at": self.started_at, "config": self.plan.config_snapshot,
            "suites": [s.name for s in self.plan.suites],
            "derived_from": self.plan.derived_from.model_dump() if self.plan.derived_from else None,
            "datasets": {s.name: self.dataset_sha(s) for s in self.plan.suites},
            "options": self.plan.options,
        }
        # A judge grading its own model is known from the plan: refused before anything is
        # written, whichever suite it is in (exit 2, nothing half-written).
        for suite in self.plan.suites:
            for scorer in suite.scorers:
                guard = scorer.guard_self_judge  # a Scorer hook (no-op default)
                if guard is not None:
                    guard(suite, self.plan.services)
        journal_is_new = not self.journal.path.exists()
        self.journal.open(header)
        self.plan.services.journal = self.journal  # batch clients note their batches there
        saved_env = {k: os.environ.get(k) for k in ("EVALH_RUN_ID", "EVALH_CASE_ID")}
        self.observer.on_start(self.plan)
        rng = random.Random(self.plan.seed)
        status, reason = "complete", None
        refused_before_any_case = False
        try:
            self._carry(not journal_is_new)
            for suite in self.plan.suites:
                await self.run_suite(suite, rng)
                if self.stop_reason:
                    break
            if self.stop_reason:
                status, reason = "partial", self.stop_reason
        except (asyncio.CancelledError, KeyboardInterrupt):
            status, reason = "partial", "interrupted"
            raise
        except BaseException as exc:  # a bug or a refusal mid-run: never written as complete
            err = error_info(exc)
            status, reason = "failed", f"{err.type}: {err.message}"
            # a refusal (a judge calibration below its threshold) before any case ran: nothing
            # ran, so nothing is written — exit 2 with its one line, as bad input is
            refused_before_any_case = (isinstance(exc, EvalhError) and exc.exit_code == 2
                                       and not self.kept_total)
            raise
        finally:
            _restore_env(saved_env)  # the ids belong to this run, not to the process after it
            self.journal.close()
            run = self.build_run(status, reason)
            if refused_before_any_case:
                if journal_is_new:  # a resumed run's journal is what it resumes from: kept
                    self.journal.path.unlink(missing_ok=True)
            elif not (status == "complete" and finish_from_journal(self.store, run, self.result_lines())):
                self.store.write(run, self.result_lines())  # the results streamed from the journal
            if status == "complete":
                self.journal.path.unlink(missing_ok=True)
            await _close_targets(self.plan)
            self.observer.on_finish(run)
        return run


def _sweep(suite: SuitePlan, results: StreamedResults) -> dict[str, Any] | None:
    """`suites.S.sweep`: the configured sweep's ranking (None without a `[suites.S.sweep]`
    table; the ranking's module is imported only for a suite that has one)."""
    if suite.config is None or suite.config.sweep is None:
        return None
    from evalh.core.analysis.sweep import suite_sweep

    return suite_sweep(suite.name, suite.config, results, suite.arms[0].name if suite.arms else None)


def _digest(data: bytes) -> bytes:
    import hashlib

    return hashlib.blake2b(data, digest_size=16).digest()


def _json(result: CaseResult) -> bytes:
    import orjson

    return orjson.dumps(result.model_dump(mode="json"))


def _restore_env(saved: dict[str, str | None]) -> None:
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def _limits(limits: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for name, lim in limits.items():
        describe: Callable[[], dict[str, Any]] | None = getattr(lim, "describe", None)
        out[name] = describe() if describe else lim
    return out


async def _close_targets(plan: RunPlan) -> None:
    for suite in plan.suites:
        for arm in suite.arms:
            if arm.source is not None:
                # closing must never hide the run's own outcome
                with contextlib.suppress(Exception):
                    await arm.source.aclose()
    if plan.services.providers:
        from evalh.providers.clients import close_providers

        await close_providers(plan.services)


