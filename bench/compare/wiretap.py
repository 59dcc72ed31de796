"""A recording proxy on 127.0.0.1: what each library actually sends, for the docs' table.

pydynox sends from Rust, beyond botocore's event hooks, so the requests are read where every
library's requests meet: on the wire. :class:`Wiretap` forwards each request to DynamoDB Local
unchanged and keeps its operation (``X-Amz-Target``) and JSON body. Used once per run, outside
the timed rounds.
"""

from __future__ import annotations

import http.client
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

#: request parameters shown by value in the summary (the rest only by name)
SHOWN = ("ConditionExpression", "UpdateExpression", "ReturnValues", "ReturnConsumedCapacity",
         "ReturnValuesOnConditionCheckFailure", "ProjectionExpression", "ConsistentRead", "Limit", "Select")


class Wiretap:
    """A proxy to ``endpoint`` recording ``(operation, body)`` of every request; a context manager."""

    def __init__(self, endpoint: str) -> None:
        target = urlsplit(endpoint)
        self.records: list[tuple[str, dict[str, Any]]] = []
        tap = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                operation = self.headers.get("X-Amz-Target", "").rpartition(".")[2]
                tap.records.append((operation, json.loads(body or b"{}")))
                upstream = http.client.HTTPConnection(target.hostname, target.port, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                upstream.request("POST", self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for k, v in answer.getheaders():
                    if k.lower() not in ("content-length", "connection", "transfer-encoding", "date", "server"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> Wiretap:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def take(self) -> list[tuple[str, dict[str, Any]]]:
        """The requests recorded since the last call, oldest first."""
        taken, self.records = self.records, []
        return taken


def summary(records: list[tuple[str, dict[str, Any]]]) -> str:
    """One line for the requests of one operation: ``PutItem ×1: ConditionExpression=...; 13 attributes``."""
    if not records:
        return "no request"
    ops: dict[str, int] = {}
    for op, _ in records:
        ops[op] = ops.get(op, 0) + 1
    op, body = records[-1]  # the operation's own request (a first call may read a key-version record first)
    parts = [f"{k}={body[k]}" for k in SHOWN if k in body]
    if "Item" in body:
        parts.append(f"{len(body['Item'])} attributes")
    if op == "BatchWriteItem":
        parts.append(f"{sum(len(v) for v in body['RequestItems'].values())} puts per request")
    if op == "BatchGetItem":
        parts.append(f"{sum(len(v['Keys']) for v in body['RequestItems'].values())} keys per request")
    counts = ", ".join(f"{name} ×{n}" for name, n in ops.items())
    return counts + (": " + "; ".join(parts) if parts else "")
