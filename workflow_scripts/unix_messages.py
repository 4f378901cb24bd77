"""Messages between the preloaded interpreter and its commands (workflow_scripts/preload.py): JSON with
a 4-byte length before it, over a Unix socket, and open descriptors (the command's standard streams)
passed beside the first bytes."""

from __future__ import annotations

import json
import socket
import struct


def send_message(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    header = struct.pack("!I", len(data))
    if fds:
        socket.send_fds(sock, [header], fds)
        sock.sendall(data)
    else:
        sock.sendall(header + data)


def receive_message(sock: socket.socket, with_fds: int = 0) -> tuple[dict | None, list[int]]:
    fds: list[int] = []
    if with_fds:
        header, fds, _, _ = socket.recv_fds(sock, 4, with_fds)
    else:
        header = sock.recv(4)
    while header and len(header) < 4:
        more = sock.recv(4 - len(header))
        if not more:
            break
        header += more
    if len(header) < 4:
        return None, fds
    (size,) = struct.unpack("!I", header)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None, fds
        data += chunk
    return json.loads(data), fds
