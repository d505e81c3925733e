"""`hipwizard --web`'s lock (hipwizard/cli/web.py), by raw HTTP requests over a socket, where every header is
exactly what an attacker would send: a page from another site opening the websocket (Origin), a DNS-rebound
name (Host), no token or a wrong one, on the page and on the websocket. The browser side is in test_web.py."""

from __future__ import annotations

import base64
import os
import socket

import psutil
import pytest

from tests.test_web import web_server


def _request(port: int, path: str, headers: dict[str, str], *, websocket: bool = False) -> tuple[int, str]:
    """One raw GET to 127.0.0.1:PORT with exactly ``headers`` (Host included); (status, head + body start)."""
    lines = [f"GET {path} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.items())]
    if websocket:
        key = base64.b64encode(os.urandom(16)).decode()
        lines += ["Connection: Upgrade", "Upgrade: websocket", "Sec-WebSocket-Version: 13",
                  f"Sec-WebSocket-Key: {key}"]
    else:
        lines.append("Connection: close")
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        data = b""
        while b"\r\n\r\n" not in data or (not websocket and len(data) < 200):
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    head = data.decode("latin-1")
    return int(head.split(" ", 2)[1]), head


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("web-lock")
    with web_server(tmp / "ws", tmp / "server.log") as running:
        yield running


def _cases(port: int, token: str):
    own = f"127.0.0.1:{port}"
    origin = f"http://{own}"
    cookie = f"hipwizard-token-{port}={token}"
    q = f"?token={token}"
    return [
        # (what, path, headers, websocket, expected status)
        ("page, no token", "/", {"Host": own}, False, 403),
        ("page, wrong token", "/?token=" + "x" * len(token), {"Host": own}, False, 403),
        ("page, token prefix", "/?token=" + token[:-1], {"Host": own}, False, 403),
        ("page, token", "/" + q, {"Host": own}, False, 200),
        ("page, token, localhost", "/" + q, {"Host": f"localhost:{port}"}, False, 200),
        ("page, token, [::1]", "/" + q, {"Host": f"[::1]:{port}"}, False, 200),
        ("page, cookie only", "/", {"Host": own, "Cookie": cookie}, False, 200),
        ("page, token, rebound Host", "/" + q, {"Host": f"evil.example:{port}"}, False, 403),
        ("page, token, Host without port", "/" + q, {"Host": "127.0.0.1"}, False, 403),
        ("page, token, Host on another port", "/" + q, {"Host": f"127.0.0.1:{port + 1}"}, False, 403),
        ("page, token, Host with a fragment", "/" + q, {"Host": f"{own}#x"}, False, 403),
        ("page, token, Host with userinfo", "/" + q, {"Host": f"evil.example@{own}"}, False, 403),
        ("page, token, no Host", "/" + q, {}, False, (400, 403)),  # aiohttp refuses HTTP/1.1 with no Host itself
        ("page, token, foreign Origin", "/" + q, {"Host": own, "Origin": "http://evil.example"}, False, 403),
        ("ws, no token", "/ws", {"Host": own, "Origin": origin}, True, 403),
        ("ws, wrong token", "/ws?token=nope", {"Host": own, "Origin": origin}, True, 403),
        ("ws, wrong cookie", "/ws", {"Host": own, "Origin": origin, "Cookie": f"hipwizard-token-{port}=nope"},
         True, 403),
        ("ws, another port's cookie", "/ws", {"Host": own, "Origin": origin,
                                              "Cookie": f"hipwizard-token-{port + 1}={token}"}, True, 403),
        ("ws, token, cross-site Origin", "/ws" + q, {"Host": own, "Origin": "http://evil.example"}, True, 403),
        ("ws, token, cross-site Origin on our port", "/ws" + q,
         {"Host": own, "Origin": f"http://evil.example:{port}"}, True, 403),
        ("ws, token, Origin null", "/ws" + q, {"Host": own, "Origin": "null"}, True, 403),
        ("ws, token, https Origin", "/ws" + q, {"Host": own, "Origin": f"https://{own}"}, True, 403),
        ("ws, cookie, DNS rebinding", "/ws", {"Host": f"evil.example:{port}", "Origin": f"http://evil.example:{port}",
                                              "Cookie": cookie}, True, 403),
        ("download, no token", "/download/anything", {"Host": own}, False, 403),
        # Static assets (textual-serve's public xterm.js, CSS, fonts) need no token; Host still does.
        ("static, no token", "/static/js/textual.js", {"Host": own}, False, 200),
        ("static, rebound Host", "/static/js/textual.js", {"Host": f"evil.example:{port}"}, False, 403),
        ("static, folder listing", "/static/", {"Host": own}, False, 403),
    ]


def test_web_lock_refuses_every_request_without_the_token_or_from_elsewhere(served):
    cases = _cases(served.port, served.token)
    got = {what: _request(served.port, path, headers, websocket=ws)[0] for what, path, headers, ws, _ in cases}
    wrong = {what: (got[what], status) for what, _, _, _, status in cases
             if got[what] not in (status if isinstance(status, tuple) else (status,))}
    assert not wrong, f"(got, expected) per case: {wrong}"


def test_web_lock_refusals_say_why_in_one_line(served):
    status, head = _request(served.port, "/", {"Host": f"127.0.0.1:{served.port}"})
    assert status == 403 and "hipwizard: a token is required" in head
    status, head = _request(served.port, f"/?token={served.token}", {"Host": f"evil.example:{served.port}"})
    assert status == 403 and "Host refused" in head
    status, head = _request(served.port, f"/ws?token={served.token}",
                            {"Host": f"127.0.0.1:{served.port}", "Origin": "http://evil.example"}, websocket=True)
    assert status == 403 and "Origin refused" in head


def test_web_websocket_opens_with_the_token_from_the_page_origin(served):
    own = f"127.0.0.1:{served.port}"
    # The page served with the token sets the cookie the browser then sends on its websocket.
    status, head = _request(served.port, f"/?token={served.token}", {"Host": own})
    assert status == 200
    assert f"Set-Cookie: hipwizard-token-{served.port}={served.token};" in head
    assert "HttpOnly" in head and "SameSite=Strict" in head
    for extra in ({"Cookie": f"hipwizard-token-{served.port}={served.token}"}, {}):
        path = "/ws" if extra else f"/ws?token={served.token}"
        status, head = _request(served.port, path, {"Host": own, "Origin": f"http://{own}", **extra},
                                websocket=True)
        assert status == 101, head


def test_web_listens_on_loopback_only_by_default(served):
    listening = {c.laddr.ip for c in psutil.net_connections(kind="tcp")
                 if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == served.port}
    assert listening == {"127.0.0.1"}


def test_web_on_every_interface_warns_and_still_needs_the_token(tmp_path):
    with web_server(tmp_path / "ws", tmp_path / "server.log", "--host", "0.0.0.0") as open_server:
        assert "warning: --host 0.0.0.0 is not a loopback address" in open_server.stderr
        assert "warning" not in open_server.log.read_text()  # on stderr, not mixed into the URL lines
        own = f"127.0.0.1:{open_server.port}"
        assert _request(open_server.port, "/", {"Host": own})[0] == 403
        assert _request(open_server.port, f"/?token={open_server.token}", {"Host": own})[0] == 200
        assert _request(open_server.port, f"/?token={open_server.token}",
                        {"Host": f"evil.example:{open_server.port}"})[0] == 403
        assert _request(open_server.port, f"/ws?token={open_server.token}",
                        {"Host": own, "Origin": "http://evil.example"}, websocket=True)[0] == 403


def test_web_default_serving_is_quiet_on_stderr(served):
    assert "warning" not in served.stderr
