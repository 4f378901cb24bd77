"""A model hub on 127.0.0.1, serving a real checkpoint folder in the hub's HTTP layout.

``GET /api/models/<repo>/revision/<rev>?blobs=true`` answers the commit and the files (git blob ids;
sha256 for large files), ``GET /<repo>/resolve/<commit>/<path>`` the bytes (large files through a
redirect, as the hub sends them to its storage). Point ``HF_ENDPOINT`` at ``url``.
"""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LARGE = 1 << 20


def _sibling(root: Path, path: Path) -> dict:
    data = path.read_bytes()
    entry = {
        "rfilename": path.relative_to(root).as_posix(),
        "size": len(data),
        "blobId": hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest(),
    }
    if len(data) >= LARGE:
        entry["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
    return entry


class Hub:
    """``repos`` maps a repository id to the folder it serves; ``tamper`` names files served wrong."""

    def __init__(self, repos: dict[str, Path]) -> None:
        self.repos, self.tamper, self.requests = repos, set(), []
        hub = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                hub.requests.append(self.path)
                status, body, headers = hub.answer(unquote(urlsplit(self.path).path))
                self.send_response(status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str) -> tuple[int, bytes, dict]:
        for repo, root in self.repos.items():
            if path.startswith(f"/api/models/{repo}/revision/"):
                if path.rsplit("/", 1)[1] not in ("main", COMMIT):
                    return 404, b"revision not found", {}
                files = [_sibling(root, p) for p in sorted(root.rglob("*")) if p.is_file()]
                return 200, json.dumps({"id": repo, "sha": COMMIT, "siblings": files}).encode(), {}
            prefix = f"/{repo}/resolve/{COMMIT}/"
            if path.startswith(prefix) and (root / path[len(prefix) :]).is_file():
                name = path[len(prefix) :]
                if (root / name).stat().st_size >= LARGE:
                    return 302, b"", {"Location": f"/storage/{repo}/{name}"}
                return 200, self._bytes(root, name), {}
            if path.startswith(f"/storage/{repo}/"):
                return 200, self._bytes(root, path[len(f"/storage/{repo}/") :]), {}
        return 404, b"not found", {}

    def _bytes(self, root: Path, name: str) -> bytes:
        data = (root / name).read_bytes()
        return data[:-1] + bytes([data[-1] ^ 1]) if name in self.tamper else data

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
