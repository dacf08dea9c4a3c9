"""`evalh ui`."""

from __future__ import annotations

from typing import Annotated

import typer

from evalh.cli.errors import translate_errors
from evalh.cli.options import ConfigOpt, RunsDirOpt


@translate_errors
def ui(
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free port).")] = 4023,
    host: Annotated[str, typer.Option("--host", metavar="HOST", help="Address to bind. Keep the default unless you mean to share every run.")] = "127.0.0.1",
    config: ConfigOpt = None,
    runs_dir: RunsDirOpt = None,
) -> None:
    """Serve a local dashboard of the runs directory: trends of pass rate, mean score,
    cost and latency across runs, the run history (BASELINE marked), a drill-down to every
    case (input, output, scores, judge verdicts, trace, error), and a run-vs-run view that
    shows exactly what `evalh compare` decides.

    Works offline (one self-contained page, no CDN). Binds 127.0.0.1 by default. Stop
    it with Ctrl-C.

    Examples:

        evalh ui

        evalh ui --port 8080 --runs-dir ci_runs/
    """
    from evalh.cli.project import open_project
    from evalh.console import err, warn
    from evalh.errors import EvalhError
    from evalh.ui.server import is_loopback, make_server

    root, store = open_project(config, runs_dir)
    try:
        server = make_server(store.runs_dir, root, host, port)
    except OSError as exc:
        raise EvalhError(f"cannot listen on {host}:{port}: {exc.strerror or exc} (pick another with --port)") from None
    if not is_loopback(host):
        warn(f"listening on {host}: anyone who can reach this address can read every run")
    from evalh.console import safe_text

    bound_host, bound_port = str(server.server_address[0]), server.server_address[1]
    shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
    err().print(safe_text(f"evalh dashboard on http://{shown}:{bound_port}/ serving {store.runs_dir} (Ctrl-C to stop)"))
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
