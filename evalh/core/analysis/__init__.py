"""Analyses over a finished run: classification, suite metrics, contrasts, field stats, sweeps.

May import results and stats only.
"""
