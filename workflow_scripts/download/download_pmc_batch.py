"""PMC Article Datasets in the per-article cloud layout: select articles by metadata, fetch one batch.

    python -m workflow_scripts.download.download_pmc_batch --settings S.yaml --inventory INVENTORY \\
        --url BASE --batch K --batches B --out results/raw/CORPUS/batch~K [--retries N]

The files it reads, as the service publishes them (bucket ``s3://pmc-oa-opendata``, over
HTTPS at ``https://pmc-oa-opendata.s3.amazonaws.com``, which replaced the FTP bulk packages):

- the inventory: a listing of the bucket's objects, one per line: an S3 Inventory data file
  (CSV, optionally gzipped: ``"pmc-oa-opendata","metadata/PMC1234567.2.json",...``) or the
  output of ``aws s3 ls --no-sign-request --recursive s3://pmc-oa-opendata/metadata/``.
  A key ``metadata/PMC<id>.<version>.json`` or ``PMC<id>.<version>/PMC<id>.<version>.json``
  on a line names the metadata of one article version; other lines are ignored.
- per article version, that metadata JSON; the fields read are ``pmcid``, ``version``,
  ``is_pmc_openaccess``, ``is_retracted``, ``license_code`` (``CC BY``, ``CC0``,
  ``CC BY-NC-SA``, ...), ``xml_url`` (``s3://pmc-oa-opendata/PMC<id>.<v>/PMC<id>.<v>.xml?md5=<hex>``)
  and, when present, ``pmid`` and ``doi``.
- the article's JATS XML at ``xml_url`` (as ``BASE/PMC<id>.<v>/PMC<id>.<v>.xml``), checked
  against the md5 in that URL.

Only the latest version of each PMCID is used. An article belongs to batch
``crc32(PMCID) % B``, so it stays in its batch when a later inventory adds articles. The
licence subset (``clean.pmc.licence``) and retraction (``clean.drop_retracted``) of the
corpus settings are decided from the metadata before the XML is fetched. Output: the
directory ``OUT`` with the XML files, ``selection.json`` (counts per reason) and
``provenance.json``, and beside it ``OUT.filelist.csv`` (AccessionID, License, Retracted)
for the parse step's ``--filelist``. Files an interrupted run finished stay in
``OUT.partial/`` and are not fetched again.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import logging
import os
import re
import shutil
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .. import provenance
from ..atomic import atomic_file, write_json
from ..cli import run
from ..corpus.pmc import classify_licence
from ..corpus.settings import load_parse
from ..errors import PipelineError
from ..progress import progress
from .checksums import file_digest
from .fetch import Options, fetch, fetch_text

log = logging.getLogger(__name__)

_KEY = re.compile(r"(?:metadata/|(PMC\d+)\.(\d+)/)(PMC\d+)\.(\d+)\.json")
_MD5 = re.compile(r"[?&]md5=([0-9a-fA-F]{32})")
REASONS = ("older_version", "not_open_access", "licence", "retracted")


@dataclass(frozen=True)
class ArticleVersion:
    pmcid: str
    version: int
    key: str


def batch_of(pmcid: str, batches: int) -> int:
    return zlib.crc32(pmcid.encode("ascii")) % batches


def read_inventory(path: str | Path) -> list[ArticleVersion]:
    """Every article version whose metadata JSON the inventory names, in inventory order."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode("utf-8")
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise PipelineError(f"{path}: unreadable inventory ({exc}); download it again") from exc
    out = []
    for line in text.splitlines():
        m = _KEY.search(line)
        if m is None or (m.group(1) and (m.group(1), m.group(2)) != (m.group(3), m.group(4))):
            continue
        out.append(ArticleVersion(m.group(3), int(m.group(4)), m.group(0)))
    if not out:
        raise PipelineError(
            f"{path}: names no metadata/PMC<id>.<version>.json object; check corpora.<name>.source.inventory"
        )
    return out


def latest_versions(articles: Iterable[ArticleVersion]) -> tuple[list[ArticleVersion], int]:
    """The highest version of each PMCID (sorted by PMCID), and how many older ones were left out."""
    best: dict[str, ArticleVersion] = {}
    total = 0
    for a in articles:
        total += 1
        if a.pmcid not in best or a.version > best[a.pmcid].version:
            best[a.pmcid] = a
    return [best[p] for p in sorted(best)], total - len(best)


def https_url(base: str, s3_url: str) -> str:
    """``s3://bucket/KEY?md5=..`` as ``BASE/KEY`` (base: the bucket's HTTPS or a mirror's URL)."""
    return f"{base.rstrip('/')}/{urlsplit(s3_url).path.lstrip('/')}"


def decide(meta: dict, where: str, licence: str, drop_retracted: bool) -> tuple[str | None, str, bool]:
    """(reason it is left out or None, licence class, retracted) from one metadata record."""
    for key in ("is_pmc_openaccess", "license_code", "xml_url"):
        if key not in meta:
            raise PipelineError(f"{where}: metadata has no {key!r} field")
    cls = classify_licence("", str(meta.get("license_code") or ""))
    retracted = meta.get("is_retracted") is True
    if meta["is_pmc_openaccess"] is not True:
        return "not_open_access", cls, retracted
    if licence != "all" and cls != licence:
        return "licence", cls, retracted
    if drop_retracted and retracted:
        return "retracted", cls, retracted
    return None, cls, retracted


