"""A small fake of the GitHub and GitLab comment APIs: a real HTTP server on loopback.

Just the calls cesync makes, with their pagination (GitHub's Link header, GitLab's
X-Next-Page, two comments per page so it matters) and token checks.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

PAGE = 2
TOKEN = "secret-token"
GITHUB_BOT = {"login": "github-actions[bot]", "type": "Bot"}
GITLAB_BOT = {"id": 7, "username": "project_1234_bot"}


@dataclass
class Forge:
    comments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # thread key -> comments
    requests: list[tuple[str, str]] = field(default_factory=list)
    next_id: int = 100
    github_user: dict[str, Any] | None = None  # what /user answers for a personal token; None: Actions' 403
    url: str = ""

    def thread(self, key: str) -> list[dict[str, Any]]:
        return self.comments.setdefault(key, [])

    def find(self, comment_id: int) -> dict[str, Any] | None:
        return next((c for t in self.comments.values() for c in t if c["id"] == comment_id), None)


def serve() -> tuple[Forge, ThreadingHTTPServer]:
    forge = Forge()

    class Handler(BaseHTTPRequestHandler):
        def _reply(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            ok = self.headers.get("Authorization") == f"Bearer {TOKEN}" or self.headers.get("PRIVATE-TOKEN") == TOKEN
            if not ok:
                self._reply(401, {"message": "Bad credentials"})
            return ok

        def _body(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(length) or b"{}")

        def _route(self, method: str) -> None:
            forge.requests.append((method, self.path))
            if not self._authorized():
                return
            parts = urlsplit(self.path)
            query = parse_qs(parts.query)
            page = int(query.get("page", ["1"])[0])
            if parts.path == "/user":  # Actions' GITHUB_TOKEN has no user to read
                if forge.github_user:
                    return self._reply(200, forge.github_user)
                return self._reply(403, {"message": "Resource not accessible by integration"})
            if parts.path == "/api/v4/user":
                return self._reply(200, GITLAB_BOT)
            if m := re.fullmatch(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments", parts.path):
                thread = forge.thread(f"gh:{m[1]}#{m[2]}")
                if method == "GET":
                    chunk = thread[(page - 1) * PAGE : page * PAGE]
                    headers = {}
                    if page * PAGE < len(thread):
                        headers["Link"] = f'<{forge.url}{parts.path}?per_page={PAGE}&page={page + 1}>; rel="next"'
                    return self._reply(200, chunk, headers)
                if method == "POST":
                    forge.next_id += 1
                    comment = {"id": forge.next_id, "body": self._body()["body"], "user": dict(forge.github_user or GITHUB_BOT)}
                    thread.append(comment)
                    return self._reply(201, comment)
            if (m := re.fullmatch(r"/repos/[^/]+/[^/]+/issues/comments/(\d+)", parts.path)) and method == "PATCH":
                comment = forge.find(int(m[1]))
                if comment is None:
                    return self._reply(404, {"message": "Not Found"})
                comment["body"] = self._body()["body"]
                return self._reply(200, comment)
            if m := re.fullmatch(r"/api/v4/projects/([^/]+)/merge_requests/(\d+)/notes(?:/(\d+))?", parts.path):
                thread = forge.thread(f"gl:{m[1]}!{m[2]}")
                if method == "GET" and not m[3]:
                    chunk = thread[(page - 1) * PAGE : page * PAGE]
                    headers = {"X-Next-Page": str(page + 1)} if page * PAGE < len(thread) else {}
                    return self._reply(200, chunk, headers)
                if method == "POST" and not m[3]:
                    forge.next_id += 1
                    note = {"id": forge.next_id, "body": self._body()["body"], "author": dict(GITLAB_BOT)}
                    thread.append(note)
                    return self._reply(201, note)
                if method == "PUT" and m[3]:
                    note = forge.find(int(m[3]))
                    if note is None:
                        return self._reply(404, {"message": "404 Not found"})
                    note["body"] = self._body()["body"]
                    return self._reply(200, note)
            self._reply(404, {"message": f"no route {method} {parts.path}"})

        def do_GET(self) -> None:
            self._route("GET")

        def do_POST(self) -> None:
            self._route("POST")

        def do_PATCH(self) -> None:
            self._route("PATCH")

        def do_PUT(self) -> None:
            self._route("PUT")

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    forge.url = f"http://127.0.0.1:{server.server_address[1]}"
    # shutdown() waits for the loop's next poll: socketserver's default of 0.5 s was half a second a test
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return forge, server
