"""`evalh ui`: a local dashboard of a runs directory.

`make_server(runs_dir, root, host, port)` returns a bound `DashboardServer`
(stdlib `ThreadingHTTPServer`); `server.serve_forever()` serves it. The page is
`dashboard.html` with `dashboard.css` and `dashboard.js` inlined: one document, no CDN.
"""

from __future__ import annotations

from evalh.ui.server import DEFAULT_HOST, DEFAULT_PORT, DashboardServer, make_server

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "DashboardServer", "make_server"]
