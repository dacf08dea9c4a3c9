"""Pure statistics: intervals, paired tests, family-wise control, agreement.

Imports nothing else of evalh.core.
"""
