"""Generated cases: a generator's calls, frozen datasets, placeholders for a dry run's estimate.

May import run, compare, analysis, results, stats.
"""
