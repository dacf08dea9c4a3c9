"""`evalh validate`."""

from __future__ import annotations

from typing import Any

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, JsonOpt, QuietOpt


@translate_errors
def validate(config: ConfigOpt = None, json_out: JsonOpt = False, quiet: QuietOpt = False) -> None:
    """Check evalh.toml and every suite's dataset, target and scorers without running anything.

    Exit 0 when everything is valid; 2 with one line naming the file and line or key otherwise.

    Examples:

        evalh validate

        evalh validate --config ci/evalh.toml --json
    """
    from evalh.config import load_config
    from evalh.console import out
    from evalh.core.run.plan import build_suite_plan
    from evalh.core.run.requirements import check_cases

    cfg = load_config(config)
    from evalh.core.generate.generate import (
        for_validate,  # generating suites: corpus and templates, no call
    )

    cfg, _placeholders = for_validate(cfg)
    rows: list[dict[str, Any]] = []
    for suite in cfg.suites_in_order():
        missing = suite.missing_env()
        plan = build_suite_plan(cfg, suite, with_targets=not missing)
        check_cases(cfg, suite, plan.cases, plan.dataset.path)  # [suites.S.require] paths and schemas
        rows.append({
            "suite": suite.name, "regime": suite.regime, "cases": len(plan.cases),
            "dataset_sha256": plan.dataset.sha256, "arms": [a.name for a in plan.arms],
            "scorers": [s.config.display_name for s in plan.scorers], "needs_env": missing,
        })
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text({"config": str(cfg.path), "suites": rows}))
        return
    if quiet:  # the exit code is the result
        return
    from evalh.console import safe_text

    for r in rows:
        note = f"  (needs {', '.join(r['needs_env'])} to run)" if r["needs_env"] else ""
        out().print(safe_text(f"ok  {r['suite']:<12} {r['regime']:<13} {r['cases']:>5} cases  "
                         f"scorers: {', '.join(r['scorers']) or '–'}{note}"))
    typer.echo(f"{cfg.path}: valid ({len(rows)} suites)", err=True)
