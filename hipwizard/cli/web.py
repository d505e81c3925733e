"""``hipwizard --web``: the wizard served to a browser, locked the way Jupyter locks its server.

textual-serve's ``Server`` (an aiohttp app) starts one app process per websocket and types what the socket
sends into it: whoever opens ``/ws`` drives a program that writes files and launches compilers and training
runs. So every request passes one guard (``WebLock``) before any textual-serve handler sees it:

- **Host** must be the served address: the ``--host`` name and port, or, when serving on loopback, a loopback
  name of it (``localhost``, ``127.0.0.1``, ``[::1]``). A page on ``evil.example`` whose DNS answer is rebound
  to 127.0.0.1 sends ``Host: evil.example:PORT`` and is refused. Serving on a wildcard (``0.0.0.0``, ``::``),
  the machine's own names and IP literals are accepted too: a rebinding attack needs a name the attacker owns.
- **Origin**, when the browser sends one (it always does on a websocket), must be the origin of that same
  Host (``http://HOST:PORT``): a websocket opened by any other site's page is refused.
- **A token**, random per launch (``secrets.token_urlsafe``), printed as the URL to open
  (``http://127.0.0.1:8000/?token=...``), is required on the page (``/``), on the websocket (``/ws``) and on
  downloads, as ``?token=`` or as the cookie the page sets when it is served with the right token
  (HttpOnly, SameSite=Strict, named per port). textual.js builds the websocket URL by appending
  ``?width=..&height=..`` to the page's ``data-session-websocket-url``, so a query token cannot ride on that
  URL; the cookie carries it, as Jupyter's does, and ``/ws`` checks it.
- ``/static/`` (textual-serve's own xterm.js, CSS, fonts and images, the same bytes as in its public wheel)
  needs no token: it holds no state and performs no action; Host and Origin are still checked there.

Refusals are ``403`` with a one-line reason. Serving on an address that is not loopback is allowed, with a
warning on stderr; the token is required all the same. The step packages never import this module (nor
textual_serve): it is the web face.
"""

from __future__ import annotations

import asyncio
import ipaddress
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hipwizard.errors import UserError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARD_HOSTS = frozenset({"0.0.0.0", "::"})


def parse_port(text: str | int) -> int:
    """``--port``'s value as a TCP port (1-65535); ``UserError`` naming the value otherwise."""
    try:
        port = int(str(text).strip(), 10)
    except ValueError:
        raise UserError(f"--port {str(text)!r} is not a number (a TCP port, 1-65535)") from None
    if not 1 <= port <= 65535:
        raise UserError(f"--port {port} is out of range (a TCP port, 1-65535)")
    return port


def parse_host(text: str) -> str:
    """``--host``'s value, without the brackets an IPv6 literal may come in; ``UserError`` when empty."""
    host = text.strip()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or any(c.isspace() or c in "/?#@" for c in host):
        raise UserError(f"--host {text!r} is not a host name or address")
    return host


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback address (``localhost``, 127.0.0.0/8, ::1)."""
    name = host.lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return False  # an unresolvable name fails at bind, with its own line
    addresses = {str(info[4][0]).split("%")[0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a).is_loopback for a in addresses)


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _split_host_header(value: str) -> tuple[str, int] | None:
    """``Host: name[:port]`` as (lower-case name without brackets, port); ``None`` when malformed."""
    try:
        parts = urlsplit(f"http://{value}")
        name, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not name or parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    return name.rstrip("."), port if port is not None else 80


@dataclass(frozen=True)
class WebLock:
    """The served address and this launch's token; decides whether a request may pass."""

    host: str
    port: int
    token: str

    @property
    def cookie_name(self) -> str:
        return f"hipwizard-token-{self.port}"  # per port: cookies are not port-scoped, two servers must not share

    def accepted_names(self) -> frozenset[str]:
        bound = self.host.lower().rstrip(".")
        if bound in WILDCARD_HOSTS:
            own = {socket.gethostname().lower(), socket.getfqdn().lower()}
            return LOOPBACK_NAMES | {bound} | own
        if is_loopback(bound):
            return LOOPBACK_NAMES | {bound}
        return frozenset({bound})

    def host_ok(self, header: str | None) -> bool:
        """The Host header names this server: its port, and its name or a loopback name of it."""
        if not header:
            return False
        split = _split_host_header(header)
        if split is None:
            return False
        name, port = split
        if port != self.port:
            return False
        if name in self.accepted_names():
            return True
        if self.host.lower() in WILDCARD_HOSTS:
            try:
                ipaddress.ip_address(name)  # an IP literal cannot be rebound to another address
                return True
            except ValueError:
                return False
        return False

    def origin_ok(self, origin: str | None, host_header: str) -> bool:
        """No Origin (a plain navigation, curl), or exactly the origin of the (already accepted) Host."""
        if origin is None:
            return True
        try:
            parts = urlsplit(origin)
            name, port = parts.hostname, parts.port
        except ValueError:
            return False
        if parts.scheme != "http" or not name or parts.path not in ("", "/"):
            return False  # "null" (a sandboxed frame, a file: page) and every other scheme are refused
        return (name.rstrip("."), port if port is not None else 80) == _split_host_header(host_header)

    def token_ok(self, query_token: str | None, cookie_token: str | None) -> bool:
        for given in (query_token, cookie_token):
            if given and secrets.compare_digest(given.encode(), self.token.encode()):
                return True
        return False

    def refusal(self, request: Any) -> str | None:
        """Why ``request`` (an aiohttp request) is refused, or ``None`` when it may pass."""
        host_header = request.headers.get("Host")
        if not self.host_ok(host_header):
            return "this server answers only to its own address (Host refused)"
        if not self.origin_ok(request.headers.get("Origin"), host_header):
            return "requests from another site are refused (Origin refused)"
        if request.path.startswith("/static/"):
            return None
        if not self.token_ok(request.query.get("token"), request.cookies.get(self.cookie_name)):
            return "a token is required: open the URL `hipwizard --web` printed (it ends in ?token=...)"
        return None

    def urls(self) -> list[str]:
        """The URLs to print, token included: the bound name, or for a wildcard the loopback and own name."""
        query = f"/?token={self.token}"
        if self.host.lower() in WILDCARD_HOSTS:
            names = [DEFAULT_HOST if self.host == "0.0.0.0" else "::1", socket.gethostname()]
        else:
            names = [self.host]
        return [f"http://{_url_host(name)}:{self.port}{query}" for name in dict.fromkeys(names)]


