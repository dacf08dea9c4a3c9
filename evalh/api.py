"""evalh from Python: what the commands do, returning the typed objects they use.

    from evalh import api

    project = api.load_project()                 # evalh.toml found from the current directory
    outcome = project.run(suites=["smoke"])      # a RunOutcome: .run (evalh.models.Run), .code, .reasons
    api.assert_passed(outcome.run)               # AssertionError naming every case that did not pass
    base = project.load_run(project.run_ids()[0])
    comparison = project.compare(base, outcome.run)   # evalh.api.Comparison
    print(project.report([outcome.run], fmt="md"))

Everything here is what `evalh run`, `runs`, `show`, `compare` and `report` call: the same
validation (a bad config raises `evalh.errors.ConfigError`, whose message is the one line
the command would print), the same run documents in the same runs directory, the same exit
code in `RunOutcome.code`. Nothing prints unless asked (`progress=True`).

For the code evalh calls: `@api.inline` on a sync target or custom scorer function that
answers at once declares it cheap — evalh calls it on the event loop instead of handing it
to a worker thread (docs/running.md#concurrency-and-timeouts).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable

    from evalh.baseline import LoadedBaseline
    from evalh.config import Config
    from evalh.core.compare.models import Comparison
    from evalh.core.request.run_request import RunOutcome
    from evalh.models import CaseResult, Run
    from evalh.store import RunStore

REPORT_FORMATS = ("md", "json", "html", "table")

_F = TypeVar("_F")


def inline(fn: _F) -> _F:
    """Declare a sync target or custom scorer function cheap: evalh calls it on the event
    loop, as `inline = true` on a Python target does, without the hand-off to a worker
    thread and back (which costs more than a function that answers in microseconds). Only
    for functions that do not block: while one runs no other case moves, and a call past
    its case's timeout cannot be interrupted (it is recorded `errored` when it returns).
    No effect on an `async def` function, which runs on the loop anyway.

        from evalh.api import inline

        @inline
        def answer(inp):
            return {"label": RULES.get(inp["kind"], "other")}
    """
    from evalh.imports import INLINE_MARK

    try:
        setattr(fn, INLINE_MARK, True)
    except (AttributeError, TypeError):  # a builtin, a bound method: nothing to mark
        raise TypeError(f"@inline cannot mark {fn!r}: decorate the function where it is defined") from None
    return fn

_TYPES = {"Comparison": "evalh.core.compare.models", "RunOutcome": "evalh.core.request.run_request"}
"""The core's result types, importable from here (`from evalh.api import Comparison`) whatever
room of the core they live in; imported on first use."""


def __getattr__(name: str) -> object:
    if name in _TYPES:
        import importlib

        return getattr(importlib.import_module(_TYPES[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass
class Project:
    """A loaded evalh.toml with its run store (what every command opens first)."""

    config: Config
    store: RunStore

    @property
    def root(self) -> Path:
        return self.config.root

    def run(self, suites: list[str] | None = None, *, label: str | None = None,
            repeats: int | None = None, seed: int | None = None, concurrency: int | None = None,
            timeout_s: float | None = None, max_cost_usd: float | None = None,
            max_tokens: int | None = None, use_cache: bool = True, max_error_rate: float | None = None,
            compare_baseline: bool = False, progress: bool = False) -> RunOutcome:
        """`evalh run`: run suites (all that can run when None), write the run document,
        and return the outcome (`.run`, `.path`, `.code` as the command would exit,
        `.reasons`; `.comparison` with `compare_baseline`)."""
        from evalh.core.request.run_request import RunRequest, prepare_request, run_request

        request = RunRequest(
            suites=suites, label=label, repeats=repeats, seed=seed, concurrency=concurrency,
            timeout_s=timeout_s, max_cost_usd=max_cost_usd, max_tokens=max_tokens,
            no_cache=not use_cache, max_error_rate=max_error_rate, compare_baseline=compare_baseline,
        )
        prepared = prepare_request(self.config, request, self.store.runs_dir)
        observer = None
        if progress:
            from evalh.report.terminal.progress import ProgressObserver

            observer = ProgressObserver(enabled=True)
        load_reference: Callable[[], LoadedBaseline] | None = None
        if compare_baseline:
            from evalh.baseline import load_baseline

            def load_reference() -> LoadedBaseline:
                return load_baseline(self.root, self.store)

        return run_request(prepared, observer, load_reference=load_reference)

    def run_ids(self) -> list[str]:
        """Run ids in the store, oldest first (`evalh runs`)."""
        return self.store.list_ids()

    def load_run(self, ref: str | Path) -> Run:
        """A run by id or path (`evalh show`); `RunNotFound` / `RunDocumentError` otherwise."""
        return self.store.load(str(ref))

    def latest_run(self) -> Run:
        from evalh.errors import RunNotFound

        ids = self.run_ids()
        if not ids:
            raise RunNotFound(f"no runs in {self.store.runs_dir}")
        return self.load_run(ids[-1])

    def compare(self, base: Run | str | None = None, candidate: Run | str | None = None, *,
                pass_rate_drop: float | None = None, mean_score_drop: float | None = None,
                cost_increase_pct: float | None = None,
                latency_increase_pct: float | None = None, min_coverage: float | None = None,
                allow_removed_suites: list[str] | None = None) -> Comparison:
        """`evalh compare`: `base` defaults to the BASELINE run(s) (pooled per case),
        `candidate` to the newest run. `comparison.regressed` / `gate_exit_code` decide.
        `min_coverage` and `allow_removed_suites` are `--min-coverage` and
        `--allow-removed-suite`."""
        from evalh.core.compare.decide import ComparePolicy, compare_runs

        policy = ComparePolicy(pass_rate_drop=pass_rate_drop, mean_score_drop=mean_score_drop,
                               cost_increase_pct=cost_increase_pct,
                               latency_p50_increase_pct=latency_increase_pct, min_coverage=min_coverage,
                               allow_removed_suites=tuple(sorted(set(allow_removed_suites or []))))
        cand = self.latest_run() if candidate is None else (
            candidate if not isinstance(candidate, str) else self.load_run(candidate))
        if base is None:
            from evalh.baseline import load_baseline

            base_run = load_baseline(self.root, self.store).run
        else:
            base_run = base if not isinstance(base, str) else self.load_run(base)
        return compare_runs(base_run, cand, policy)

    def report(self, runs: list[Run] | None = None, *, by: list[str] | None = None,
               fmt: str = "md") -> str:
        """`evalh report`: the text of a report of `runs` (default: the newest) in `fmt`
        (md, json, html, table, or a format an installed plugin registers)."""
        from evalh.errors import EvalhError
        from evalh.report import build_report, to_html, to_json, to_markdown
        from evalh.report.build import versus_baseline
        from evalh.report.formats import known_formats, render_plugin

        known = [f for f in known_formats() if f != "markdown"]
        if fmt not in known:
            raise EvalhError(f"fmt: unknown report format {fmt!r} (known: {', '.join(known)})")
        runs = runs or [self.latest_run()]
        if fmt not in REPORT_FORMATS:
            if by:
                raise EvalhError(f"by: the plugin format {fmt} renders the runs itself")
            return render_plugin(fmt, runs)
        rep = build_report(runs, list(by or []), baseline=versus_baseline(runs, self.root, self.store))
        if fmt == "md":
            return to_markdown(rep)
        if fmt == "json":
            return to_json(rep)
        if fmt == "html":
            return to_html(rep)
        from evalh.report.render import terminal_text

        return terminal_text(rep)


def load_project(config: str | Path | None = None, *, runs_dir: str | Path | None = None) -> Project:
    """The project of `config` (default: evalh.toml found from the current directory
    upwards); its run store as the commands resolve it (`runs_dir`, $EVAL_RUNS_DIR,
    `[evalh] runs_dir`, `eval_runs/`)."""
    from evalh.config import load_config
    from evalh.store import RunStore, resolve_runs_dir

    cfg = load_config(config)
    directory = resolve_runs_dir(Path(runs_dir) if runs_dir is not None else None, cfg.root,
                                 cfg.settings.runs_dir)
    return Project(cfg, RunStore(directory))


def not_passed(run: Run, suites: list[str] | None = None) -> list[tuple[str, CaseResult]]:
    """(suite, result) of every result that did not pass — failed, errored, judge_error
    or skipped — in suite and case order."""
    out: list[tuple[str, CaseResult]] = []
    for name in sorted(run.suites):
        if suites is not None and name not in suites:
            continue
        out += [(name, r) for r in run.suites[name].cases if r.status != "passed"]
    return out


def describe(suite: str, result: CaseResult) -> str:
    """One line for a result that did not pass: where, what, and why (the scorers that
    failed it and their rationale, or the error)."""
    where = f"{suite}/{result.case_id}"
    if result.arm != "default":
        where += f"[{result.arm}]"
    if result.attempt:
        where += f"#{result.attempt}"
    if result.error is not None:
        why = f"{result.error.type}: {result.error.message}"
    else:
        parts = [f"{s.scorer}: {s.error or s.rationale or 'failed'}" for s in result.scores
                 if s.passed is False or s.error]
        why = "; ".join(parts) or ("no scorer passed it" if result.scores else "no scorers")
    return f"{where} {result.status}: {why}"


def assert_passed(run: Run, suites: list[str] | None = None) -> None:
    """Raise `AssertionError` naming every case of `run` (of `suites`) that did not pass
    and why, one a line; nothing when every case passed."""
    bad = not_passed(run, suites)
    if bad:
        lines = [describe(s, r) for s, r in bad]
        raise AssertionError(f"{len(bad)} case(s) did not pass in run {run.run_id}:\n  "
                             + "\n  ".join(lines))
