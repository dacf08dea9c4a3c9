"""The whole `evalh run` request: generate cases, run the plan, resume, compare with BASELINE.

May import every other room of the core.
"""
