"""How evalh's `--help` reads: arguments and options by what they take, in words.

Typer prints an argument with its Python type (`RUN_ID <list[str]>`, a usage line of
`{RUN_ID}`) and an option without a metavar by its type (`--limit <int range>`). Every
evalh option names a metavar (`tests/test_cli_conventions.py` walks every command's help),
and `EvalhCommand` prints arguments the classic way: `RUN_ID` when required, `[RUN_ID]`
when optional, `RUN_ID...` when several are taken — in the usage line and in the
Arguments section alike.

(Typer carries its own copy of click, `typer._click`: contexts and formatters are typed
`Any` here rather than importing that private module.)
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

from evalh.cli.usage_errors import OneLineUsage


def _argument_name(param: Any) -> str:
    name = param.metavar or (param.name or "").upper()
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    return name


def _option_metavar(param: Any, ctx: Any) -> str:
    """A word for an option that names no metavar: its choices, FILE or DIR for a path,
    else its name (`--port PORT`)."""
    shown = str(param.display_type(ctx)).strip("<>")
    if "|" in shown:
        return f"[{shown.removeprefix('list[').removesuffix(']')}]"
    if shown in ("file", "dir", "path"):
        return shown.upper()
    return (param.name or "value").upper()


class EvalhCommand(OneLineUsage, TyperCommand):
    """A command whose help names arguments by their metavar alone (no Python type), and
    options by a word when they name no metavar; a mistake in its command line is one line
    (evalh.cli.usage_errors)."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = _argument_name(param)
                pieces.append(name if param.required else f"[{name}]")
            else:
                pieces.extend(param.get_usage_pieces(ctx))
        return pieces

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args: list[tuple[str, str]] = []
        opts: list[tuple[str, str]] = []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append((_argument_name(param), record[1]))
            else:
                if not getattr(param, "is_flag", False) and not getattr(param, "count", False) \
                        and param.metavar is None:
                    param.metavar = _option_metavar(param, ctx)
                    record = param.get_help_record(ctx) or record
                opts.append(record)
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        if opts:
            with formatter.section("Options"):
                formatter.write_dl(opts)


def use_evalh_help(app: Any) -> None:
    """Give every command of a Typer app (and of the apps added to it) `EvalhCommand`,
    unless it names its own class (a subclass of `TyperCommand`)."""
    for info in app.registered_commands:
        if info.cls is None or info.cls is TyperCommand:
            info.cls = EvalhCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            use_evalh_help(group.typer_instance)
