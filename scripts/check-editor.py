#!/usr/bin/env python3
"""Checks that a conclave binary serves its built-in editor: starts `conclave serve`
in an empty directory on a free loopback port, fetches the editor's page and its wasm
bundle (as it is, and with Brotli as a browser asks for it) with the token the server
prints, and stops it. Exits 1 with what went wrong.

Usage: python3 scripts/check-editor.py PATH/TO/conclave
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, headers=None):
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers.get("content-type", ""), response.read(), response.headers


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: check-editor.py PATH/TO/conclave")
    binary = os.path.abspath(sys.argv[1])
    port = free_port()
    with tempfile.TemporaryDirectory() as empty:
        env = dict(os.environ, CONCLAVE_DB=os.path.join(empty, "runs.db"))
        env.pop("CONCLAVE_EDITOR_DIR", None)
        server = subprocess.Popen(
            [binary, "serve", "--bind", f"127.0.0.1:{port}"],
            cwd=empty, env=env, stderr=subprocess.PIPE, text=True,
        )
        try:
            banner = server.stderr.readline()
            url = re.search(r"http://\S+", banner)
            if not url:
                sys.exit(f"check-editor: conclave serve printed no URL: {banner.strip()}")
            base = url.group(0).split("#")[0].rstrip("/")
            for _ in range(50):
                try:
                    kind, page, _ = fetch(base + "/")
                    break
                except OSError:
                    time.sleep(0.1)
            else:
                sys.exit("check-editor: conclave serve did not answer")
            if b"/boot.js" not in page:
                sys.exit("check-editor: conclave serves no editor; run scripts/build-editor.sh, then rebuild conclave")
            kind, wasm, _ = fetch(base + "/conclave-client_bg.wasm")
            if kind != "application/wasm" or not wasm.startswith(b"\0asm"):
                sys.exit(f"check-editor: the editor's bundle is not served as wasm ({kind})")
            _, brotli, headers = fetch(base + "/conclave-client_bg.wasm", {"Accept-Encoding": "br"})
            if headers.get("content-encoding") != "br":
                sys.exit("check-editor: the editor's bundle is not served with Brotli to a browser that asks for it")
            print(
                f"the editor is built in: {len(wasm) // 1024} KB of wasm, {len(brotli) // 1024} KB as served with "
                "Brotli, from an empty directory"
            )
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
