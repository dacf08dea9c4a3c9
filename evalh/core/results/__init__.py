"""What results mean: aggregates with denominators, statuses, measured sizes, a run's summary.

May import stats only.
"""
