"""`evalh mock-provider`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from evalh.cli.errors import translate_errors


@translate_errors
def mock_provider(
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, metavar="PORT", help="Port on 127.0.0.1 (0 picks a free one).")] = 8765,
    script: Annotated[
        Path | None,
        typer.Option("--script", metavar="FILE", help="Scripted replies: a JSON or TOML script file (default: every reply is 'ok').", dir_okay=False),
    ] = None,
    latency_ms: Annotated[float, typer.Option("--latency-ms", min=0, metavar="MS", help="Delay added to every reply, in milliseconds.")] = 0.0,
) -> None:
    """Serve a loopback mock of the Anthropic Messages and OpenAI chat-completions APIs.

    Replies follow the script (rules by prompt match, sequences, injected faults such as
    429 with retry-after, 500, 529, slow replies, dropped connections, malformed JSON,
    replies cut at max_tokens). Any non-empty key is accepted. Runs until Ctrl-C.

    Examples:

    \b
        evalh mock-provider --port 8765 --script datasets/scenarios.script.json
        ANTHROPIC_BASE_URL=http://127.0.0.1:8765 ANTHROPIC_API_KEY=any \\
            evalh run --suite live

    An `openai` target reaches it with base_url = "http://127.0.0.1:8765/v1".
    """
    from evalh.errors import EvalhError
    from evalh.mock.mock_provider import serve

    if script is not None and not script.is_file():
        raise EvalhError(f"{script}: script file not found")
    try:
        serve(port, script, latency_ms)
    except OSError as exc:
        raise EvalhError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
