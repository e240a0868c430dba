"""The baselines: what a script using the official google-cloud-ces client does.

    python benchmarks/official.py get URL PARENT      list the tools and toolsets, then GET each one (a per-resource refresh)
    python benchmarks/official.py list URL PARENT     list the tools and toolsets only (one paged call each)
    python benchmarks/official.py create URL PARENT BODIES.json   create each tool in turn

Prints the seconds spent in API calls as JSON. The clock starts after the imports and
the client are ready, so the baseline is as fast as such a script can be: every ratio
against it is conservative.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    mode, url, parent = sys.argv[1:4]
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import ces_v1

    client = ces_v1.AgentServiceClient(
        credentials=AnonymousCredentials(), transport="rest", client_options=ClientOptions(api_endpoint=url)
    )
    bodies = json.loads(Path(sys.argv[4]).read_text()) if mode == "create" else []
    tools = [ces_v1.Tool.from_json(json.dumps(body)) for _, body in bodies]
    start = time.perf_counter()
    count = 0
    if mode in ("get", "list"):
        # What plan compares: the tools (OpenAPI, connector and MCP tools are toolsets' and come
        # from their toolset) and the toolsets, each read by its own GET.
        tools = [t.name for t in client.list_tools(request={"parent": parent, "page_size": 1000})]
        toolsets = [t.name for t in client.list_toolsets(request={"parent": parent, "page_size": 1000})]
        if mode == "get":
            for name in tools:
                client.get_tool(name=name)
            for name in toolsets:
                client.get_toolset(name=name)
        count = len(tools) + len(toolsets)
    elif mode == "create":
        for (tid, _), tool in zip(bodies, tools, strict=True):
            client.create_tool(parent=parent, tool=tool, tool_id=tid)
        count = len(bodies)
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print(json.dumps({"seconds": time.perf_counter() - start, "count": count}))


if __name__ == "__main__":
    main()
