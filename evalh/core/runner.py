"""The one runner core: plan → produce → score → save.

Every command that executes cases comes through `run_plan`. Per suite (cheapest first) it
expands the (case, arm, attempt) triples the plan does not carry already, shuffles them
with the run's seed, and runs them with a bounded number in flight: each arm's output
source (`evalh.targets.base.OutputSource`: a live target, or a stored run's outputs)
produces the output, the scorers score it. Sync targets run in a worker thread; each call
has a timeout (`evalh.core.sources.LiveSource`). A target that raises or times out gives an
`errored` result with the exception's type and message: never a pass, never dropped. Each
finished result is appended to the run's journal before anything else happens, and the run
document is written atomically at the end — also when the run stops early (budget,
interrupt), then as `partial` with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from evalh.context import CaseContext, case_scope
from evalh.core.aggregate import aggregate
from evalh.core.contrasts import suite_claims
from evalh.core.outcome import decide_status, summarize
from evalh.core.plan import ArmPlan, RunPlan, SuitePlan
from evalh.core.requirements import FirstReply
from evalh.core.sizes import measure
from evalh.core.sources import error_info
from evalh.core.workers import DaemonExecutor
from evalh.errors import BudgetExceeded, EvalhError, WriteFailed
from evalh.gcpause import FreezeWindow, NoWindow, kept_off_the_books
from evalh.models import (
    Case,
    CaseResult,
    DatasetInfo,
    ErrorInfo,
    GitInfo,
    Run,
    Score,
    SuiteResult,
    sha256_of,
)
from evalh.provenance import environment_info, git_info
from evalh.redact import scrub_value, secret_env_values
from evalh.store import RunLock, RunStore, now_iso
from evalh.targets.base import CallContext, Produced, TargetOutput
from evalh.targets.python_callable import with_reported_model

if TYPE_CHECKING:
    from evalh.scorers.base import Scorer


class Observer(Protocol):
    """What the runner tells the outside world (the CLI draws a progress bar from it)."""

    def on_start(self, plan: RunPlan) -> None: ...
    def on_suite(self, suite: SuitePlan, todo: int) -> None: ...
    def on_result(self, suite: SuitePlan, result: CaseResult) -> None: ...
    def on_finish(self, run: Run) -> None: ...


class NullObserver:
    def on_start(self, plan: RunPlan) -> None: ...
    def on_suite(self, suite: SuitePlan, todo: int) -> None: ...
    def on_result(self, suite: SuitePlan, result: CaseResult) -> None: ...
    def on_finish(self, run: Run) -> None: ...


@dataclass(frozen=True)
class WorkItem:
    case: Case
    arm: ArmPlan
    attempt: int


class Runner:
    def __init__(self, plan: RunPlan, store: RunStore, observer: Observer | None = None) -> None:
        self.plan = plan
        self.store = store
        self.observer = observer or NullObserver()
        # Results already there are the run's as they are; only the others are run.
        self.results: dict[str, list[CaseResult]] = {s.name: [] for s in plan.suites}
        for suite_name, carried in plan.carried.items():
            self.results.setdefault(suite_name, []).extend(carried)
        self.stop_reason: str | None = None
        self.started_at = plan.started_at or now_iso()
        self.journal = store.journal(plan.run_id)
        # Computed once: a Case's digest and a Dataset's sha256 are recomputed on each access.
        self._case_facts: dict[int, tuple[str, dict[str, Any]]] = {}
        self._dataset_sha: dict[str, str] = {}
        self._git: Future[GitInfo] | None = None
        self._secrets: list[str] | None = None  # the environment's, read at the first result
        self._first_reply = FirstReply()
        self.gc_window: FreezeWindow = NoWindow()

    def _facts(self, case: Case) -> tuple[str, dict[str, Any]]:
        facts = self._case_facts.get(id(case))
        if facts is None:
            facts = (case.digest, case.metadata.model_dump(mode="json", exclude_none=True))
            self._case_facts[id(case)] = facts
        return facts

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
            except Exception as exc:
                err = error_info(exc)
                scores.append(
                    Score(scorer=scorer.config.display_name, error=f"{err.type}: {err.message}")
                )
        return scores

    async def run_item(self, suite: SuitePlan, item: WorkItem) -> CaseResult:
        """One (case, arm, attempt): its output from the arm's source, scored. What the
        output cost is charged to the run's budget unless it was cached or recorded before."""
        from evalh.core.shuffle import present

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
        if not result.cached and not produced.recorded:
            self.plan.services.budget.charge(
                cost_usd=result.cost_usd, tokens_in=result.tokens_in, tokens_out=result.tokens_out
            )
        return result

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
        output = scrub_value(out.output, env=self._secrets)
        return CaseResult(
            status=status, score=score, scores=scores, output=output,
            output_sha256=sha256_of(output), trace=out.trace,
            tokens_in=out.tokens_in, tokens_out=out.tokens_out,
            cost_usd=0.0 if out.cached else cost, cached=out.cached, truncated=out.truncated,
            error=error, measured=measure(output, out.tokens_out), **base,
        )

    # ------------------------------------------------------------------ one suite

    def _items(self, suite: SuitePlan, rng: random.Random) -> list[WorkItem]:
        done = {(r.case_id, r.arm, r.attempt) for r in self.results.get(suite.name, [])}
        items = [
            WorkItem(case, arm, attempt)
            for case in suite.cases
            for arm in suite.arms
            for attempt in range(suite.repeats)
            if (case.id, arm.name, attempt) not in done
        ]
        rng.shuffle(items)
        return items

    def _record(self, suite: SuitePlan, result: CaseResult) -> None:
        self.journal.append(suite.name, result)
        self.results[suite.name].append(result)
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
        results = self.results[suite.name]
        before = [_scores_json(r) for r in results]
        try:
            await self._finalize_each(suite, finalizing)
        finally:
            # what finalizing wrote into the results (a pairwise judge's pairs) is journaled
            # too: a run killed later resumes with it instead of paying for it again
            for result, was in zip(results, before, strict=True):
                if _scores_json(result) != was:
                    self.journal.append(suite.name, result)

    async def _finalize_each(self, suite: SuitePlan, scorers: list[Scorer]) -> None:
        for scorer in scorers:
            try:
                info = await scorer.finalize(suite, self.results[suite.name], self.plan.services)
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
            from evalh.core.procs import run_in_processes

            if await run_in_processes(self, suite, items):  # False: it runs in this process
                if not self.stop_reason:
                    await self._finalize_scorers(suite)
                return
        queue: asyncio.Queue[WorkItem] = asyncio.Queue()
        for item in items:
            queue.put_nowait(item)

        async def worker() -> None:
            while not self.stop_reason:
                try:
                    item = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                reason = self.plan.services.budget.exhausted()
                if reason:
                    self.stop_reason = reason
                    return
                self._record(suite, await self.run_item(suite, item))

        workers = [asyncio.create_task(worker()) for _ in range(min(suite.concurrency, len(items)) or 1)]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
        if not self.stop_reason:
            await self._finalize_scorers(suite)

    # ------------------------------------------------------------------ the run

    def build_run(self, status: str, reason: str | None) -> Run:
        from evalh.core.sweep import suite_sweep  # suites.S.sweep: the configured sweep's ranking

        plan = self.plan
        suites: dict[str, SuiteResult] = {}
        for suite in plan.suites:
            order = {c.id: i for i, c in enumerate(suite.cases)}
            results = sorted(
                self.results.get(suite.name, []),
                key=lambda r: (order.get(r.case_id, 0), r.arm, r.attempt),
            )
            arms = {a.name: aggregate(r for r in results if r.arm == a.name) for a in suite.arms}
            metrics, contrasts = suite_claims(suite.config, results, plan.root)  # suites.S.metrics, .contrasts
            suites[suite.name] = SuiteResult(
                regime=suite.regime,
                target=with_reported_model(suite.target_snapshot, suite.config),  # a Python product's own model
                dataset=DatasetInfo(
                    path=suite.dataset_display, sha256=self.dataset_sha(suite), cases=len(suite.cases)
                ),
                aggregate=aggregate(results),
                arms=arms,
                baseline_arm=suite.arms[0].name if suite.arms else None,
                details=suite.details, metrics=metrics, contrasts=contrasts,
                sweep=suite_sweep(suite.name, suite.config, results, suite.arms[0].name if suite.arms else None),
                cases=results,
            )
        run = Run(
            run_id=plan.run_id, label=plan.label, status=status,  # type: ignore[arg-type]
            status_reason=reason, started_at=self.started_at, finished_at=now_iso(),
            git=self._git_info(), environment=environment_info(), config=plan.config_snapshot,
            seed=plan.seed, derived_from=plan.derived_from,
            limits=_limits(plan.services.limits), suites=suites,
        )
        run.summary = summarize(run)
        return run

    def _git_info(self) -> GitInfo:
        if self._git is None:
            return git_info(self.plan.root)
        try:
            return self._git.result(timeout=30)
        except Exception:
            return GitInfo()

    async def run(self) -> Run:
        """Every suite of the plan, then the run document (see the module docstring)."""
        # git state is asked in the background (three subprocesses) while the cases run.
        git_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="evalh-git")
        self._git = git_pool.submit(git_info, self.plan.root)
        git_pool.shutdown(wait=False)
        # Sync targets run in the loop's default executor (asyncio.to_thread): one thread per
        # call in flight (bounded by --concurrency), and a call that hangs past its timeout
        # holds neither the next cases nor the process's exit (evalh.core.workers).
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
                                       and not any(self.results.values()))
            raise
        finally:
            _restore_env(saved_env)  # the ids belong to this run, not to the process after it
            self.journal.close()
            run = self.build_run(status, reason)
            if refused_before_any_case:
                if journal_is_new:  # a resumed run's journal is what it resumes from: kept
                    self.journal.path.unlink(missing_ok=True)
            else:
                self.store.write(run)
            if status == "complete":
                self.journal.path.unlink(missing_ok=True)
            await _close_targets(self.plan)
            self.observer.on_finish(run)
        return run


