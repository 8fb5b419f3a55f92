#!/usr/bin/env python3
"""Serves the web bundle the way a production server would: each file
precompressed by scripts/build-web.sh (`.br`, `.gz`) is sent compressed when
the browser accepts it, with the right types and Content-Encoding, and
with validators: every response carries an ETag and `Cache-Control:
no-cache`, so a reload asks "changed?" and gets 304 Not Modified instead of
the 2 MB bundle again, while a new build is picked up at once.

    python3 web/serve.py [DIR] [PORT]      # default: web/dist 8080
"""
import http.server
import os
import sys

TYPES = {".wasm": "application/wasm", ".js": "text/javascript", ".html": "text/html",
         ".dlds": "application/octet-stream", ".otf": "font/otf"}


class Handler(http.server.SimpleHTTPRequestHandler):
    def send_head(self):
        path = self.translate_path(self.path.split("?", 1)[0])
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        accepted = self.headers.get("Accept-Encoding", "")
        for encoding, suffix in (("br", ".br"), ("gzip", ".gz"), (None, "")):
            file = path + suffix
            if (encoding and encoding not in accepted) or not os.path.isfile(file):
                continue
            stat = os.stat(file)
            tag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}-{encoding or "identity"}"'
            if tag in self.headers.get("If-None-Match", ""):
                self.send_response(304)
                self.send_header("ETag", tag)
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Vary", "Accept-Encoding")
                self.end_headers()
                return None
            body = open(file, "rb")
            self.send_response(200)
            kind = self.guess_type(path)
            self.send_header("Content-Type", kind)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Content-Length", str(stat.st_size))
            self.send_header("ETag", tag)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Vary", "Accept-Encoding")
            self.end_headers()
            return body
        return super().send_head()

    def log_message(self, *args):
        pass


Handler.extensions_map.update(TYPES)

if __name__ == "__main__":
    directory = sys.argv[1] if len(sys.argv) > 1 else "web/dist"
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 8080
    handler = lambda *a, **k: Handler(*a, directory=directory, **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    print(f"serving {directory} on http://127.0.0.1:{port}/ (compressed where the browser accepts it)")
    server.serve_forever()
