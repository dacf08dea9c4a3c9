"""The comparison: facts read from run documents, metrics, pooled baselines, the noise floor, the decision and its exit code.

May import analysis, results, stats; never the run path.
"""
