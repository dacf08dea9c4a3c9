"""The core: run, compare, judge again, analyse; statistics. Never imports typer or rich.

Rooms, top to bottom (each imports only those below it; pyproject's contracts): request; rejudge | generate; run; compare; analysis; results; stats.
"""
