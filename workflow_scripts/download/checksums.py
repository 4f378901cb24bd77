"""Checksum files as servers publish them, and digests of local files."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from ..errors import PipelineError

# OpenSSL (`MD5(pubmed26n0001.xml.gz)= <hex>`, as NCBI publishes) and coreutils
# (`<hex>  name` or `<hex> *name`, as md5sum/sha256sum and PhysioNet write).
_OPENSSL = re.compile(r"^(?P<algo>MD5|SHA256)\s*\((?P<name>.+)\)\s*=\s*(?P<hex>[0-9a-fA-F]+)\s*$")
_COREUTILS = re.compile(r"^(?P<hex>[0-9a-fA-F]{32}|[0-9a-fA-F]{64})\s+\*?(?P<name>.+?)\s*$")
LENGTH = {"md5": 32, "sha256": 64}


def parse_checksums(text: str, source: str) -> dict[str, str]:
    """File name -> lower-case hex digest, from a checksum file in either format."""
    out: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _OPENSSL.match(line.strip()) or _COREUTILS.match(line.strip())
        if m is None:
            raise PipelineError(
                f"{source}:{lineno}: not a checksum line (expected 'MD5(name)= hex' or 'hex  name'): {line[:80]!r}"
            )
        out[Path(m.group("name").strip()).name] = m.group("hex").lower()
    return out


def expected_for(text: str, source: str, filename: str, algo: str) -> str:
    """The digest listed for ``filename``; a single-entry file may name it differently."""
    sums = parse_checksums(text, source)
    digest = sums.get(filename)
    if digest is None and len(sums) == 1:
        digest = next(iter(sums.values()))
    if digest is None:
        raise PipelineError(f"{source}: no checksum listed for {filename}")
    if len(digest) != LENGTH[algo]:
        raise PipelineError(f"{source}: checksum for {filename} is not a {algo} digest ({digest})")
    return digest


def file_digest(path: str | Path, algo: str, chunk: int = 1 << 20) -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            h.update(block)
    return h.hexdigest()
