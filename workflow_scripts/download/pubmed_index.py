"""The files of a PubMed release, as listed by the server's directory index.

    python -m workflow_scripts.download.pubmed_index --url https://ftp.ncbi.nlm.nih.gov/pubmed/baseline/ \\
        --out results/raw/pubmed/{release}/baseline.txt [--year 26] [--retries N]

Writes one file name per line (ascending), the application order of the parse jobs.
``release_files`` names the files of a release without the network, for dry runs.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from .fetch import Options, fetch_text

log = logging.getLogger(__name__)
_NAME = re.compile(r"\b(pubmed(\d{2})n(\d{4})\.xml\.gz)\b(?!\.md5)")


def parse_index(html: str, year: int | None = None) -> list[str]:
    """Data file names in a directory listing (checksum and notes files left out), ascending."""
    names = {m.group(1) for m in _NAME.finditer(html) if year is None or int(m.group(2)) == year % 100}
    return sorted(names, key=lambda n: int(_NAME.match(n).group(3)))


def release_files(year: int, first: int, last: int) -> list[str]:
    """``pubmed{YY}n{NNNN}.xml.gz`` for NNNN in first..last."""
    return [f"pubmed{year % 100:02d}n{i:04d}.xml.gz" for i in range(first, last + 1)]


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True, help="directory URL (baseline/ or updatefiles/)")
    ap.add_argument("--out", required=True, help="text file to write, one file name per line")
    ap.add_argument("--year", type=int, help="keep only files of this release year (e.g. 26 or 2026)")
    ap.add_argument("--retries", type=int, default=5, help="retries after the first attempt")
    args = ap.parse_args(argv)
    started = provenance.now()
    html = fetch_text(args.url, Options(retries=max(0, args.retries)))
    names = parse_index(html, args.year)
    if not names:
        raise PipelineError(
            f"{provenance.scrub(args.url)}: no pubmedYYnNNNN.xml.gz files listed"
            + (f" for year {args.year}" if args.year else "")
            + "; check the URL and release"
        )
    write_text(args.out, "".join(n + "\n" for n in names))
    log.info("%s: %d files", args.out, len(names))
    provenance.record(
        args.out,
        step="download.pubmed_index",
        inputs={},
        params={"url": provenance.scrub(args.url), "year": args.year, "files": len(names)},
        outputs=[args.out],
        started=started,
    )


if __name__ == "__main__":
    run(main)
