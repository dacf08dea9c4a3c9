"""Moved to `evalh.services` (the lowest layer, so targets, scorers and providers need not
import `evalh.core`). Kept for code written against the old path; evalh itself never imports
it (an import-linter contract says so)."""

from evalh.services import Budget, Price, RunServices

__all__ = ["Budget", "Price", "RunServices"]
