"""Judging a finished run's stored outputs again (`evalh rejudge`), and the drift it measures.

May import run, compare, analysis, results, stats.
"""
