"""Terminal rendering of everything but a `Report` (that is `evalh.report.render`): a run's
results table, the dry-run estimate, the progress bar, rejudge drift, a sweep's ranking,
label agreement and the list of runs. The cli commands call these; they import no rich.

Every string a run, a dataset or a model wrote reaches the terminal as `rich.text.Text`
through `evalh.console.safe_text` / `inert`: no markup is read, no control sequence passes.
"""
