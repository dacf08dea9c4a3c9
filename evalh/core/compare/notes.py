"""What a comparison's renderers add when its base is the BASELINE marker: how many
baseline runs were pooled, and the measured noise floor per suite.

`Comparison` (schema `evalh.compare/2`) is the statistics' own model; these notes travel
beside it, built by `evalh.baseline.LoadedBaseline.notes`, and every renderer in
`evalh.report.compare_render` takes them as an optional argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evalh.core.compare.models import Comparison


@dataclass
class CompareNotes:
    header: list[str] = field(default_factory=list)
    """Lines shown under the `base → candidate` line (terminal, markdown)."""
    suites: dict[str, list[str]] = field(default_factory=dict)
    """Lines shown with each suite, by suite name (the noise floor)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Top-level keys added to the JSON document (`baseline_runs`, `baseline_noise`)."""


def comparison_doc(cmp: Comparison, notes: CompareNotes | None = None) -> dict[str, Any]:
    """The JSON form of `cmp` with the notes' keys added at the top level."""
    doc = cmp.to_dict()
    if notes is not None:
        doc.update(notes.extra)
    return doc