def _metadata(base: str, a: ArticleVersion, opts: Options) -> dict:
    url = f"{base.rstrip('/')}/{a.key.lstrip('/')}"
    try:
        meta = json.loads(fetch_text(url, opts))
    except json.JSONDecodeError as exc:
        raise PipelineError(f"{url}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if str(meta.get("pmcid", a.pmcid)).upper() != a.pmcid or int(meta.get("version", a.version)) != a.version:
        raise PipelineError(f"{url}: describes {meta.get('pmcid')}.{meta.get('version')}, not {a.pmcid}.{a.version}")
    return meta


def fetch_batch(
    inventory: str | Path,
    base: str,
    batch: int,
    batches: int,
    out: str | Path,
    licence: str,
    drop_retracted: bool,
    opts: Options | None = None,
) -> dict:
    """Select and fetch one batch into ``out``; return the selection counts."""
    if not 0 <= batch < batches:
        raise PipelineError(f"--batch {batch}: must lie in 0..{batches - 1}")
    opts = opts or Options()
    out = Path(out)
    # counts cover this batch's PMCIDs only, so the batches' counts add up to the inventory's
    listed = [a for a in read_inventory(inventory) if batch_of(a.pmcid, batches) == batch]
    mine, older = latest_versions(listed)
    counts = {"listed": len(listed), "articles": len(mine), "fetched": 0, "dropped": dict.fromkeys(REASONS, 0)}
    counts["dropped"]["older_version"] = older
    work = out.with_name(out.name + ".partial")
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    bar = progress(f"pmc batch {batch}", len(mine), "articles")
    with bar:
        for a in mine:
            meta = _metadata(base, a, opts)
            reason, cls, retracted = decide(meta, f"{a.key} (inventory {inventory})", licence, drop_retracted)
            bar.update(1)
            if reason is not None:
                counts["dropped"][reason] += 1
                continue
            m = _MD5.search(meta["xml_url"])
            name = f"{a.pmcid}.{a.version}.xml"
            target = work / name
            digest = m.group(1).lower() if m else None
            if not (target.is_file() and digest is not None and file_digest(target, "md5") == digest):
                fetch(
                    https_url(base, meta["xml_url"]), target, algo="md5" if digest else None, digest=digest, opts=opts
                )
            counts["fetched"] += 1
            rows.append(
                [
                    name,
                    a.pmcid,
                    str(a.version),
                    str(meta.get("pmid") or ""),
                    str(meta.get("license_code") or ""),
                    "yes" if retracted else "no",
                ]
            )
    write_json(work / "selection.json", counts)
    with atomic_file(out.with_name(out.name + ".filelist.csv")) as tmp:
        with open(tmp, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["Article File", "AccessionID", "Version", "PMID", "License", "Retracted"])
            w.writerows(rows)
    if out.exists():
        shutil.rmtree(out)
    os.replace(work, out)
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--settings", required=True, help="corpus settings YAML (top-level 'corpus' key)")
    ap.add_argument("--inventory", required=True, help="the downloaded inventory file")
    ap.add_argument("--url", required=True, help="base URL of the bucket (or a mirror) the keys are under")
    ap.add_argument("--batch", type=int, required=True, help="this job's batch number, 0-based")
    ap.add_argument("--batches", type=int, required=True, help="number of batches")
    ap.add_argument("--out", required=True, help="batch directory to write (results/raw/CORPUS/batch~K)")
    ap.add_argument("--retries", type=int, default=5, help="attempts after the first, with back-off")
    args = ap.parse_args(argv)
    started = provenance.now()
    settings = load_parse(args.settings)
    if settings.type != "pmc":
        raise PipelineError(f"{args.settings}: the cloud layout applies to pmc corpora, not {settings.type}")
    counts = fetch_batch(
        args.inventory,
        args.url,
        args.batch,
        args.batches,
        args.out,
        settings.clean.pmc.licence,
        settings.clean.drop_retracted,
        Options(retries=max(0, args.retries)),
    )
    log.info(
        "batch %d of %d: %d articles fetched; left out %s",
        args.batch,
        args.batches,
        counts["fetched"],
        json.dumps({k: v for k, v in counts["dropped"].items() if v}),
    )
    out = Path(args.out)
    filelist = out.with_name(out.name + ".filelist.csv")
    provenance.record(
        out,
        step="download.pmc_cloud",
        inputs={"inventory": args.inventory, "settings": args.settings},
        params={
            "url": provenance.scrub(args.url),
            "batch": args.batch,
            "batches": args.batches,
            "licence": settings.clean.pmc.licence,
            "drop_retracted": settings.clean.drop_retracted,
        },
        outputs=sorted(out.glob("*.xml")) + [out / "selection.json", filelist],
        started=started,
        extra={"selection": counts},
    )


if __name__ == "__main__":
    run(main)
