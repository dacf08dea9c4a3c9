"""Prompt templates: Jinja2 in a sandbox, strict about missing variables.

A template sees `input` (the case's input), `case` (`case.id`, `case.metadata`), `attempt`
and `seed` (the attempt's, see evalh.core.run.shuffle), never
the case's `expected` (a template that could read the label would leak it to the model).
A missing variable is an error naming the template, not an empty string.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jinja2 import Template

    from evalh.models import Case


class TemplateError(ValueError):
    """A template that does not compile (at build) or does not render (for one case)."""


@lru_cache(maxsize=1)
def _env() -> Any:
    from jinja2 import StrictUndefined
    from jinja2.sandbox import SandboxedEnvironment

    return SandboxedEnvironment(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True
    )


def compile_template(source: str, name: str) -> Template:
    """Compile now, so a syntax error stops the run before anything is spent."""
    from jinja2 import TemplateSyntaxError

    try:
        return _env().from_string(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(f"template `{name}` line {exc.lineno}: {exc.message}") from None


def template_vars(case: Case) -> dict[str, Any]:
    """What a template may read. `expected` is deliberately absent. `input` is as presented
    (fields named in the suite's `shuffle` permuted for this attempt); `attempt` and `seed`
    are the attempt's (0 and None outside a run)."""
    from evalh.context import current

    ctx = current()
    return {
        "input": case.input,
        "case": {"id": case.id, "metadata": case.metadata.model_dump(mode="json")},
        "attempt": ctx.attempt if ctx is not None else 0,
        "seed": ctx.seed if ctx is not None else None,
    }


def render(template: Template, name: str, variables: dict[str, Any]) -> str:
    from jinja2 import TemplateError as JinjaError
    from jinja2.exceptions import SecurityError

    try:
        return template.render(variables)
    except SecurityError as exc:
        raise TemplateError(f"template `{name}`: unsafe operation refused: {exc}") from None
    except JinjaError as exc:
        raise TemplateError(f"template `{name}`: {exc.message or exc}") from None
