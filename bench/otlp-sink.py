#!/usr/bin/env python3
"""otlp-sink.py PORT — an OTLP/HTTP receiver that accepts and discards.

bench/gateway.sh starts it (OTLP_SINK=1) so the gateway's trace export has
somewhere to go while its cost is measured. Answers every POST with 200 and
an empty protobuf body (an empty ExportTraceServiceResponse), and counts the
bytes received, printed on SIGTERM.
"""
import http.server
import signal
import sys

received = {"posts": 0, "bytes": 0}


class Sink(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        received["posts"] += 1
        received["bytes"] += length
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Sink)

    def stop(*_):
        print(f"otlp sink: {received['posts']} exports, {received['bytes']} bytes", file=sys.stderr)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()


if __name__ == "__main__":
    main()
