"""Parse one raw file (MEDLINE XML, PMC tarball/nxml, MIMIC NOTEEVENTS) into a Parquet file.

    python -m workflow_scripts.corpus.parse_corpus_file --settings S.yaml --in RAWFILE --out PARSED.parquet \\
        [--filelist PMC_FILE_LIST.csv]

For PMC, ``--filelist`` (the CSV published with the bulk packages, or the one the cloud
batch download writes) supplies each article's licence and retraction mark in place of the
article's own. A cloud batch directory's ``selection.json`` (articles left out by their
metadata before download) is carried into the parsed file's counts.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path

from .. import provenance
from ..cli import run
from ..errors import PipelineError
from ..progress import progress
from ..typed import to_dict
from . import medline, mimic, pmc
from .dedup import MinHasher, minhash_params
from .pmc_filelist import read_filelist
from .records import row, write_parsed
from .settings import ParseCorpusSettings, load_parse

log = logging.getLogger(__name__)


def _malformed(settings: ParseCorpusSettings, info: dict, where: str, reason: str) -> None:
    if settings.clean.on_malformed == "error":
        raise PipelineError(
            f"{where}: {reason}; fix or re-download the file, or set "
            f"corpora.{settings.name}.clean.on_malformed: skip to count and skip it"
        )
    info["malformed"] = info.get("malformed", 0) + 1
    log.warning("skipped malformed record %s: %s", where, reason)


def _pubmed(path: Path, settings: ParseCorpusSettings, info: dict) -> Iterator[dict]:
    opts = settings.clean.pubmed
    for item in medline.iter_medline(path):
        if isinstance(item, medline.Malformed):
            _malformed(settings, info, f"{path}:{item.line} (PMID {item.pmid or 'unknown'})", item.reason)
        elif isinstance(item, medline.Deletion):
            yield row(f"pubmed:{item.pmid}", path.name, op="delete", version=item.version)
        else:
            yield row(
                f"pubmed:{item.pmid}",
                path.name,
                medline.document_text(item, opts.section_labels, opts.include_title),
                version=item.version,
                retracted=item.retracted,
                metadata={
                    "pmid": item.pmid,
                    "version": item.version,
                    "status": item.status,
                    "title": item.title,
                    "languages": item.languages,
                    "publication_types": item.publication_types,
                    "journal": item.journal,
                    "year": item.year,
                    "sections": [s.label for s in item.sections if s.label],
                },
            )


def _pmc(path: Path, settings: ParseCorpusSettings, info: dict, listed: dict | None = None) -> Iterator[dict]:
    for item in pmc.iter_pmc(path, settings.clean.pmc):
        if isinstance(item, pmc.BadMember):
            _malformed(settings, info, f"{path}:{item.member}", item.reason)
            continue
        licence, retracted = item.licence, item.retracted
        entry = listed.get(item.id) if listed else None
        if entry is not None:
            licence, retracted = entry.licence, entry.retracted or retracted
            info["from_filelist"] = info.get("from_filelist", 0) + 1
        yield row(
            f"pmc:{item.id}",
            path.name,
            item.text,
            retracted=retracted,
            licence=licence,
            metadata={
                "pmcid": item.id,
                "pmid": item.pmid,
                "doi": item.doi,
                "title": item.title,
                "licence_url": item.licence_url,
                "article_type": item.article_type,
                "member": item.member,
            },
        )


def _mimic(path: Path, settings: ParseCorpusSettings, info: dict) -> Iterator[dict]:
    for item in mimic.iter_notes(path, settings.clean.mimic.placeholders):
        if isinstance(item, mimic.BadRow):
            _malformed(settings, info, f"{path}:{item.line}", item.reason)
            continue
        yield row(
            f"mimic:{item.row_id}",
            path.name,
            item.text,
            category=item.category,
            iserror=item.iserror,
            metadata={
                "row_id": item.row_id,
                "subject_id": item.subject_id,
                "hadm_id": item.hadm_id,
                "chartdate": item.chartdate,
                "category": item.category,
                "description": item.description,
            },
        )


PARSERS = {"pubmed": _pubmed, "pmc": _pmc, "mimic": _mimic}


def parse_file(
    path: str | Path, out: str | Path, settings: ParseCorpusSettings, filelist: str | Path | None = None
) -> dict:
    """Parse ``path`` into ``out``; return the counts stored with it."""
    path = Path(path)
    if filelist is not None and settings.type != "pmc":
        raise PipelineError(f"{filelist}: a file list applies to PMC corpora only, not to {settings.type}")
    listed = read_filelist(filelist) if filelist is not None else None
    if not path.is_file() and not (settings.type == "pmc" and path.is_dir()):
        raise PipelineError(f"{path}: raw file not found")
    info: dict = {"type": settings.type, "file": path.name, "malformed": 0}
    selection = path / "selection.json"
    if path.is_dir() and selection.is_file():  # a PMC cloud batch: articles left out before download
        info["selection"] = json.loads(selection.read_text(encoding="utf-8"))
    bar = progress(f"parse {path.name}", None, "docs")

    parser = partial(_pmc, listed=listed) if listed is not None else PARSERS[settings.type]
    nd = settings.clean.near_dedup
    hasher = MinHasher(nd.num_perm, nd.shingle, nd.seed) if nd.enabled else None
    if hasher is not None:
        info["minhash"] = minhash_params(nd)

    def counted() -> Iterator[dict]:
        for r in parser(path, settings, info):
            if hasher is not None and r["op"] == "add" and r["text"].strip():
                r["minhash"] = hasher.signature(r["text"])
            bar.update(1)
            yield r

    with bar:
        write_parsed(out, counted(), info)
    return info


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", required=True, help="settings YAML with a top-level 'corpus' key")
    ap.add_argument("--in", dest="inp", required=True, help="raw file (.xml.gz, .tar.gz/.nxml, NOTEEVENTS.csv.gz)")
    ap.add_argument("--out", required=True, help="parsed Parquet file to write")
    ap.add_argument("--filelist", help="PMC file list CSV giving licence and retraction per article")
    args = ap.parse_args(argv)
    started = provenance.now()
    settings = load_parse(args.settings)
    info = parse_file(args.inp, args.out, settings, args.filelist)
    log.info("%s: %d rows, %d malformed skipped", args.inp, info["rows"], info["malformed"])
    provenance.record(
        args.out,
        step="corpus.parse",
        inputs={"raw": args.inp, "settings": args.settings, **({"filelist": args.filelist} if args.filelist else {})},
        params={"corpus": to_dict(settings)},
        outputs=[args.out],
        started=started,
        restricted=settings.restricted or settings.type == "mimic",
        extra={"counts": info},
    )


if __name__ == "__main__":
    run(main)