def _scores_json(result: CaseResult) -> bytes:
    import orjson

    return orjson.dumps([s.model_dump(mode="json") for s in result.scores])


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


class RunInterrupted(EvalhError):
    """Ctrl-C or SIGTERM stopped the run; its partial document and journal were kept."""

    exit_code = 130


@contextlib.contextmanager
def _cancel_on_sigterm() -> Iterator[None]:
    """SIGTERM cancels the run like Ctrl-C does, so the partial document gets written."""
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    try:
        assert task is not None
        loop.add_signal_handler(signal.SIGTERM, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread; Windows
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def run_plan(plan: RunPlan, store: RunStore, observer: Observer | None = None, *,
             lock: RunLock | None = None) -> Run:
    """Execute a plan to completion (or to its budget) and return the written run: the one
    entry of the runner, for `evalh run`, `--resume` and `evalh rejudge` alike.

    The run's lock is held throughout (`lock`, when preparing took it already — a resume
    reads its record under it —, else taken here): a second process resuming the run is
    refused. What finished or dead runs left in the runs directory is removed first. Ctrl-C
    or SIGTERM writes the run as `partial` (reason `interrupted`), keeps its journal and
    raises `RunInterrupted` (exit 130) saying how to resume. A write the OS refuses
    (`WriteFailed`, exit 4) says how to finish the run once the disk has room again.
    """
    lock = lock or store.lock(plan.run_id)
    try:
        store.sweep(own=plan.run_id)
        try:
            return _run_to_the_end(plan, store, observer)
        except WriteFailed as exc:
            journal = store.journal_path(plan.run_id)
            if not journal.is_file() or plan.derived_from is not None:  # only `evalh run` resumes
                raise
            raise WriteFailed(
                f"{exc.message}; the journal {journal} is kept: free space, then finish the run "
                f"with: evalh run --resume {plan.run_id}", exit_code=exc.exit_code,
            ) from None
    finally:
        lock.release()


def _run_to_the_end(plan: RunPlan, store: RunStore, observer: Observer | None) -> Run:
    runner = Runner(plan, store, observer)
    done: list[Run] = []

    async def main() -> None:
        # Returns nothing on purpose: on Python 3.11 asyncio.run reprs the finished main
        # task when it restores the SIGINT handler, and a Run of 10,000 results takes
        # seconds to repr.
        with _cancel_on_sigterm():
            done.append(await runner.run())

    # Imports, config and plan, then the results as they come: full collections during the
    # run skip them (evalh.gcpause; not when a host froze its own objects already).
    try:
        with kept_off_the_books() as runner.gc_window:
            asyncio.run(main())
    except (asyncio.CancelledError, KeyboardInterrupt):
        kept = sum(len(r) for r in runner.results.values())
        raise RunInterrupted(
            f"interrupted: run {plan.run_id} written as partial ({kept} of {plan.total} "
            f"results kept); finish it with: evalh run --resume {plan.run_id}"
        ) from None
    return done[0]
