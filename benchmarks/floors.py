"""The floors plan and validate are measured against: what the work costs with nothing but the library.

    python benchmarks/floors.py list URL PARENT COLLECTION[:VERSION]...   every collection listed with bare httpx
    python benchmarks/floors.py parse REPO                                 every YAML file of REPO parsed with libyaml
    python benchmarks/floors.py imports MODULE...                          the interpreter importing these modules

list: the app read and each collection listed (pages of 1,000, following nextPageToken), all at
once on one connection pool, each page decoded from JSON, as plan must at the least; parse:
every ``*.yaml`` file under REPO read and loaded by PyYAML's libyaml loader (CSafeLoader), in
one process, as validate must at the least; imports: the modules named imported, nothing run (given
the libraries a command imported, what start-up costs with them and without cesync). Each is a
whole process, start to exit (its imports included), as the cesync command it is held against.
"""

from __future__ import annotations

import sys


def list_floor(url: str, parent: str, collections: list[str]) -> int:
    import asyncio

    import httpx

    async def pages(client: httpx.AsyncClient, collection: str) -> int:
        name, _, version = collection.partition(":")
        count, token = 0, ""
        while True:
            params = {"pageSize": 1000, **({"pageToken": token} if token else {})}
            answer = await client.get(f"/{version or 'v1'}/{parent}/{name}", params=params)
            answer.raise_for_status()
            page = answer.json()
            count += len(page.get(name, []))
            token = page.get("nextPageToken", "")
            if not token:
                return count

    async def everything() -> int:
        async with httpx.AsyncClient(base_url=url, timeout=120) as client:
            app = await client.get(f"/v1/{parent}")
            app.raise_for_status()
            app.json()
            return sum(await asyncio.gather(*(pages(client, c) for c in collections)))

    return asyncio.run(everything())


def parse_floor(repo: str) -> int:
    from pathlib import Path

    import yaml

    count = 0
    for path in sorted(Path(repo).rglob("*.yaml")):
        if ".cesync" in path.parts:
            continue
        yaml.load(path.read_bytes(), Loader=yaml.CSafeLoader)
        count += 1
    return count


def main() -> None:
    mode = sys.argv[1]
    if mode == "list":
        found = list_floor(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif mode == "parse":
        found = parse_floor(sys.argv[2])
    elif mode == "imports":
        import importlib

        found = len([importlib.import_module(name) for name in sys.argv[2:]])
    else:
        raise SystemExit(f"unknown floor {mode!r}: list, parse or imports")
    print(found)


if __name__ == "__main__":
    main()
