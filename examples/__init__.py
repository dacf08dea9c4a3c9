"""A miniature LLM product's deterministic rails, used as evalh's example target.

- :mod:`examples.citecheck` — a sourcing gate: every figure and quote in an answer must
  appear in the source it cites (entry point ``examples.citecheck:check``).
- :mod:`examples.guards` — identifier canonicalization, impersonal tone, completeness and
  materiality rails behind one dispatcher (entry point ``examples.guards:run``).

Everything here is pure, deterministic and offline, so the shipped suites run anywhere.
"""
