"""The tools as a client sees them (tools/list), compared exactly with tests/mcp/tools_schema.json, so
that a change of a tool's name, description, arguments, bounds, result or hints is deliberate.

After changing a tool on purpose, regenerate the snapshot and review its diff:

    REMEM_UPDATE_TOOLS_SCHEMA=1 python -m pytest tests/mcp/test_mcp_schema.py
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import jsonschema
from mcp import Client
from mcp_support import call, run, server, warm

SNAPSHOT = Path(__file__).with_name("tools_schema.json")
ASSISTANTS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "assistants.md"


async def _tools(store: Path, **options: Any) -> list[dict[str, Any]]:
    async with Client(server(store, **options)) as client:
        listed = await client.list_tools()
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]


def test_tools_list_matches_the_snapshot(store_dir: Path) -> None:
    tools: list[dict[str, Any]] = []

    async def scenario() -> None:
        tools.extend(await _tools(store_dir))

    run(scenario)
    text = json.dumps(tools, indent=2, ensure_ascii=False) + "\n"
    if os.environ.get("REMEM_UPDATE_TOOLS_SCHEMA") == "1":
        SNAPSHOT.write_text(text, encoding="utf-8")
    assert json.loads(SNAPSHOT.read_text(encoding="utf-8")) == tools, (
        "the tools changed: if on purpose, run REMEM_UPDATE_TOOLS_SCHEMA=1 python -m pytest "
        "tests/mcp/test_mcp_schema.py and review the diff of tests/mcp/tools_schema.json"
    )


def test_every_tool_is_described_bounded_and_structured(store_dir: Path) -> None:
    tools: list[dict[str, Any]] = []

    async def scenario() -> None:
        tools.extend(await _tools(store_dir))

    run(scenario)
    for tool in tools:
        assert 20 < len(tool["description"]) < 250, tool["name"]
        assert tool["outputSchema"]["type"] == "object", tool["name"]
        assert tool["annotations"]["openWorldHint"] is False
        for name, schema in tool["inputSchema"]["properties"].items():
            assert "description" in schema, (tool["name"], name)
    hints = {tool["name"]: tool["annotations"] for tool in tools}
    assert all(
        hints[name]["readOnlyHint"]
        for name in ("memory_search", "memory_context", "memory_get", "memory_list")
    )
    assert hints["memory_forget"]["destructiveHint"] and not hints["memory_add"]["destructiveHint"]
    search = next(tool for tool in tools if tool["name"] == "memory_search")["inputSchema"]["properties"]
    assert (search["k"]["minimum"], search["k"]["maximum"], search["k"]["default"]) == (1, 50, 5)


def _page_json_blocks() -> list[Any]:
    """The ```json blocks of docs/assistants.md, parsed."""
    text = ASSISTANTS_PAGE.read_text(encoding="utf-8")
    return [
        json.loads(block) for block in re.findall(r"^```json\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    ]


def test_the_assistants_page_shows_a_real_result_and_a_valid_config(store_dir: Path) -> None:
    config, example = _page_json_blocks()
    assert config == {"mcpServers": {"remem": {"command": "remem", "args": ["mcp", "--user", "me"]}}}
    app = server(store_dir, user="me")
    outcome: dict[str, Any] = {}

    async def scenario() -> None:
        async with Client(app) as client:
            await warm(app)
            for text, tag in [
                ("Postgres 16 runs on the main box", "ops"),
                ("The login sequence uses short-lived JWTs.", "auth"),
            ]:
                await call(client, "memory_add", {"text": text, "tags": [tag]})
            outcome["result"] = await call(
                client, "memory_search", {"query": "which database do we run", "k": 2}
            )
            outcome["schema"] = next(
                t for t in (await client.list_tools()).tools if t.name == "memory_search"
            ).output_schema

    run(scenario)
    jsonschema.validate(example, outcome["schema"])
    real = outcome["result"]
    assert example.keys() == real.keys() and example["hits"][0].keys() == real["hits"][0].keys()
    assert [hit["text"] for hit in example["hits"]] == [hit["text"] for hit in real["hits"]]
