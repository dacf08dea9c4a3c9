"""evalh in a pytest suite: the `evalh` fixture runs a suite and fails the test naming the
cases that did not pass.

    def test_every_label_holds(evalh):
        evalh.check("gate")          # runs the suite; fails with one line per failed case

Installed with evalh, this plugin is registered through the `pytest11` entry point, so
the fixture is there in any project that has evalh installed (`-p no:evalh` turns it off).
The project is the evalh.toml found from pytest's root directory upwards, or the one the
`evalh_config` ini option or `--evalh-config PATH` names. Each check writes its run
document into the project's runs directory, as `evalh run` does (`evalh_runs_dir` /
`--evalh-runs-dir` to put them elsewhere, e.g. a temporary directory).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from evalh.api import Project
    from evalh.models import Run


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("evalh")
    group.addoption("--evalh-config", default=None, metavar="PATH",
                    help="evalh.toml of the `evalh` fixture (default: found from the rootdir).")
    group.addoption("--evalh-runs-dir", default=None, metavar="DIR",
                    help="Where the `evalh` fixture writes its run documents.")
    parser.addini("evalh_config", "evalh.toml of the `evalh` fixture", default=None)
    parser.addini("evalh_runs_dir", "where the `evalh` fixture writes run documents", default=None)


class EvalhFixture:
    """What the `evalh` fixture gives a test."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._project: Project | None = None

    def _setting(self, name: str) -> str | None:
        value = self._config.getoption(f"--{name.replace('_', '-')}") or self._config.getini(name)
        return str(value) if value else None

    @property
    def project(self) -> Project:
        """The evalh project (loaded on first use)."""
        if self._project is None:
            from evalh import api
            from evalh.config import find_config
            from evalh.errors import EvalhError

            path = self._setting("evalh_config")
            try:
                config = Path(self._config.rootpath, path) if path else find_config(self._config.rootpath)
                self._project = api.load_project(config, runs_dir=self._setting("evalh_runs_dir"))
            except EvalhError as exc:
                pytest.fail(f"evalh: {exc.message}", pytrace=False)
        return self._project

    def run(self, *suites: str, **options: Any) -> Run:
        """Run `suites` (every suite when none) and return the run, passed or not.
        `options` are those of `evalh.api.Project.run` (label, repeats, seed, …)."""
        from evalh.errors import EvalhError

        try:
            outcome = self.project.run(list(suites) or None, **options)
        except EvalhError as exc:
            pytest.fail(f"evalh: {exc.message}", pytrace=False)
        assert outcome.run is not None
        return outcome.run

    def check(self, *suites: str, **options: Any) -> Run:
        """Run `suites` and fail the test naming every case that did not pass (failed,
        errored, judge_error, skipped) and why; the run when all passed."""
        from evalh.api import describe, not_passed

        run = self.run(*suites, **options)
        bad = not_passed(run)
        if bad:
            lines = "\n".join(f"  {describe(s, r)}" for s, r in bad)
            pytest.fail(f"evalh: {len(bad)} case(s) did not pass (run {run.run_id}):\n{lines}",
                        pytrace=False)
        return run


@pytest.fixture
def evalh(pytestconfig: pytest.Config) -> EvalhFixture:
    """Run evalh suites from a test: `evalh.check("suite")` fails naming failed cases."""
    return EvalhFixture(pytestconfig)
