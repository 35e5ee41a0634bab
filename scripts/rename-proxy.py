#!/usr/bin/env python3
"""A loopback HTTP proxy that lets a test client call a gateway's tools and
prompts by the names their server gave them.

The gateway serves every tool and prompt of a mounted server as
mcp__ALIAS__NAME. The official conformance suite calls its fixtures by their
own names (test_simple_text, test_simple_prompt, ...). Between the two, this
proxy changes names only, nothing else:

  requests   tools/call and prompts/get: params.name and the Mcp-Name header
             get the prefix; completion/complete: a ref/prompt's name does.
  responses  tools/list and prompts/list: the prefix is taken off each name
             (JSON bodies and each `data:` line of an event stream).

Every other byte, header and status passes through as it came, streams as
they arrive. A body that is not JSON is passed on untouched.

Usage: rename-proxy.py UPSTREAM_URL PREFIX
Prints "listening on http://127.0.0.1:PORT/mcp" once it accepts connections.
"""

import base64
import http.client
import http.server
import json
import sys
import urllib.parse

UPSTREAM = urllib.parse.urlsplit(sys.argv[1])
PREFIX = sys.argv[2]
# Not copied from one side to the other: the proxy frames bodies itself.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}
B64 = ("=?base64?", "?=")


def prefixed(name):
    return name if name.startswith(PREFIX) else PREFIX + name


def rename_header(value):
    """The Mcp-Name header with the prefix, keeping its encoding."""
    if value.startswith(B64[0]) and value.endswith(B64[1]):
        inner = value[len(B64[0]) : -len(B64[1])]
        try:
            name = base64.b64decode(inner, validate=True).decode("utf-8")
        except ValueError:
            return value
        return B64[0] + base64.b64encode(prefixed(name).encode()).decode() + B64[1]
    return prefixed(value)


def rename_request(message):
    """Adds the prefix to the names a request gives; True when it did."""
    if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
        return False
    params = message["params"]
    method = message.get("method")
    if method in ("tools/call", "prompts/get") and isinstance(params.get("name"), str):
        params["name"] = prefixed(params["name"])
        return True
    ref = params.get("ref")
    if method == "completion/complete" and isinstance(ref, dict) and ref.get("type") == "ref/prompt":
        if isinstance(ref.get("name"), str):
            ref["name"] = prefixed(ref["name"])
            return True
    return False


def rename_response(message):
    """Takes the prefix off the names a list result carries."""
    if not isinstance(message, dict) or not isinstance(message.get("result"), dict):
        return message
    for key in ("tools", "prompts"):
        for item in message["result"].get(key) or []:
            name = item.get("name") if isinstance(item, dict) else None
            if isinstance(name, str) and name.startswith(PREFIX):
                item["name"] = name[len(PREFIX) :]
    return message


def renamed_body(raw, rename):
    """The body with names changed, or None when it is not JSON."""
    try:
        message = json.loads(raw)
    except ValueError:
        return None
    if isinstance(message, list):
        changed = [rename(m) for m in message]
    else:
        changed = rename(message)
    return json.dumps(changed, separators=(",", ":")).encode()


class Proxy(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        self.forward()

    def do_POST(self):
        self.forward()

    def do_DELETE(self):
        self.forward()

    def forward(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body:
            try:
                message = json.loads(body)
            except ValueError:
                message = None
            if message is not None and rename_request(message):
                body = json.dumps(message, separators=(",", ":")).encode()
                for key in list(headers):
                    if key.lower() == "mcp-name":
                        headers[key] = rename_header(headers[key])
        upstream = http.client.HTTPConnection(UPSTREAM.hostname, UPSTREAM.port, timeout=120)
        try:
            upstream.request(self.command, self.path, body=body or None, headers=headers)
            reply = upstream.getresponse()
        except OSError as e:
            self.send_error(502, f"the upstream gateway: {e}")
            return
        kind = reply.getheader("Content-Type", "")
        self.send_response_only(reply.status, reply.reason)
        for key, value in reply.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)
        if kind.startswith("text/event-stream"):
            self.stream(reply)
        else:
            data = reply.read()
            if kind.startswith("application/json"):
                data = renamed_body(data, rename_response) or data
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        upstream.close()

    def stream(self, reply):
        """An event stream, passed on line by line (the connection closes
        at its end, which frames it)."""
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        while True:
            line = reply.readline()
            if not line:
                return
            if line.startswith(b"data:"):
                payload = line[5:].strip()
                changed = renamed_body(payload, rename_response)
                if changed is not None:
                    line = b"data: " + changed + b"\n"
            try:
                self.wfile.write(line)
                self.wfile.flush()
            except OSError:
                return


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    print(f"listening on http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
