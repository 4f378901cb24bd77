"""Users' text files, read one strict way: UTF-8 only, as spreadsheet programs, Windows editors
and scripts save them.

A UTF-8 byte-order mark is dropped and CRLF line ends become LF, so the same content reads the
same however it was saved. Anything that would put wrong characters into the data (another
encoding, a NUL byte, a file cut inside a character) stops with one line naming the file and
line, what was found and what to do.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from .errors import PipelineError

# Longest first: the UTF-32 little-endian mark begins with UTF-16's.
_WIDE_MARKS = (
    (codecs.BOM_UTF32_LE, "UTF-32"),
    (codecs.BOM_UTF32_BE, "UTF-32"),
    (codecs.BOM_UTF16_LE, "UTF-16"),
    (codecs.BOM_UTF16_BE, "UTF-16"),
)
RESAVE = "re-save it as UTF-8"


def _wide_encoding(head: bytes, name: str) -> None:
    for mark, encoding in _WIDE_MARKS:
        if head.startswith(mark):
            raise PipelineError(f"{name}:1: {encoding} text (byte-order mark {mark.hex(' ').upper()}); {RESAVE}")


def _nul(data: bytes, at: int, name: str, first_line: int = 1) -> PipelineError:
    line = first_line + data.count(b"\n", 0, at)
    column = at - (data.rfind(b"\n", 0, at) + 1) + 1
    if data[1::2].count(0) > len(data) // 4:
        # ASCII saved as UTF-16 without a byte-order mark: every other byte is NUL.
        return PipelineError(f"{name}:{line}: NUL bytes between the characters: UTF-16 text; {RESAVE}")
    return PipelineError(
        f"{name}:{line}: NUL byte at column {column}; the file is binary or damaged: "
        "remove the byte or copy the file again"
    )


def _undecodable(data: bytes, exc: UnicodeDecodeError, name: str, first_line: int = 1) -> PipelineError:
    line = first_line + data.count(b"\n", 0, exc.start)
    if exc.reason == "unexpected end of data":
        return PipelineError(
            f"{name}:{line}: the file ends inside a character: it is truncated; copy or download it again"
        )
    byte = data[exc.start]
    return PipelineError(
        f"{name}:{line}: byte 0x{byte:02X} is not UTF-8 (the file looks latin-1 or Windows-1252 encoded); {RESAVE}"
    )


def decode_text(data: bytes, name: str) -> str:
    """The text of a whole file's bytes: UTF-8 with its byte-order mark dropped, CRLF as LF."""
    _wide_encoding(data[:4], name)
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    at = data.find(b"\0")
    if at >= 0:
        raise _nul(data, at, name)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _undecodable(data, exc, name) from exc
    return text.replace("\r\n", "\n")


def read_text(path: Path, name: str) -> str:
    """A user's text file, strictly (see the module); ``name`` is how errors show it."""
    return decode_text(Path(path).read_bytes(), name)


def text_lines(raw: BinaryIO, name: str) -> Iterator[str]:
    """The lines of a binary stream too large to hold (line ends kept, CRLF as LF), checked as
    ``decode_text`` checks a whole file; for readers such as ``csv`` that take an iterator."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    number = 0
    for index, chunk in enumerate(raw):
        if index == 0:
            _wide_encoding(chunk[:4], name)
            if chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
        number += 1
        at = chunk.find(b"\0")
        if at >= 0:
            raise _nul(chunk, at, name, number)
        try:
            line = decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            raise _undecodable(chunk, exc, name, number) from exc
        yield line[:-2] + "\n" if line.endswith("\r\n") else line
    try:
        decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise _undecodable(b"", exc, name, number) from exc
