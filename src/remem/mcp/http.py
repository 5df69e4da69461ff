"""``remem serve``: the MCP tools over Streamable HTTP at ``/mcp``, every call pinned by its token.

One process serves many clients on one warm ``Memories`` (``Service``), with the SDK's own
Streamable HTTP transport, stateless (every request stands alone: a client may talk to any of several
servers of one PostgreSQL store, and a restarted server serves it on). In front of ``/mcp`` sits
``RequireToken``: a request without a bearer token the store knows gets a bare 401 — the same for
no token, a wrong one and a revoked one — and one with a token is served within that token's pin
(``Scope.of_token``). Tokens are read from the store on every request (``Tokens.verify``: every stored
hash compared, in constant time), so a token revoked by any process is refused on its next request.
``GET /healthz`` says whether the server is up, its store readable (503 with the reason when it is
not) and its model loaded; it needs no token and says nothing about the memories. The token never
reaches a log. Connections are bounded and timed (``connections``).

The SDK, starlette and uvicorn are imported here (the ``mcp`` extra), only when a server runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import socket
import ssl
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import uvicorn
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

import remem
from remem.errors import InvalidInputError, RememError, StoreError
from remem.mcp.connections import Survive, guarded
from remem.mcp.limits import Limits

if TYPE_CHECKING:
    from remem.mcp.server import RememServer

#: The path of the MCP endpoint, and of the health check.
MCP_PATH, HEALTH_PATH = "/mcp", "/healthz"
#: How long a stop (SIGTERM) waits for the requests under way before it cancels them.
GRACEFUL_SECONDS = 30.0
#: The answer to a request without a token the store knows: the same, whatever was wrong.
UNAUTHORIZED = {"error": "unauthorized"}
#: How many connections at once, and how long a request may take to arrive, unless told.
DEFAULT_LIMITS = Limits()
#: How to make the first token.
ADD_A_TOKEN = "remem token add --user NAME"


class Caller(AuthenticatedUser):
    """The authenticated user of a request: its token (``remem_token``, never the secret). The SDK
    binds a session to it; ``RememServer.scope_for`` reads the pin from it."""

    def __init__(self, token: remem.Token) -> None:
        """The caller holding ``token``."""
        super().__init__(AccessToken(token=f"remem-token:{token.name}", client_id=token.name, scopes=[]))
        self.remem_token = token


class RequireToken:
    """ASGI middleware: ``/mcp`` only for a request with a bearer token ``verify`` knows (401
    otherwise, with no detail; 503 while the store cannot be read), and only a POST (405 otherwise:
    the server is stateless, so a GET would open an event stream that never carries anything and a
    DELETE would end no session); other paths pass through."""

    def __init__(self, app: ASGIApp, verify: Callable[[str], Awaitable[remem.Token | None]]) -> None:
        """Guard ``app``; ``verify(secret)`` is the token of a secret, or None."""
        self.app = app
        self.verify = verify

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, or refuse it."""
        if scope["type"] != "http" or scope["path"].rstrip("/") != MCP_PATH:
            await self.app(scope, receive, send)
            return
        scheme, _, secret = Headers(scope=scope).get("authorization", "").partition(" ")
        try:
            token = await self.verify(secret.strip()) if scheme.lower() == "bearer" else None
        except StoreError:
            await JSONResponse({"error": "the store is unavailable"}, status_code=503)(scope, receive, send)
            return
        if token is None:
            refusal = JSONResponse(UNAUTHORIZED, status_code=401, headers={"WWW-Authenticate": "Bearer"})
            await refusal(scope, receive, send)
            return
        if scope["method"] != "POST":  # stateless: no stream to open (GET) and no session to end (DELETE)
            refusal = JSONResponse({"error": "POST only"}, status_code=405, headers={"Allow": "POST"})
            await refusal(scope, receive, send)
            return
        scope["user"] = Caller(token)
        await self.app(scope, receive, send)


