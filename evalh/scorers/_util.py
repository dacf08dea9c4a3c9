"""Moved to `evalh.fields`; kept until `evalh.core.sweep` imports from there."""

from evalh.fields import MISSING as _MISSING
from evalh.fields import as_text, pick, short

__all__ = ["_MISSING", "as_text", "pick", "short"]
