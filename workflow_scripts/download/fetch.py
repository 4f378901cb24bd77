"""Download one file, verified, resumable and retried.

    python -m workflow_scripts.download.fetch --url URL --out PATH \\
        [--md5-url URL | --md5 HEX | --sha256-url URL | --sha256 HEX] [--retries N] [--restricted] \\
        [--directory] [--access TEXT --local-dir-key KEY] [--sha256-key KEY]

Data goes to ``PATH.part``; after a dropped connection the next attempt asks for the rest
with an HTTP Range request. The finished file is checked against the expected digest
(and, for ``.gz``, decompressed to the end) before it is renamed to ``PATH``; a file that
fails is deleted and fetched again, never passed on. Not-found and access errors stop at
once; other failures are retried with exponential back-off.

With ``--directory`` the source is a local folder (a credentialed release the user holds),
copied whole with every file's sha256 in ``PATH/provenance.json`` (see local_copy.py).
Without an expected digest the computed sha256 is recorded and a log line says which
config key (``--sha256-key``) pins it.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import http.client
import logging
import os
import shutil
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from ..progress import progress
from . import credentials
from .checksums import expected_for, file_digest
from .local_copy import copy_tree, local_path

log = logging.getLogger(__name__)
CHUNK = 1 << 20
USER_AGENT = "biomed-lm-workflow/0.1"


class Retry(Exception):
    """A failure that another attempt may cure."""


@dataclass
class Options:
    retries: int = 5
    backoff: float = 2.0
    max_backoff: float = 120.0
    timeout: float = 60.0


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """Remove ``user:password@`` from a URL, returning them separately."""
    parts = urlsplit(url)
    if parts.username is None:
        return url, None
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    clean = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    return clean, (unquote(parts.username), unquote(parts.password or ""))


def _opener(url: str, creds: tuple[str, str] | None) -> urllib.request.OpenerDirector:
    handlers: list[urllib.request.BaseHandler] = []
    creds = creds or credentials.lookup(url)
    if creds is not None:
        mgr = urllib.request.HTTPPasswordMgrWithPriorAuth()
        mgr.add_password(None, url, creds[0], creds[1], is_authenticated=True)
        handlers.append(urllib.request.HTTPBasicAuthHandler(mgr))
    return urllib.request.build_opener(*handlers)


def _http_error(exc: urllib.error.HTTPError, url: str) -> Exception:
    safe = provenance.scrub(url)
    if exc.code in (404, 410):
        return PipelineError(f"{safe}: not found on the server (HTTP {exc.code}); check the URL or release name")
    if exc.code in (401, 403):
        return PipelineError(f"{safe}: access denied (HTTP {exc.code}); {credentials.ACCESS_HELP}")
    if exc.code == 416:
        return Retry("range not satisfiable")
    return Retry(f"HTTP {exc.code}")


def _get_http(url: str, part: Path, creds: tuple[str, str] | None, opts: Options) -> None:
    """One attempt: continue ``part`` from its current size (or start over)."""
    offset = part.stat().st_size if part.exists() else 0
    req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    if offset:
        req.add_header("Range", f"bytes={offset}-")
    try:
        resp = _opener(url, creds).open(req, timeout=opts.timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            part.unlink()
        raise _http_error(exc, url) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise Retry(f"connection failed ({type(exc).__name__})") from None
    with resp:
        if resp.status == 206:
            first = (resp.headers.get("Content-Range") or "").replace("bytes ", "").split("-")[0]
            if first != str(offset):
                part.unlink(missing_ok=True)
                raise Retry("server resumed at the wrong offset")
            mode = "ab"
        else:
            offset, mode = 0, "wb"
        length = resp.headers.get("Content-Length")
        expected = offset + int(length) if length and length.isdigit() else None
        got = offset
        bar = progress(f"download {part.name[:-5]}", expected, "B")
        with bar, open(part, mode) as fh:
            bar.update(offset)
            while True:
                try:
                    block = resp.read(CHUNK)
                except (OSError, http.client.HTTPException) as exc:
                    raise Retry(f"connection dropped at byte {got} ({type(exc).__name__})") from None
                if not block:
                    break
                fh.write(block)
                got += len(block)
                bar.update(len(block))
        if expected is not None and got < expected:
            raise Retry(f"connection dropped at byte {got} of {expected}")


def _get_file(url: str, part: Path) -> None:
    src = local_path(url)
    if src.is_dir():
        raise PipelineError(
            f"{url}: is a folder; declare the entry as one (directory: true in the task's source.files)"
        )
    if not src.is_file():
        raise PipelineError(f"{url}: file not found")
    shutil.copyfile(src, part)


def _verify_gzip(path: Path) -> str | None:
    try:
        with gzip.open(path, "rb") as fh:
            while fh.read(CHUNK):
                pass
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        return f"truncated or corrupt gzip ({exc})"
    return None


def fetch_text(url: str, opts: Options) -> str:
    """A small file (a checksum file), retried like the data itself."""
    url, creds = split_credentials(url)
    safe = provenance.scrub(url)
    for attempt in range(opts.retries + 1):
        try:
            if urlsplit(url).scheme in ("http", "https"):
                req = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
                with _opener(url, creds).open(req, timeout=opts.timeout) as resp:
                    return resp.read().decode("utf-8")
            src = local_path(url)
            if not src.is_file():
                raise PipelineError(f"{safe}: file not found")
            return src.read_text(encoding="utf-8")
        except urllib.error.HTTPError as exc:
            err = _http_error(exc, url)
            if isinstance(err, PipelineError):
                raise err from None
            reason = str(err)
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = f"connection failed ({type(exc).__name__})"
        _sleep(attempt, opts, f"{safe}: {reason}")
    raise PipelineError(f"{safe}: failed after {opts.retries + 1} attempt(s); check the network and the URL")


def _sleep(attempt: int, opts: Options, why: str) -> None:
    if attempt >= opts.retries:
        return
    delay = min(opts.backoff * (2**attempt), opts.max_backoff)
    log.warning("%s; retrying in %.1f s (attempt %d of %d)", why, delay, attempt + 2, opts.retries + 1)
    time.sleep(delay)


def fetch(
    url: str, out: str | Path, *, algo: str | None = None, digest: str | None = None, opts: Options | None = None
) -> dict:
    """Download ``url`` to ``out``; verify ``digest`` (md5/sha256 hex) and gzip integrity."""
    opts = opts or Options()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    url, creds = split_credentials(url)
    safe = provenance.scrub(url)
    scheme = urlsplit(url).scheme
    part = out.with_name(out.name + ".part")
    problem = "no attempt made"
    # A local copy that fails its check fails the same way again: no retries.
    if scheme in ("file", ""):
        opts = dataclasses.replace(opts, retries=0)
    attempts = opts.retries + 1
    for attempt in range(attempts):
        try:
            if scheme in ("http", "https"):
                _get_http(url, part, creds, opts)
            elif scheme in ("file", ""):
                _get_file(url, part)
            else:
                raise PipelineError(f"{safe}: unsupported URL scheme {scheme!r} (use http, https or file)")
        except Retry as exc:
            problem = str(exc)
            _sleep(attempt, opts, f"{safe}: {problem}")
            continue
        if digest is not None:
            got = file_digest(part, algo)
            if got != digest:
                part.unlink()
                problem = f"{algo} mismatch for {out.name}: expected {digest}, got {got}"
                _sleep(attempt, opts, f"{safe}: {problem}")
                continue
        if out.name.endswith(".gz"):
            bad = _verify_gzip(part)
            if bad is not None:
                part.unlink()
                problem = f"{out.name}: {bad}"
                _sleep(attempt, opts, f"{safe}: {problem}")
                continue
        size = part.stat().st_size
        os.replace(part, out)
        return {"bytes": size, "attempts": attempt + 1}
    part.unlink(missing_ok=True)
    raise PipelineError(f"{safe}: download failed after {attempts} attempt(s): {problem}")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", help="http(s) or file URL, or a local path")
    ap.add_argument("--out", required=True, help="destination path")
    group = ap.add_mutually_exclusive_group()
    group.add_argument("--md5-url", help="URL of the published .md5 file (saved as OUT.md5)")
    group.add_argument("--md5", help="expected md5 (hex)")
    group.add_argument("--sha256-url", help="URL of a SHA256SUMS file listing OUT's name (PhysioNet)")
    group.add_argument("--sha256", help="expected sha256 (hex)")
    ap.add_argument("--retries", type=int, default=5, help="retries after the first attempt")
    ap.add_argument("--backoff", type=float, default=2.0, help="first retry delay in seconds (doubles each time)")
    ap.add_argument("--timeout", type=float, default=60.0, help="socket timeout in seconds")
    ap.add_argument("--restricted", action="store_true", help="credentialed data: mark the provenance restricted")
    ap.add_argument("--access", help="credentialed data without a URL: how to obtain it (the error says so)")
    ap.add_argument("--local-dir-key", help="config key of the user's local copy (named in the error when unset)")
    ap.add_argument("--directory", action="store_true", help="the source is a local folder: copy it whole")
    ap.add_argument("--sha256-key", help="config key that pins this file's sha256 (logged when none is given)")
    return ap


def no_source(args: argparse.Namespace) -> PipelineError:
    """The error for a file or folder whose config names no source: where to get it, where to put it."""
    where = (
        f"then set {args.local_dir_key} in config.yaml to the folder holding your copy"
        if args.local_dir_key
        else "give its url, or a local directory holding it, in the config"
    )
    return PipelineError(
        f"{args.out}: no download source is configured for this {'folder' if args.directory else 'file'}. "
        + (f"{args.access.rstrip('.')}; {where}." if args.access else f"{where[0].upper()}{where[1:]}.")
    )


def expected_checksum(args: argparse.Namespace, out: Path, opts: Options) -> tuple[str | None, str | None, str | None]:
    """(algorithm, digest, the published .md5 file's text) from the checksum options, each
    published file fetched and read for ``out``'s entry; (None, None, None) without one."""
    if args.md5_url:
        md5_text = fetch_text(args.md5_url, opts)
        return "md5", expected_for(md5_text, provenance.scrub(args.md5_url), out.name, "md5"), md5_text
    if args.sha256_url:
        sums = fetch_text(args.sha256_url, opts)
        return "sha256", expected_for(sums, provenance.scrub(args.sha256_url), out.name, "sha256"), None
    if args.md5:
        return "md5", args.md5.strip().lower(), None
    if args.sha256:
        return "sha256", args.sha256.strip().lower(), None
    return None, None, None


def main(argv: Sequence[str] | None = None) -> None:
    args = parser().parse_args(argv)
    if not args.url:
        raise no_source(args)
    started = provenance.now()
    if args.directory:
        if urlsplit(args.url).scheme not in ("file", ""):
            raise PipelineError(f"{provenance.scrub(args.url)}: a folder source must be a local path")
        copy_tree(
            local_path(args.url),
            Path(args.out),
            shown=provenance.scrub(args.url),
            restricted=args.restricted,
            started=started,
        )
        return
    opts = Options(retries=max(0, args.retries), backoff=args.backoff, timeout=args.timeout)
    out = Path(args.out)
    checksum_url = args.md5_url or args.sha256_url
    algo, digest, md5_text = expected_checksum(args, out, opts)
    result = fetch(args.url, out, algo=algo, digest=digest, opts=opts)
    if md5_text is not None:
        write_text(out.with_name(out.name + ".md5"), md5_text)
    log.info("%s: %d bytes in %d attempt(s)", out, result["bytes"], result["attempts"])
    if digest is None:
        got = provenance.sha256_file(out)
        log.warning(
            "%s: no checksum was given; its sha256 is %s (recorded in its provenance). Pin it so a "
            "changed or corrupted file is noticed: %s: %s",
            out,
            got,
            args.sha256_key or "the source's sha256 setting",
            got,
        )
    provenance.record(
        out,
        step="download.fetch",
        inputs={},
        params={
            "url": provenance.scrub(split_credentials(args.url)[0]),
            "checksum_url": provenance.scrub(split_credentials(checksum_url)[0]) if checksum_url else None,
            "algorithm": algo,
            "expected": digest,
            "bytes": result["bytes"],
            "attempts": result["attempts"],
        },
        outputs=[out],
        restricted=args.restricted,
        started=started,
    )


if __name__ == "__main__":
    run(main)
