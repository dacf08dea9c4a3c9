"""The core: runner, compare, stats. Never imports typer or rich."""
