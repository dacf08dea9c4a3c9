"""`evalh plugins`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import JsonOpt


@translate_errors
def plugins(
    builtins: Annotated[bool, typer.Option("--builtins", help="Also list the built-in scorer types, target kinds, providers and report formats.")] = False,
    json_out: JsonOpt = False,
) -> None:
    """List the plugins installed packages register, by entry point group.

    Groups: `evalh.scorers`, `evalh.targets`, `evalh.providers`, `evalh.report_formats`
    (docs/plugins.md). Each line: kind, name, module, distribution and version, status
    (`loaded`; `shadowed` when a built-in has the name — the built-in wins; `invalid` when
    the entry point names no module). A provider is also listed as the model target kind it
    adds (module evalh.targets.model). Nothing is imported: a plugin's module is imported
    when a config first names it.

    Examples:

        evalh plugins

        evalh plugins --builtins --json
    """
    from evalh import registry
    from evalh.console import out

    found = registry.load_plugins()
    rows = []
    for p in found:
        rows.append({"kind": p.kind, "name": p.name, "module": p.module, "distribution": p.distribution,
                     "version": p.version, "status": p.status})
        if p.kind == "provider" and p.status == "loaded" and registry.TARGET_KINDS.get(p.name) == registry.MODEL_TARGET:
            rows.append({**rows[-1], "kind": "target", "module": registry.MODEL_TARGET})
    if builtins:
        plugin_names = {(r["kind"], r["name"]) for r in rows if r["status"] == "loaded"}
        from evalh.report.formats import BUILTIN

        formats = {name: "evalh.report" for name in BUILTIN}
        for kind, table in (("scorer", registry.SCORER_TYPES), ("target", registry.TARGET_KINDS),
                            ("provider", registry.PROVIDERS), ("report_format", formats)):
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
