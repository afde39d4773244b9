#!/usr/bin/env python3
"""Scripted MCP session with the official Python SDK client, printing a normalized transcript.

Owned by the interop harness (tests/interop.rs). It launches the server command given after
`--` over stdio, runs the steps chosen by the options below with the `mcp` SDK's own
`ClientSession`, and prints one JSON document to stdout: every request the script made and
what came back, in order, with volatile values (clock times, UUIDs, and whatever `--mask`
names) replaced by placeholders. The same script run against a server directly and through
a wrapper (`rootfence run -- <server>`) must print the same transcript.

It fails loudly: any error the script did not ask for (a JSON-RPC error, a transport fault,
a result the SDK cannot validate, an SDK warning, a notification that never comes) ends it
with exit status 1 and a message on stderr, and the whole run is bounded by `--timeout`, so
it never hangs.

Usage (see --help): session.py [options] -- <server command> [args...]
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import logging
import os
import re
import sys
import warnings as warnings_module
from contextlib import AsyncExitStack
from typing import Any

import anyio
import mcp_types as types
from mcp.client._input_required import run_input_required_driver
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

ALL_STEPS = (
    "list-resources",
    "list-templates",
    "read",
    "subscribe",
    "list-tools",
    "call",
    "list-prompts",
    "get-prompt",
    "complete",
)

# Values that differ from one server process to the next. Each match becomes a placeholder.
DEFAULT_MASKS = (
    # ISO 8601 date-times.
    (r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?", "<datetime>"),
    # Clock times as toLocaleTimeString prints them ("4:52:01 AM", "16:52:01").
    (r"\b\d{1,2}:\d{2}:\d{2}(?:\s?[AP]M)?", "<time>"),
    # UUIDs.
    (r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b", "<uuid>"),
)


class SessionFailure(Exception):
    """An error the script did not ask for: ends the run with exit status 1."""


class Masker:
    """Replaces volatile substrings in every string of a JSON value."""

    def __init__(self, extra: list[str]) -> None:
        self.rules = [(re.compile(p), r) for p, r in DEFAULT_MASKS]
        self.rules += [(re.compile(p), "<masked>") for p in extra]

    def text(self, s: str) -> str:
        for pattern, placeholder in self.rules:
            s = pattern.sub(placeholder, s)
        return s

    def value(self, v: Any) -> Any:
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, dict):
            out = {k: self.value(x) for k, x in v.items()}
            # A blob is base64 of bytes that may themselves hold a clock time: mask inside the
            # decoded text, and keep the original base64 whenever masking changed nothing.
            blob = v.get("blob")
            if isinstance(blob, str):
                out["blob"] = self.blob(blob)
            return out
        return v

    def blob(self, b64: str) -> str:
        try:
            decoded = base64.b64decode(b64, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            return b64
        masked = self.text(decoded)
        if masked == decoded:
            return b64
        return "<masked-blob:" + masked + ">"


def dump(model: Any) -> Any:
    """The wire form of an SDK result model: aliases, and only the fields the server sent
    (exclude_unset), so SDK defaults such as a synthesized `resultType` stay out."""
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return model


def parse_named_json(spec: str, what: str) -> tuple[str, dict[str, Any]]:
    """`NAME` or `NAME=JSON-OBJECT` from the command line."""
    name, sep, raw = spec.partition("=")
    if not name:
        raise SystemExit(f"session.py: empty {what} name in {spec!r}")
    if not sep:
        return name, {}
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as e:
        raise SystemExit(f"session.py: {what} {name!r}: arguments are not JSON: {e}") from e
    if not isinstance(args, dict):
        raise SystemExit(f"session.py: {what} {name!r}: arguments must be a JSON object")
    return name, args


def parse_args(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    if "--" not in argv:
        if "--http" in argv:
            argv = [*argv, "--"]
        else:
            raise SystemExit("session.py: give the server command after `--` (see --help)")
    split = argv.index("--")
    own, server = argv[:split], argv[split + 1 :]
    if not server and "--http" not in own:
        raise SystemExit("session.py: the server command after `--` is empty")
    p = argparse.ArgumentParser(
        prog="session.py",
        description="Run a scripted MCP session over stdio with the official Python SDK "
        "and print a normalized JSON transcript.",
        epilog="Example: session.py --read test://static/resource/1 --call echo='{\"message\":\"hi\"}' "
        "-- node tests/peers/node/node_modules/everything-2025/dist/index.js stdio",
    )
    p.add_argument(
        "--protocol",
        default="2025-11-25",
        choices=[*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS],
        help="protocol revision to request (handshake revisions use initialize; "
        "2026-07-28 uses server/discover and per-request _meta)",
    )
    p.add_argument(
        "--steps",
        default=",".join(ALL_STEPS),
        help=f"comma-separated steps to run, in this fixed order: {','.join(ALL_STEPS)}",
    )
    p.add_argument("--read", action="append", default=[], metavar="URI", help="resources/read URI")
    p.add_argument(
        "--read-listed",
        type=int,
        default=0,
        metavar="N",
        help="also read the first N resources that resources/list returned",
    )
    p.add_argument(
        "--read-error",
        action="append",
        default=[],
        metavar="URI",
        help="resources/read URI that must fail with a JSON-RPC error",
    )
    p.add_argument("--subscribe", metavar="URI", help="resources/subscribe URI, then wait for its update")
    p.add_argument(
        "--subscribe-trigger",
        metavar="TOOL",
        help="tool to call after subscribing (and again after unsubscribing) to toggle updates",
    )
    p.add_argument(
        "--update-timeout",
        type=float,
        default=15.0,
        metavar="SECS",
        help="how long to wait for notifications/resources/updated (default 15)",
    )
    p.add_argument("--call", action="append", default=[], metavar="NAME[=JSON]", help="tools/call")
    p.add_argument(
        "--call-error",
        action="append",
        default=[],
        metavar="NAME[=JSON]",
        help="tools/call that must fail with a JSON-RPC error",
    )
    p.add_argument("--prompt", action="append", default=[], metavar="NAME[=JSON]", help="prompts/get")
    p.add_argument(
        "--complete",
        action="append",
        default=[],
        metavar="PROMPT:ARG=VALUE",
        help="completion/complete for a prompt argument",
    )
    p.add_argument(
        "--roots",
        action="append",
        default=[],
        metavar="URI",
        help="declare the roots capability and answer roots/list with these URIs",
    )
    p.add_argument(
        "--sampling",
        metavar="TEXT",
        help="declare the sampling capability and answer sampling/createMessage with TEXT",
    )
    p.add_argument(
        "--record-requests",
        action="store_true",
        help="add `requests_received` to the transcript: every server-to-client request "
        "(and, in 2026-07-28, every input request of an input_required result), with params",
    )
    p.add_argument("--mask", action="append", default=[], metavar="REGEX", help="extra volatile pattern")
    p.add_argument(
        "--unlisted-tools",
        action="store_true",
        help="call tools without the SDK listing them first to validate their results (as "
        "hosts do): for servers whose tools/list the SDK rejects (an inputSchema without "
        '"type": "object")',
    )
    p.add_argument(
        "--allow-sdk-warnings",
        action="store_true",
        help="record SDK warnings in the transcript instead of failing on them",
    )
    p.add_argument(
        "--http",
        metavar="URL",
        help="connect to this Streamable HTTP endpoint (e.g. http://127.0.0.1:8080/mcp) instead of "
        "launching the server command over stdio",
    )
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECS", help="whole-run limit")
    p.add_argument(
        "--request-timeout",
        type=float,
        default=30.0,
        metavar="SECS",
        help="one request's limit (default 30; a server that builds its environment or index "
        "before answering initialize, as uvx-started basic-memory does, may need more)",
    )
    args = p.parse_args(own)
    steps = [s for s in args.steps.split(",") if s]
    unknown = [s for s in steps if s not in ALL_STEPS]
    if unknown:
        raise SystemExit(f"session.py: unknown step(s) {unknown}; known: {','.join(ALL_STEPS)}")
    args.steps = set(steps)
    return args, server


class SdkWarnings(logging.Handler):
    """Collects warnings the SDK logs (an invalid notification is only logged, never raised)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(f"{record.name}: {record.getMessage()}")


