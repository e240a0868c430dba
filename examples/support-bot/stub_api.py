"""A stand-in for the orders and catalog APIs, for tool tests on the local emulator.

    python stub_api.py                      # on http://127.0.0.1:8089, the local environment's ORDERS_URL
    python stub_api.py --port 0             # on a free port (0): another run on this machine cannot collide
    python stub_api.py --port 0 --background   # the same, returning once it listens; it stops with `kill PID`

It prints its URL (alone on stdout, so that ``$(...)`` takes it) once it listens; give that to
the local environment as ``CESYNC_VAR_ORDERS_URL``. The emulator calls OpenAPI servers on
loopback only; this one answers the operations the example's schemas describe. Standard
library only.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORDERS = {
    "A100": {"orderId": "A100", "status": "shipped", "total": 59.9},
    "A200": {"orderId": "A200", "status": "processing", "total": 12.5},
}
PRODUCTS = {"p1": {"id": "p1", "name": "Kettle", "price": 39.0}}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        parts = [p for p in self.path.split("?")[0].split("/") if p]
        if parts[:1] == ["orders"] and len(parts) == 2:
            self._answer(ORDERS.get(parts[1]), f"no order {parts[1]}")
        elif parts == ["products"]:
            self._answer({"products": list(PRODUCTS.values())}, "")
        elif parts[:1] == ["products"] and len(parts) == 2:
            self._answer(PRODUCTS.get(parts[1]), f"no product {parts[1]}")
        else:
            self._answer(None, f"no route {self.path}")

    def _answer(self, body: object, missing: str) -> None:
        status = 200 if body is not None else 404
        data = json.dumps(body if body is not None else {"message": missing}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description="The example's orders and catalog APIs on loopback.")
    parser.add_argument("--port", type=int, default=8089, help="0: a free port (default: %(default)s)")
    parser.add_argument("--background", action="store_true", help="serve from a child process and return once it listens")
    args = parser.parse_args()
    if args.background:
        # The child serves on; this process only passes its URL on, so that the caller's $(...)
        # ends here while the child's stdout, a pipe of ours, is never written again.
        child = subprocess.Popen(
            [sys.executable, __file__, "--port", str(args.port)], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
        )
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        if not url:
            sys.exit(child.wait() or 1)  # it could not listen: its error is on stderr
        print(url, flush=True)
        print(f"stub API (pid {child.pid}) on {url}: stop it with kill {child.pid}", file=sys.stderr)
        return
    try:
        server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)  # listening once this returns
    except OSError as exc:
        sys.exit(f"stub API: cannot listen on 127.0.0.1:{args.port}: {exc.strerror} (--port 0 takes a free port)")
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
