#!/usr/bin/env python3
"""A webhook receiver on an ephemeral loopback port for the watch tests.
Appends each POST body as one line to LOG; answers 500 to the first FAIL
requests, then 200 "ok" (as Slack does). Writes its port to PORTFILE.

usage: receiver.py PORTFILE LOG FAIL
"""
import http.server
import sys

port_file, log, fail = sys.argv[1], sys.argv[2], int(sys.argv[3])
state = {"n": 0}


class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        state["n"] += 1
        code = 500 if state["n"] <= fail else 200
        if code == 200:
            with open(log, "ab") as f:
                f.write(body.replace(b"\n", b" ") + b"\n")
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"ok" if code == 200 else b"busy")

    def log_message(self, *args):
        pass


srv = http.server.HTTPServer(("127.0.0.1", 0), H)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