def build_app(server: RememServer, code: str | None = None, *, page: bool = True) -> ASGIApp:
    """The ASGI application of ``server``: ``/mcp`` behind ``RequireToken``, ``/healthz``, and the
    page (``remem.web``: sign in with a token, or once with ``code``) at every other path (without
    ``page``: none, every other path is 404; ``bench/page.py`` compares the two).

    The SDK's DNS-rebinding check (of Host and Origin) is off: it protects a local server that
    answers without credentials from web pages, and every request here needs a bearer token that a
    page cannot have; behind a reverse proxy the Host is the proxy's name."""
    service = server.service
    server.token_required = True

    async def health(request: Request) -> Response:
        try:
            await anyio.to_thread.run_sync(lambda: service.run(lambda memories: memories.tokens.list()))
        except StoreError as exc:
            down = {"status": "unavailable", "reason": " ".join(str(exc).split())}
            return JSONResponse({**down, "version": remem.__version__}, status_code=503)
        return JSONResponse({"status": "ok", "model": _model_state(server), "version": remem.__version__})

    server.custom_route(HEALTH_PATH, methods=["GET"])(health)
    app = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    async def verify(secret: str) -> remem.Token | None:
        check = lambda memories: memories.tokens.verify(secret)  # noqa: E731
        return await anyio.to_thread.run_sync(lambda: service.run(check))

    if not page:
        return RequireToken(app, verify)
    from remem.web.app import build  # noqa: PLC0415 - Jinja2 only when a server runs

    return RequireToken(Split(app, build(service, code)), verify)


class Split:
    """ASGI: ``/mcp``, ``/healthz`` and the lifespan to the MCP application, every other path to
    the page (``remem.web``), in the same process, on the same store."""

    def __init__(self, mcp: ASGIApp, page: ASGIApp) -> None:
        """Route between ``mcp`` and ``page``."""
        self.mcp, self.page = mcp, page

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Hand the request to the application of its path."""
        path = scope.get("path", "").rstrip("/")
        to_mcp = scope["type"] == "lifespan" or path in (MCP_PATH, HEALTH_PATH)
        await (self.mcp if to_mcp else self.page)(scope, receive, send)


def _model_state(server: RememServer) -> str:
    """``ready``, ``loading``, or ``unavailable`` (searches use the keyword lane)."""
    service = server.service
    if service.ready:
        return "ready"
    return "unavailable" if service.failure is not None else "loading"


@dataclass(frozen=True)
class Listener:
    """Where a server listens: address, port (0: any free one) and, for HTTPS, its certificate."""

    host: str = "127.0.0.1"
    port: int = 8765
    tls_cert: Path | None = None
    tls_key: Path | None = None
    insecure_http: bool = False
    tls_key_password_file: Path | None = field(default=None, repr=False)
    #: The proxies whose ``X-Forwarded-Proto``/``-For`` are believed (addresses or networks; ``*``:
    #: any); none by default, so no client makes the page think it was reached over HTTPS.
    forwarded_allow_ips: tuple[str, ...] = ()

    @property
    def loopback(self) -> bool:
        """Whether only this machine can reach the address."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host.strip("[]")).is_loopback
        except ValueError:
            return False

    def check(self) -> str | None:
        """InvalidInputError for an unsafe or incomplete set-up; a warning to print, or None."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise InvalidInputError(
                "HTTPS needs both tls_cert and tls_key", parameter="tls_cert", mentions=("tls_key",)
            )
        for address in self.forwarded_allow_ips:
            if address != "*" and not _is_network(address):
                raise InvalidInputError(
                    f"forwarded_allow_ips: {address!r} is not an IP address or network (or *)",
                    parameter="forwarded_allow_ips",
                )
        if self.tls_cert is not None or self.loopback:
            return None
        if not self.insecure_http:
            raise InvalidInputError(
                f"{self.host} is reachable from other machines: serve HTTPS (tls_cert and tls_key), or put "
                "a TLS proxy in front and pass insecure_http",
                parameter="host",
                mentions=("tls_cert", "tls_key", "insecure_http"),
            )
        return (
            f"serving plain HTTP on {self.host}: bearer tokens and memories cross the network unencrypted "
            "unless a TLS proxy is in front"
        )

    def bind(self) -> socket.socket:
        """The listening socket (UsageError when the address cannot be had)."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        # IPPROTO_TCP, not 0: asyncio turns Nagle's algorithm off only on sockets that say they are
        # TCP, and with it on, every answer after the first on a kept-alive connection waited ~40 ms
        # for the client's delayed ACK.
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host.strip("[]"), self.port))
            sock.listen(2048)
        except OSError as exc:
            sock.close()
            raise RememError(f"cannot listen on {self.host} port {self.port}: {exc.strerror}") from None
        sock.set_inheritable(True)
        return sock

    def url(self, sock: socket.socket) -> str:
        """The URL of the MCP endpoint on ``sock``."""
        port = sock.getsockname()[1]
        host = f"[{self.host}]" if ":" in self.host and not self.host.startswith("[") else self.host
        return f"{'https' if self.tls_cert else 'http'}://{host}:{port}{MCP_PATH}"


