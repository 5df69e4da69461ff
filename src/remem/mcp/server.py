"""The MCP server: remem's tools on the SDK's ``MCPServer`` (mcp ≥ 2.3), bound to one ``Service``.

Imported only when a server is built (``remem mcp``, tests): it loads the SDK and pydantic. Every
failure a client can cause comes back as a tool error (``is_error``) with one line of text — remem's
own messages, and the argument checks in one line — never a traceback; the server keeps serving.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio.to_thread
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_REQUEST,
    CallToolResult,
    InputRequiredResult,
    ListToolsResult,
    PaginatedRequestParams,
    Tool,
    ToolAnnotations,
)
from pydantic import ValidationError

import remem
from remem.errors import RememError
from remem.mcp import reading, writing
from remem.mcp.schemas import FILTER_ARGUMENTS
from remem.mcp.scope import Scope
from remem.mcp.service import Service
from remem.mcp.stdio import serve_stdio

INSTRUCTIONS = (
    "remem is the user's long-term memory on this computer. Search it (memory_search, or "
    "memory_context for a prompt-ready digest) before answering questions that may depend on earlier "
    "conversations, decisions or preferences; remember durable facts with memory_add."
)

READS = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
ADDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
CHANGES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)

#: Who the writes of a server without tokens name (``remem mcp`` over stdio); a token's name its own.
STDIO_WRITER = "mcp"
#: The hidden argument through which the SDK hands a tool its request's context (and so its caller).
CONTEXT = "remem_context"
#: The tools in the order tools/list gives them, and whether they write (--read-only leaves those out).
TOOLS: tuple[tuple[Callable[..., Any], ToolAnnotations], ...] = (
    (reading.memory_search, READS),
    (reading.memory_context, READS),
    (reading.memory_get, READS),
    (reading.memory_list, READS),
    (writing.memory_add, ADDS),
    (writing.memory_edit, CHANGES),
    (writing.memory_forget, CHANGES),
)


class RememServer(MCPServer[None]):
    """An ``MCPServer`` serving one store through ``service``: every call within the pin of its
    caller (``scope_of``: the token it came with on ``remem serve``, else ``scope``)."""

    def __init__(self, service: Service, scope: Scope, *, warm_up: bool = True) -> None:
        """Serve ``service`` to callers pinned by ``scope`` (when no token pins them); with
        ``warm_up``, load the model in the background once running."""
        self.service = service
        self.scope = scope
        #: Set by ``remem serve``: a request that reaches a tool without a token is refused (never
        #: served within the server's own pin, which pins nothing), whatever route it came by.
        self.token_required = False
        self.warms_up = warm_up
        #: Set once the server has answered a request: the warm-up waits for it (start fast).
        self.answered = threading.Event()
        self._arguments: dict[str, frozenset[str]] = {}
        self._writers: set[str] = set()
        super().__init__(
            name="remem",
            version=remem.__version__,
            instructions=INSTRUCTIONS,
            lifespan=_lifespan,
            log_level="WARNING",
        )

    def add_remem_tool(self, function: Callable[..., Any], annotations: ToolAnnotations) -> None:
        """Offer ``function(service, scope, ...)`` as a tool named after it, its docstring the
        description; its caller's pinned arguments are left out per call (``tools_for``)."""
        tool = bind(function, self.service, self.scope_of)
        self._arguments[function.__name__] = frozenset(inspect.signature(tool).parameters) - {CONTEXT}
        if annotations is not READS:
            self._writers.add(function.__name__)
        description = " ".join((function.__doc__ or "").split())
        self.add_tool(
            tool,
            name=function.__name__,
            description=description,
            annotations=annotations,
            structured_output=True,
        )

    def scope_of(self, context: Context[None, Any] | None) -> Scope:
        """The pin of the caller of a tool call (``scope_for`` its request)."""
        has_request = context is not None and context._request_context is not None
        return self.scope_for(context.request_context.request if has_request else None)  # type: ignore[union-attr]

    def scope_for(self, request: object | None) -> Scope:
        """The pin of the caller of ``request``: its token's (``remem serve`` puts it in the HTTP
        request as its authenticated user), else the server's own."""
        user = None if request is None else getattr(request, "scope", {}).get("user")
        token = getattr(user, "remem_token", None)
        if token is None and self.token_required:
            raise ToolError("unauthorized")
        return self.scope if token is None else Scope.of_token(token)

    async def run_stdio_async(self) -> None:
        """Serve over stdin/stdout, every line answered (``remem.mcp.stdio``)."""
        await serve_stdio(self)

    async def _handle_list_tools(
        self, ctx: ServerRequestContext[None], params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        """The tools the caller of this request has (``tools_for`` its pin)."""
        try:
            scope = self.scope_for(ctx.request)
        except ToolError as refused:
            raise MCPError(code=INVALID_REQUEST, message=str(refused)) from None
        return ListToolsResult(tools=self.tools_for(scope, await self.list_tools()))

    def tools_for(self, scope: Scope, tools: list[Tool]) -> list[Tool]:
        """``tools`` as a caller pinned by ``scope`` has them: without the pinned arguments, and
        without the tools that write when it is read-only."""
        offered = []
        for tool in tools:
            if scope.read_only and tool.name in self._writers:
                continue
            schema = dict(tool.input_schema)
            properties = {k: v for k, v in schema.get("properties", {}).items() if k not in scope.pinned}
            schema["properties"] = properties
            if "required" in schema:
                schema["required"] = [name for name in schema["required"] if name not in scope.pinned]
            offered.append(tool.model_copy(update={"input_schema": schema}))
        return offered

    async def list_tools(self) -> list[Tool]:
        """The tools; answering starts the warm-up."""
        try:
            return await super().list_tools()
        finally:
            self.answered.set()

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[None, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Run a tool within its caller's pin; arguments it does not take (or that the pin
        replaces) are refused, and a failure is one line."""
        try:
            scope = self.scope_of(context)
            if scope.read_only and name in self._writers:
                raise ToolError(f"Unknown tool: {name}")
            offered = self._arguments.get(name, frozenset(arguments)) - scope.pinned
            unknown = sorted(set(arguments) - offered)
            if unknown:
                raise ToolError(f"{name} takes no argument {', '.join(unknown)}")
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:  # a bug: the SDK logs it on stderr, the client reads only the tool's name
            raise
        except ToolError as exc:
            raise ToolError(one_line(exc)) from exc.__cause__
        finally:
            self.answered.set()


@asynccontextmanager
async def _lifespan(server: MCPServer[None]) -> AsyncIterator[None]:
    """While serving: the warm-up in the background; afterwards the store is closed."""
    assert isinstance(server, RememServer)
    if server.warms_up:
        server.service.start_warm_up(server.answered)
    try:
        yield None
    finally:
        await anyio.to_thread.run_sync(server.service.close)


def bind(
    function: Callable[..., Any], service: Service, scope_of: Callable[[Context[None, Any] | None], Scope]
) -> Callable[..., Any]:
    """``function`` with ``service`` and its caller's pin (``scope_of`` the request's context) as its
    first arguments, the filter arguments in place of ``where``, and remem's errors turned into tool
    errors: they name arguments as the library does, and the tools' arguments have the library's
    names (``min_score``, ``since``, ``tags``), so a message needs no rephrasing here (no option of the
    CLI reaches it). A pinned argument is never passed (``RememServer.call_tool`` refuses it)."""
    signature = inspect.signature(function, eval_str=True)
    parameters = [p for name, p in _with_filters(signature).items() if name not in ("service", "scope")]
    context = inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    filtered = "where" in signature.parameters

    def tool(**arguments: Any) -> Any:
        scope = scope_of(arguments.pop(CONTEXT, None))
        try:
            if filtered:
                asked = {name: arguments.pop(name, default) for name, _, default in FILTER_ARGUMENTS}
                arguments["where"] = scope.filters(**asked)
            return function(service, scope, **arguments)
        except RememError as exc:
            raise ToolError(" ".join(str(exc).split())) from exc

    tool.__signature__ = signature.replace(parameters=[*parameters, context])  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in parameters} | {
        CONTEXT: Context,
        "return": signature.return_annotation,
    }
    tool.__name__ = tool.__qualname__ = function.__name__
    tool.__doc__ = function.__doc__
    return tool


def _with_filters(signature: inspect.Signature) -> dict[str, inspect.Parameter]:
    """The parameters, with the filter arguments (``schemas.FILTER_ARGUMENTS``) in place of a
    ``where`` parameter: they are declared once for every tool that filters."""
    parameters: dict[str, inspect.Parameter] = {}
    for name, parameter in signature.parameters.items():
        if name != "where":
            parameters[name] = parameter
            continue
        for argument, annotation, default in FILTER_ARGUMENTS:
            parameters[argument] = parameter.replace(name=argument, annotation=annotation, default=default)
    return parameters


def one_line(error: ToolError) -> str:
    """A tool error's message in one line, without the SDK's ``Error executing tool`` prefix:
    remem's message, or each rejected argument and why."""
    cause = error.__cause__
    if isinstance(cause, ValidationError):
        return "; ".join(_problem(problem) for problem in cause.errors())
    message = str(cause) if isinstance(cause, ToolError) else str(error)
    return " ".join(message.split())


