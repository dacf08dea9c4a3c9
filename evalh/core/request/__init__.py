"""The whole `evalh run` request (generate cases, run the plan, resume, compare with
BASELINE), and `evalh import` (other tools' runs through the same runner).

May import every other room of the core.
"""