def _is_network(address: str) -> bool:
    """Whether ``address`` is an IP address or network (``10.0.0.0/8``)."""
    try:
        ipaddress.ip_network(address, strict=False)
    except ValueError:
        return False
    return True


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by SIGTERM or SIGINT gracefully (the requests under way finish,
    new connections are refused) and then returning, not killing the process with the signal."""

    stopped_by: int | None = None

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Stop on SIGTERM/SIGINT (a second SIGINT: at once); the old handlers back afterwards."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        signals = (signal.SIGINT, signal.SIGTERM)
        before = {number: signal.signal(number, self._stop) for number in signals}
        try:
            yield
        finally:
            for number, handler in before.items():
                signal.signal(number, handler)

    def _stop(self, number: int, frame: Any) -> None:
        self.stopped_by = self.stopped_by or number
        self.handle_exit(number, frame)


class HttpServer:
    """A ``RememServer`` on HTTP(S): ready once made (the store opened, the address bound), then
    serving (``serve``) until ``stop()``, SIGTERM or SIGINT."""

    def __init__(
        self,
        server: RememServer,
        listener: Listener,
        *,
        limits: Limits = DEFAULT_LIMITS,
        note: Callable[[str], None] = lambda message: None,
        code: str | None = None,
        page: bool = True,
    ) -> None:
        """Open the store of ``server`` (its errors raise before anything listens) and bind
        ``listener``'s address, to serve within ``limits`` (``max_connections`` lowered below the
        descriptor limit); ``serve`` says on ``note`` where it listens (``remem serve:
        http://…/mcp``), and when the store has no token. With ``code`` (``remem ui``), the page's
        one-time sign-in URL is ``page_url`` and is said instead; without ``page``, only ``/mcp``
        and ``/healthz`` are served. InvalidInputError for an unsafe or incomplete set-up."""
        warning = listener.check()
        limits.check()
        password = _check_tls(listener)
        location, tokens = server.service.run(lambda memories: (memories.location, memories.tokens.list()))
        self.socket = listener.bind()
        #: The URL of the MCP endpoint (with the port the system gave when ``listener.port`` was 0).
        self.url = listener.url(self.socket)
        config = uvicorn.Config(
            build_app(server, code, page=page),
            log_level="warning",
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=int(GRACEFUL_SECONDS),
            server_header=False,
            ssl_certfile=listener.tls_cert,
            ssl_keyfile=listener.tls_key,
            ssl_keyfile_password=password,
            http=guarded(limits.fit(note)),
            ws="none",  # remem serves no WebSocket (an upgraded connection would stay on the request clock)
            # X-Forwarded-* only from the proxies named (uvicorn believed 127.0.0.1, or $FORWARDED_ALLOW_IPS)
            proxy_headers=bool(listener.forwarded_allow_ips),
            forwarded_allow_ips=list(listener.forwarded_allow_ips),
        )
        self._uvicorn = _Server(config)
        self._server = server
        self._note = note
        #: The page's address (with the one-time code's sign-in, when there is one).
        self.page_url = self.url.removesuffix(MCP_PATH) + ("/" if code is None else f"/signin?code={code}")
        self._said = _where(self.url, self.page_url, location, code, warning, len(tokens))

    def serve(self) -> int | None:
        """Serve until stopped (blocks): the signal that stopped it, or None. On the main thread,
        SIGTERM and SIGINT stop it gracefully from before it says where it listens (a supervisor
        may stop it as soon as it did): the requests under way are answered, new connections
        refused, then the store is closed."""
        with self._uvicorn.capture_signals():
            for line in self._said:
                self._note(line)
            self._server.answered.set()  # warm up at once: a server is started ahead of its clients
            asyncio.run(self._serve())
        return self._uvicorn.stopped_by

    async def _serve(self) -> None:
        asyncio.get_running_loop().set_exception_handler(Survive(self._note))
        await self._uvicorn.serve(sockets=[self.socket])

    def stop(self) -> None:
        """Stop serving, as SIGTERM does (from any thread)."""
        self._uvicorn.should_exit = True


def _where(
    url: str, page_url: str, location: str, code: str | None, warning: str | None, tokens: int
) -> list[str]:
    """What a server says when it starts serving: where it listens (the page's sign-in URL for
    ``remem ui``), an unencrypted address's ``warning``, a store without tokens."""
    if code is not None:
        return [f"remem ui: {page_url} ({location}; the code signs in once)"]
    plural = "token" if tokens == 1 else "tokens"
    said = [f"remem serve: {warning}"] if warning else []
    said.append(f"remem serve: {url} ({location}; {tokens} {plural})")
    if not tokens:
        said.append("remem serve: the store has no tokens yet, so every request is refused: " + ADD_A_TOKEN)
    return said


def _check_tls(listener: Listener) -> str | None:
    """The passphrase of the TLS key (read from ``tls_key_password_file``), or None; InvalidInputError,
    in one line, when the certificate and key do not load together. Never prompts: OpenSSL asks
    ``ask`` instead of the terminal, and only for an encrypted key."""
    if listener.tls_cert is None or listener.tls_key is None:
        return None
    password = _read_password(listener.tls_key_password_file)
    asked: list[bool] = []

    def ask() -> bytes:
        asked.append(True)
        return b"" if password is None else password.encode()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(str(listener.tls_cert), str(listener.tls_key), password=ask)
    except ssl.SSLError:  # OpenSSL's reasons ("[SSL] PEM lib (_ssl.c:3905)") say nothing actionable
        reason = "they are not a PEM certificate and its PEM private key"
        if asked and password is None:
            reason = "the key is encrypted: pass its passphrase in a file with tls_key_password_file"
        elif asked:
            reason = "the passphrase does not open the key"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    else:
        return password
    message = f"cannot load the TLS certificate and key: {reason}"
    mentions = ("tls_cert", "tls_key_password_file")
    raise InvalidInputError(message, parameter="tls_key", mentions=mentions) from None


def _read_password(path: Path | None) -> str | None:
    """The passphrase in ``path`` (its first line), or None without one."""
    if path is None:
        return None
    try:
        return path.read_text(encoding="utf-8").splitlines()[0] if path.stat().st_size else ""
    except (OSError, UnicodeError) as exc:
        reason = getattr(exc, "strerror", None) or "not UTF-8 text"
        message = f"cannot read tls_key_password_file: {reason}"
        raise InvalidInputError(message, parameter="tls_key_password_file") from None
