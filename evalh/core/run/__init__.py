"""The run path: plan, prepare, requirements, estimate, runner, sources, workers and processes, resume, shard and merge.

May import compare, analysis, results, stats; never request, rejudge or generate.
"""
