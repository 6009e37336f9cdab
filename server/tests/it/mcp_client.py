"""Drives Conclave's MCP server with the official MCP Python SDK, for mcp_server.rs.

    mcp_client.py stdio PROTOCOL REPOSITORY BASE -- COMMAND...
    mcp_client.py http PROTOCOL REPOSITORY BASE URL TOKEN

PROTOCOL is `auto` (the SDK probes and takes the newest version both speak) or
`legacy` (the initialize handshake of 2025-11-25). The script connects, lists the
tools, calls each tool (a review with a progress token, then every other tool, and
some refusals), reads the resources, and prints one JSON object with what it saw on
standard output. With MCP_SCENARIO=pages it reviews, then follows `next_cursor`
through every page of the findings. It asserts nothing itself: the Rust test does.
"""

import asyncio
import json
import os
import subprocess
import sys

import httpx2
from mcp import Client, StdioServerParameters

GATE = "gate"


def result_of(result):
    """A tool result as plain data: error flag, text, structured content."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    return {"is_error": bool(result.is_error), "text": text, "structured": result.structured_content}


async def drive(client, repository, base):
    seen = {"protocol": client.session.protocol_version}
    tools = await client.list_tools()
    seen["tools"] = {
        tool.name: {
            "input_schema": tool.input_schema,
            "output_schema": tool.output_schema,
            "description": tool.description,
        }
        for tool in tools.tools
    }
    progress = []

    async def on_progress(done, total, message):
        progress.append({"progress": done, "total": total, "message": message})

    review = await client.call_tool(
        "review", {"repository": repository, "base": base}, progress_callback=on_progress
    )
    seen["review"] = result_of(review)
    seen["progress"] = progress
    run = (review.structured_content or {}).get("run_id", "")
    calls = {
        "get_review_full": ("get_review", {"run": run, "detail": "full"}),
        "get_review_bad_cursor": ("get_review", {"run": run, "cursor": "not-a-cursor"}),
        "get_review_unknown": ("get_review", {"run": "no-such-run"}),
        "list_runs": ("list_runs", {"limit": 5}),
        "get_run": ("get_run", {"run": run}),
        "get_run_unknown": ("get_run", {"run": "no-such-run"}),
        "list_conclaves": ("list_conclaves", {}),
        "validate_good": ("validate_conclave", {"conclave": gate_conclave()}),
        "validate_bad": ("validate_conclave", {"conclave": {"id": "broken", "nodes": [{"id": "a", "kind": "nope"}], "edges": []}}),
        "run_gate": ("run_conclave", {"conclave": GATE, "input": "x"}),
        "run_unknown": ("run_conclave", {"conclave": "no-such-conclave", "input": "x"}),
        "review_bad_base": ("review", {"repository": repository, "base": "no-such-commit-anywhere"}),
        "review_unknown_conclave": ("review", {"repository": repository, "base": base, "conclave": "no-such-conclave"}),
        "review_outside": ("review", {"repository": "/", "base": base}),
        "review_nowait": ("review", {"repository": repository, "base": base, "wait": False}),
    }
    for key, (name, arguments) in calls.items():
        seen[key] = result_of(await client.call_tool(name, arguments))
    # A commit after the review, then a review of only what is new since it.
    with open(os.path.join(repository, "README.md"), "a") as readme:
        readme.write("\nMore words.\n")
    git = ["git", "-C", repository, "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "commit", "-qam", "more words"], check=True)
    seen["review_since"] = result_of(await client.call_tool("review", {"repository": repository, "base": base, "since": "auto"}))
    since_run = (seen["review_since"]["structured"] or {}).get("run_id", "")
    seen["review_since_full"] = result_of(await client.call_tool("get_review", {"run": since_run, "detail": "full"}))
    gate_run = (seen["run_gate"]["structured"] or {}).get("run_id", "")
    seen["approve"] = result_of(await client.call_tool("approve", {"run": gate_run, "node": "approve", "decision": "approve", "comment": "fine"}))
    seen["approve_again"] = result_of(await client.call_tool("approve", {"run": gate_run, "node": "approve", "decision": "approve"}))
    seen["gate_after"] = result_of(await settled(client, gate_run))
    resources = await client.list_resources()
    seen["resources"] = [str(r.uri) for r in resources.resources]
    templates = await client.list_resource_templates()
    seen["templates"] = [t.uri_template for t in templates.resource_templates]
    seen["read_conclave"] = await read(client, f"conclave://conclaves/{GATE}")
    seen["read_report"] = await read(client, f"conclave://runs/{run}/report.md")
    seen["read_traversal"] = await read(client, "conclave://conclaves/../secret")
    seen["read_run_traversal"] = await read(client, "conclave://runs/../../etc/passwd/report.md")
    # After every refusal the connection still answers.
    seen["tools_after"] = len((await client.list_tools()).tools)
    return seen


async def pages(client, repository, base):
    """A review, then every page of its findings by following `next_cursor`."""
    review = await client.call_tool("review", {"repository": repository, "base": base})
    seen = {"pages": [page_of(review)]}
    answer = review.structured_content or {}
    while answer.get("next_cursor"):
        result = await client.call_tool(
            "get_review", {"run": answer["run_id"], "cursor": answer["next_cursor"], "detail": "full"}
        )
        seen["pages"].append(page_of(result))
        answer = result.structured_content or {}
    return seen


def page_of(result):
    """A page's findings and cursor, and the characters of the whole tool result."""
    answer = result.structured_content or {}
    return {
        "is_error": bool(result.is_error),
        "chars": len(result.model_dump_json(by_alias=True)),
        "descriptions": [f["description"] for f in answer.get("findings", [])],
        "total": answer.get("total_findings"),
        "next_cursor": answer.get("next_cursor"),
        "note": answer.get("note"),
    }


async def settled(client, run):
    """`get_run` until the run no longer waits or runs."""
    for _ in range(600):
        result = await client.call_tool("get_run", {"run": run})
        status = (result.structured_content or {}).get("status")
        if status not in ("queued", "running", "waiting"):
            return result
        await asyncio.sleep(0.1)
    return result


async def read(client, uri):
    try:
        result = await client.read_resource(uri)
        return {"ok": True, "text": "".join(getattr(c, "text", "") for c in result.contents)}
    except Exception as error:  # the refusal, as the SDK raises it
        return {"ok": False, "error": str(error)}


def gate_conclave():
    return {
        "version": 1, "id": GATE, "name": "Gate",
        "nodes": [{"id": "in", "kind": "trigger"}, {"id": "approve", "kind": "approval", "approval": {"prompt": "Go on?"}},
                  {"id": "out", "kind": "output"}],
        "edges": [{"from": "in", "to": "approve"}, {"from": "approve", "to": "out"}],
    }


async def main():
    mode, protocol, repository, base = sys.argv[1:5]
    if mode == "stdio":
        command = sys.argv[sys.argv.index("--") + 1:]
        server = StdioServerParameters(command=command[0], args=command[1:])
        client = Client(server, mode=protocol, read_timeout_seconds=600)
    else:
        url, token = sys.argv[5:7]
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=600)
        from mcp.client.streamable_http import streamable_http_client

        client = Client(streamable_http_client(url, http_client=http), mode=protocol, read_timeout_seconds=600)
    scenario = pages if os.environ.get("MCP_SCENARIO") == "pages" else drive
    async with client:
        seen = await scenario(client, repository, base)
    print(json.dumps(seen))


asyncio.run(main())