class Session:
    def __init__(self, args: argparse.Namespace, server: list[str]) -> None:
        self.args = args
        self.server = server
        self.masker = Masker(args.mask)
        self.transcript: list[dict[str, Any]] = []
        self.updated: list[str] = []
        self.updated_event = anyio.Event()
        self.server_requests: set[str] = set()
        self.transport_faults: list[str] = []
        self.listed: list[str] = []
        self.requests_received: list[dict[str, Any]] = []

    # -- recording --------------------------------------------------------------------------

    def record(self, step: str, **fields: Any) -> None:
        self.transcript.append({"step": step, **self.masker.value(fields)})

    async def expect_ok(self, step: str, what: str, coro: Any) -> Any:
        try:
            return await coro
        except MCPError as e:
            raise SessionFailure(f"{step} {what}: unexpected JSON-RPC error {e.code}: {e}") from e

    async def expect_error(self, step: str, what: str, coro: Any, tool: bool = False) -> dict[str, Any]:
        try:
            result = await coro
        except MCPError as e:
            return {"code": e.code, "message": e.error.message}
        # A refused tool call is a tool execution error (SEP-1303): `isError: true`.
        d = dump(result) if tool else {}
        if isinstance(d, dict) and d.get("isError") is True:
            return {
                "isError": True,
                "text": (d.get("content") or [{}])[0].get("text"),
                "denial": (d.get("_meta") or {}).get("io.rootfence/denial"),
            }
        raise SessionFailure(f"{step} {what}: expected a JSON-RPC error, got {dump(result)!r}")

    # -- callbacks from the server ----------------------------------------------------------

    async def on_message(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.transport_faults.append(f"{type(message).__name__}: {message}")
            return
        if isinstance(message, types.ResourceUpdatedNotification):
            self.updated.append(message.params.uri)
            self.updated_event.set()

    async def on_list_roots(self, _ctx: ClientRequestContext) -> types.ListRootsResult:
        self.server_requests.add("roots/list")
        self.requests_received.append({"method": "roots/list"})
        return types.ListRootsResult(roots=[types.Root(uri=u) for u in self.args.roots])

    async def on_sampling(
        self, _ctx: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.server_requests.add("sampling/createMessage")
        self.requests_received.append({"method": "sampling/createMessage", "params": dump(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=self.args.sampling),
            model="rootfence-interop-canned",
            stop_reason="endTurn",
        )

    # -- the script -------------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        a = self.args
        async with AsyncExitStack() as stack:
            if a.http:
                read, write = await stack.enter_async_context(streamable_http_client(a.http))
            else:
                params = StdioServerParameters(command=self.server[0], args=self.server[1:], env=dict(os.environ))
                read, write = await stack.enter_async_context(stdio_client(params, errlog=sys.stderr))
            session = ClientSession(
                read,
                write,
                read_timeout_seconds=min(a.timeout, a.request_timeout),
                message_handler=self.on_message,
                list_roots_callback=self.on_list_roots if a.roots else None,
                sampling_callback=self.on_sampling if a.sampling is not None else None,
                client_info=types.Implementation(name="rootfence-interop-session", version="1"),
            )
            session = await stack.enter_async_context(session)
            await self.connect(session)
            await self.script(session)
        if self.transport_faults:
            raise SessionFailure("transport fault(s): " + "; ".join(self.transport_faults))
        transcript = {
            "client": "python-mcp",
            "protocol": a.protocol,
            "server_requests": sorted(self.server_requests),
            "steps": self.transcript,
        }
        if a.record_requests:
            transcript["requests_received"] = self.masker.value(self.requests_received)
        return transcript

    async def resolve(self, session: ClientSession, send: Any) -> Any:
        """Sends a request that may be answered `input_required` (2026-07-28 multi round-trip:
        a server's, or a proxy's own) and drives the rounds with the SDK's driver, answering
        the input requests through this session's callbacks, as `mcp.client.Client` does.
        A request never answered `input_required` is sent exactly once, as before."""
        first = await send(None, None)
        if not isinstance(first, types.InputRequiredResult):
            return first

        async def dispatch(key: str, req: Any) -> Any:
            if self.args.record_requests:
                self.requests_received.append({"input_request": key, **dump(req)})
            ctx = ClientRequestContext(session=session, request_id=key, meta=req.params.meta if req.params else None)
            return await session.dispatch_input_request(ctx, req)

        return await run_input_required_driver(first, dispatch=dispatch, retry=send)

    async def connect(self, session: ClientSession) -> None:
        a = self.args
        if a.protocol in MODERN_PROTOCOL_VERSIONS:
            result = await self.expect_ok("discover", a.protocol, session.discover())
            self.record("discover", result=dump(result))
            if session.protocol_version != a.protocol:
                raise SessionFailure(f"discover: negotiated {session.protocol_version}, asked for {a.protocol}")
            return
        # Built by hand (not session.initialize()) so that any handshake revision can be asked for.
        request = types.InitializeRequest(
            params=types.InitializeRequestParams(
                protocol_version=a.protocol,
                capabilities=session._build_capabilities(a.protocol),  # noqa: SLF001 (SDK's own ad)
                client_info=types.Implementation(name="rootfence-interop-session", version="1"),
            )
        )
        result = await self.expect_ok("initialize", a.protocol, session.send_request(request, types.InitializeResult))
        if result.protocol_version != a.protocol:
            raise SessionFailure(f"initialize: server answered {result.protocol_version}, asked for {a.protocol}")
        session.adopt(result)
        await session.send_notification(types.InitializedNotification())
        self.record("initialize", result=dump(result))

    async def script(self, session: ClientSession) -> None:
        a = self.args
        steps = a.steps
        if "list-resources" in steps:
            await self.list_resources(session)
        if "list-templates" in steps:
            result = await self.expect_ok("list-templates", "", session.list_resource_templates())
            self.record("list-templates", result=dump(result))
        if "read" in steps:
            for uri in [*self.listed[: a.read_listed], *a.read]:
                result = await self.expect_ok("read", uri, self.read(session, uri))
                self.record("read", uri=uri, result=dump(result))
            for uri in a.read_error:
                error = await self.expect_error("read-error", uri, self.read(session, uri))
                self.record("read-error", uri=uri, error=error)
        if "subscribe" in steps and a.subscribe:
            await self.subscribe(session, a.subscribe)
        if "list-tools" in steps:
            result = await self.expect_ok("list-tools", "", session.list_tools())
            self.record("list-tools", result=dump(result))
        if "call" in steps:
            for spec in a.call:
                name, args = parse_named_json(spec, "tool")
                result = await self.expect_ok("call", name, self.call(session, name, args))
                self.record("call", name=name, arguments=args, result=dump(result))
            for spec in a.call_error:
                name, args = parse_named_json(spec, "tool")
                error = await self.expect_error("call-error", name, self.call(session, name, args), tool=True)
                self.record("call-error", name=name, arguments=args, error=error)
        if "list-prompts" in steps:
            result = await self.expect_ok("list-prompts", "", session.list_prompts())
            self.record("list-prompts", result=dump(result))
        if "get-prompt" in steps:
            for spec in a.prompt:
                name, args = parse_named_json(spec, "prompt")
                str_args = {k: str(v) for k, v in args.items()}
                result = await self.expect_ok("get-prompt", name, self.prompt(session, name, str_args))
                self.record("get-prompt", name=name, arguments=str_args, result=dump(result))
        if "complete" in steps:
            for spec in a.complete:
                prompt, _, rest = spec.partition(":")
                arg, _, value = rest.partition("=")
                ref = types.PromptReference(type="ref/prompt", name=prompt)
                result = await self.expect_ok(
                    "complete", spec, session.complete(ref, argument={"name": arg, "value": value})
                )
                self.record("complete", ref=prompt, argument=arg, value=value, result=dump(result))

    async def read(self, session: ClientSession, uri: str) -> Any:
        return await self.resolve(
            session,
            lambda r, s: session.read_resource(uri, input_responses=r, request_state=s, allow_input_required=True),
        )

    async def call(self, session: ClientSession, name: str, args: dict[str, Any]) -> Any:
        if self.args.unlisted_tools:
            # Known to the SDK as a tool without an output schema: it then does not call
            # tools/list to find one.
            session._tool_output_schemas.setdefault(name, None)
        return await self.resolve(
            session,
            lambda r, s: session.call_tool(name, args, input_responses=r, request_state=s, allow_input_required=True),
        )

    async def prompt(self, session: ClientSession, name: str, args: dict[str, str]) -> Any:
        return await self.resolve(
            session,
            lambda r, s: session.get_prompt(name, args, input_responses=r, request_state=s, allow_input_required=True),
        )

    async def list_resources(self, session: ClientSession) -> None:
        """Every page, following nextCursor until it is absent; each page is recorded."""
        cursor: str | None = None
        pages = 0
        while True:
            pages += 1
            if pages > 1000:
                raise SessionFailure("list-resources: more than 1000 pages; the cursor never ends")
            page_params = types.PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            result = await self.expect_ok("list-resources", f"page {pages}", session.list_resources(params=page_params))
            self.record("list-resources", cursor=cursor, result=dump(result))
            self.listed.extend(r.uri for r in result.resources)
            if not result.next_cursor:
                break
            cursor = result.next_cursor

    async def subscribe(self, session: ClientSession, uri: str) -> None:
        a = self.args
        result = await self.expect_ok("subscribe", uri, session.subscribe_resource(uri))
        self.record("subscribe", uri=uri, result=dump(result))
        if a.subscribe_trigger:
            await self.expect_ok("subscribe", a.subscribe_trigger, session.call_tool(a.subscribe_trigger, {}))
        with anyio.move_on_after(a.update_timeout):
            await self.updated_event.wait()
        if not self.updated:
            raise SessionFailure(
                f"subscribe: no notifications/resources/updated for {uri} within {a.update_timeout}s"
            )
        # How many arrive depends on timing; which URIs arrive does not.
        self.record("updated", uris=sorted(set(self.updated)))
        result = await self.expect_ok("unsubscribe", uri, session.unsubscribe_resource(uri))
        self.record("unsubscribe", uri=uri, result=dump(result))
        if a.subscribe_trigger:
            await self.expect_ok("unsubscribe", a.subscribe_trigger, session.call_tool(a.subscribe_trigger, {}))


def leaves(e: BaseException) -> list[BaseException]:
    """The innermost exceptions of (possibly nested) exception groups (duck-typed, so the
    `exceptiongroup` backport on Python 3.10 counts too)."""
    subs = getattr(e, "exceptions", None)
    if isinstance(subs, (list, tuple)) and subs:
        return [leaf for sub in subs for leaf in leaves(sub)]
    return [e]


def main(argv: list[str]) -> int:
    args, server = parse_args(argv)
    # resources/subscribe is deprecated for 2026-07-28 only; a handshake session uses it as specified.
    warnings_module.filterwarnings("ignore", category=MCPDeprecationWarning)
    warnings = SdkWarnings()
    logging.getLogger("mcp").addHandler(warnings)
    logging.getLogger("mcp").setLevel(logging.WARNING)

    async def bounded() -> dict[str, Any]:
        with anyio.fail_after(args.timeout):
            return await Session(args, server).run()

    try:
        transcript = anyio.run(bounded)
    except BaseException as e:  # noqa: BLE001 (the SDK's task groups wrap errors in groups)
        for leaf in leaves(e):
            if isinstance(leaf, TimeoutError):
                message = f"the session did not finish within {args.timeout}s"
            elif isinstance(leaf, SessionFailure):
                message = str(leaf)
            else:
                message = f"{type(leaf).__name__}: {leaf}"
            print(f"session.py: FAILED: {message}", file=sys.stderr)
        return 1
    if warnings.records:
        if not args.allow_sdk_warnings:
            for w in warnings.records:
                print(f"session.py: FAILED: SDK warning: {w}", file=sys.stderr)
            return 1
        transcript["sdk_warnings"] = warnings.records
    json.dump(transcript, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
