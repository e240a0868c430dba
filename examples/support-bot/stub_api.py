"""A stand-in for the orders and catalog APIs, for tool tests on the local emulator.

    python stub_api.py [PORT]        # default 8089, the local environment's ORDERS_URL

The emulator calls OpenAPI servers on loopback only; this one answers the two
operations the example's schemas describe. Standard library only.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ORDERS = {
    "A100": {"orderId": "A100", "status": "shipped", "total": 59.9},
    "A200": {"orderId": "A200", "status": "processing", "total": 12.5},
}
PRODUCTS = {"p1": {"id": "p1", "name": "Kettle", "price": 39.0}}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the http.server API
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
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 8089
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"stub API on http://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
