"""`evalh plugins`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import JsonOpt


@translate_errors
def plugins(
    builtins: Annotated[bool, typer.Option("--builtins", help="Also list the built-in scorer types, target kinds and providers.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """List the plugins installed packages register, by entry point group.

    Groups: `evalh.scorers`, `evalh.targets`, `evalh.providers`, `evalh.report_formats`
    (docs/plugins.md). Each line: kind, name, module, distribution and version, status
    (`loaded`; `shadowed` when a built-in has the name — the built-in wins; `invalid` when
    the entry point names no module). Nothing is imported: a plugin's module is imported
    when a config first names it.

    Examples:

        evalh plugins

        evalh plugins --builtins --json
    """
    from evalh import registry
    from evalh.console import out

    found = registry.load_plugins()
    rows = [{"kind": p.kind, "name": p.name, "module": p.module, "distribution": p.distribution,
             "version": p.version, "status": p.status} for p in found]
    if builtins:
        plugin_names = {(p.kind, p.name) for p in found if p.status == "loaded"}
        for kind, table in (("scorer", registry.SCORER_TYPES), ("target", registry.TARGET_KINDS),
                            ("provider", registry.PROVIDERS)):
            rows += [{"kind": kind, "name": name, "module": module, "distribution": "evalh",
                      "version": None, "status": "built-in"}
                     for name, module in sorted(table.items()) if (kind, name) not in plugin_names]
    if json_out:
        from evalh.jsonio import document_text

        out().file.write(document_text({"plugins": rows}))
        return
    if not rows:
        out().file.write("no plugins installed (entry point groups: "
                         + ", ".join(registry.GROUPS) + ")\n")
        return
    for r in rows:
        dist = f"{r['distribution']} {r['version']}" if r["version"] else (r["distribution"] or "?")
        out().file.write(f"{r['kind']:<14} {r['name']:<20} {r['module']:<36} {dist:<28} {r['status']}\n")
