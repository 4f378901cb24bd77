"""A task file as users save it: the same content with a byte-order mark, CRLF line ends, trailing
spaces or no final newline must read as the original; another encoding, a NUL byte or a file cut
inside a character must stop with the error that names the file and line."""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from workflow_scripts.errors import PipelineError

SAME = ("bom", "crlf", "trailing_spaces", "no_final_newline")
ERRORS = {
    "latin1_byte": r"byte 0xE9 is not UTF-8 .*; re-save it as UTF-8",
    "nul": r"NUL byte at column \d+; .*remove the byte",
    "utf16": r"UTF-16 text \(byte-order mark FF FE\); re-save it as UTF-8",
    "truncated": r"the file ends inside a character: it is truncated; copy or download it again",
}
VARIATIONS = (*SAME, *ERRORS, "empty")


def _middle_line(lines: list[bytes]) -> int:
    """Index of the middle line that holds a letter (where a damaged byte lands)."""
    lettered = [i for i, line in enumerate(lines) if re.search(rb"[A-Za-z]", line)]
    return lettered[len(lettered) // 2]


def vary(data: bytes, variation: str) -> tuple[bytes, int]:
    """The file's bytes in ``variation`` and the line an error must name."""
    lines = data.split(b"\n")
    if variation == "bom":
        return codecs.BOM_UTF8 + data, 0
    if variation == "crlf":
        return data.replace(b"\n", b"\r\n"), 0
    if variation == "trailing_spaces":
        return b"  \n".join(lines), 0
    if variation == "no_final_newline":
        return data.rstrip(b"\n"), 0
    if variation in ("latin1_byte", "nul"):
        k = _middle_line(lines)
        at = re.search(rb"[A-Za-z]", lines[k]).start()
        bad = b"\xe9" if variation == "latin1_byte" else b"\x00"
        lines[k] = lines[k][:at] + bad + lines[k][at + 1 :]
        return b"\n".join(lines), k + 1
    if variation == "utf16":
        return codecs.BOM_UTF16_LE + data.decode("utf-8").encode("utf-16-le"), 1
    if variation == "truncated":
        kept = data.rstrip(b"\n")
        return kept + "é".encode()[:1], kept.count(b"\n") + 1
    return b"", 0


def check(
    read: Callable[[], list[dict]],
    file: Path,
    shown: str,
    variation: str,
    reference: list[dict],
    refused: dict[str, str] | None = None,
) -> None:
    """Write ``file`` (shown in errors as ``shown``) in ``variation`` and check what ``read`` gives.
    ``refused``: variations the format cannot take (character offsets and added spaces), with the
    error that must name the file instead."""
    data, line = vary(file.read_bytes(), variation)
    file.write_bytes(data)
    if variation in (refused or {}):
        with pytest.raises(PipelineError, match=rf"^{re.escape(shown)}:\d+: .*{refused[variation]}"):
            read()
    elif variation in SAME:
        assert read() == reference
    elif variation in ERRORS:
        with pytest.raises(PipelineError, match=rf"^{re.escape(shown)}:{line}: {ERRORS[variation]}"):
            read()
    else:
        # An empty file gives no records, or an error naming it; never a record it does not hold.
        try:
            records = read()
        except PipelineError as exc:
            assert Path(shown).name in str(exc)
        else:
            assert all(r in reference for r in records)