def app_command(root: Path) -> str:
    """The shell command textual-serve starts per session: this interpreter, the app, the workspace."""
    return f"{shlex.quote(sys.executable)} -m hipwizard {shlex.quote(str(Path(root).absolute()))}"


def serve(root: Path, host: str, port: int) -> int:
    """Serve the wizard on ``root`` at ``host:port`` until Ctrl+C / SIGTERM; 0 then. ``UserError`` when the
    address cannot be listened on (in use, not this machine's, a privileged port)."""
    lock = WebLock(host=host, port=port, token=secrets.token_urlsafe(32))
    server = _locked_server(app_command(root), lock)
    asyncio.run(_run(server, lock, warn=not is_loopback(host)))
    return 0


def _locked_server(command: str, lock: WebLock):
    import aiohttp_jinja2
    import jinja2
    from aiohttp import web
    from textual_serve.server import Server

    class LockedServer(Server):
        """textual-serve's Server behind ``WebLock``, with a page whose URLs follow the (checked) Host."""

        async def _make_app(self) -> web.Application:
            @web.middleware
            async def guard(request: web.Request, handler: Callable[[web.Request], Awaitable[Any]]):
                reason = lock.refusal(request)
                if reason is not None:
                    raise web.HTTPForbidden(text=f"hipwizard: {reason}\n")
                return await handler(request)

            app = web.Application(middlewares=[guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes([
                web.get("/", self.handle_index, name="index"),
                web.get("/ws", self.handle_websocket, name="websocket"),
                web.get("/download/{key}", self.handle_download, name="download"),
                web.static("/static", self.statics_path, show_index=False, name="static"),
            ])
            return app

        async def handle_index(self, request: web.Request) -> web.StreamResponse:
            origin = f"http://{request.headers['Host']}"  # accepted by the guard: this server's own address
            context = {
                "font_size": min(max(_int(request.query.get("fontsize"), 16), 6), 64),
                "app_websocket_url": f"ws://{request.headers['Host']}/ws",
                "config": {"static": {"url": f"{origin}/static/"}},
                "application": {"name": self.title},
            }
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            response.set_cookie(lock.cookie_name, lock.token, path="/", httponly=True, samesite="Strict")
            response.headers["Cache-Control"] = "no-store"
            response.headers["Referrer-Policy"] = "no-referrer"  # the page's URL holds the token
            return response

    return LockedServer(command, host=lock.host, port=lock.port, title="hipwizard")


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default


async def _run(server: Any, lock: WebLock, *, warn: bool) -> None:
    from aiohttp import web

    runner = web.AppRunner(await server._make_app(), handle_signals=False, access_log=None,
                           shutdown_timeout=3)
    await runner.setup()
    try:
        site = web.TCPSite(runner, lock.host, lock.port)
        try:
            await site.start()
        except OSError as exc:
            reason = exc.strerror or str(exc)
            hint = " (another program, or another `hipwizard --web`: pick another --port)" \
                if "in use" in reason.lower() else ""
            raise UserError(f"cannot listen on {_url_host(lock.host)}:{lock.port}: {reason}{hint}") from None
        if warn:
            print(f"hipwizard: warning: --host {lock.host} is not a loopback address: anyone who can reach "
                  f"this machine on port {lock.port} reaches the page, and only the token keeps them out "
                  "(plain HTTP: it can be read on the network); share the URL with no one",
                  file=sys.stderr, flush=True)
        print("hipwizard: the wizard is served; open this URL in a browser (it holds this launch's token):",
              flush=True)
        for url in lock.urls():
            print(f"    {url}", flush=True)
        print("Press Ctrl+C to stop.", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):
                pass
        await stop.wait()
    finally:
        await runner.cleanup()