def _problem(problem: Mapping[str, Any]) -> str:
    where = ".".join(str(part) for part in problem["loc"]) or "arguments"
    if problem["type"] == "missing":
        return f"missing argument {where}"
    return f"invalid argument {where}: {problem['msg']}"


def build_server(
    store: str | Path | None = None,
    *,
    user: str | None = None,
    conversation: str | None = None,
    private: bool = False,
    read_only: bool = False,
    embedder: remem.Embedder | None = None,
    model_dir: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
    note: Callable[[str], None] = lambda message: None,
    warm_up: bool = True,
    model: str | None = None,
    create: bool | None = None,
    name: str = "remem mcp",
) -> RememServer:
    """The server for ``store`` (as ``remem.open``: created on first use unless ``read_only``),
    pinned to ``user``/``conversation`` when given (``private``: without the shared memories);
    ``read_only`` leaves out add, edit and forget.
    ``embedder`` replaces the model (tests), ``model`` names the one a new store starts with;
    ``note`` receives lines for a person (stderr), each starting with the command's ``name``;
    without ``warm_up`` the model loads only when ``server.service.warm_up()`` is called;
    ``create`` (default: not ``read_only``) says whether a missing store is created."""
    scope = Scope.of(user, conversation, private=private, read_only=read_only, writer=STDIO_WRITER)
    creates = not read_only if create is None else create

    def opener() -> remem.Memories:
        return remem.open(
            store, create=creates, model_dir=model_dir, model=model, embedder=embedder, environ=environ
        )

    server = RememServer(Service(opener, read_only=read_only, note=note, name=name), scope, warm_up=warm_up)
    for function, hints in TOOLS:
        if not (read_only and hints is not READS):
            server.add_remem_tool(function, hints)
    return server
