"""PMC open-access JATS (``.nxml``) articles: reading-order text with section titles.

pubmed_parser's ``parse_pubmed_paragraph`` flattens only one level of children (text in
nested markup is lost) and reads from paths only; here every article is read from a
local directory, a single ``.nxml`` or a tarball member without extraction, and the
text walk keeps all nested text. Figures, tables, display formulas and references are
each included or left out by configuration; the licence (commercial / non-commercial /
other) and the retraction mark come from the article's own metadata.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from ..errors import PipelineError
from .settings import PmcOptions

XLINK = "{http://www.w3.org/1999/xlink}href"
_NC = re.compile(r"by-nc|noncommercial|non-commercial")
_COMMERCIAL = re.compile(r"creativecommons\.org/(licenses/by(-sa|-nd)?/|publicdomain/zero)|\bcc[ -]?by\b|\bcc0\b")
BLOCKS = {"fig", "table-wrap", "disp-formula", "ref-list"}


@dataclass
class Article:
    id: str
    title: str
    paragraphs: list[str]
    licence: str
    licence_url: str
    retracted: bool
    pmid: str = ""
    doi: str = ""
    article_type: str = ""
    member: str = ""

    @property
    def text(self) -> str:
        return "\n".join(p for p in self.paragraphs if p)


@dataclass
class BadMember:
    member: str
    reason: str


def classify_licence(url: str, text: str) -> str:
    """commercial (CC0, CC BY, BY-SA, BY-ND), noncommercial (any NC licence) or other."""
    s = f"{url} {text}".lower()
    if _NC.search(s):
        return "noncommercial"
    if _COMMERCIAL.search(s):
        return "commercial"
    return "other"


def _local(tag: object) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


# A dropped citation marker is first replaced by MARK (a character XML text cannot hold),
# so that the brackets, separators and space around it can be removed with it.
MARK = "\x00"
_SEP = r"(?:[\s,;\u2013\u2014-]|\band\b)*"
_RUN = rf"{MARK}(?:{_SEP}{MARK})*"
_LEAD = r"(?:(?:e\.g\.|i\.e\.|cf\.|see(?: also)?|reviewed in),?\s*)?"
_BRACKETED = re.compile(rf"\s*(?:\[{_LEAD}{_SEP}{_RUN}{_SEP}\]|\({_LEAD}{_SEP}{_RUN}{_SEP}\))")
_LOOSE = re.compile(rf"\s*{_RUN}")
_OPEN_SEP = re.compile(r"([\[(])\s*[,;]\s*")
_SEP_CLOSE = re.compile(r"\s*[,;]\s*([\])])")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:)\]])")
_DOUBLE_STOP = re.compile(r"(?<!\.)\.\.(?!\.)")  # "White et al. [5]." -> "White et al.."


def drop_markers(text: str) -> str:
    """Text without its MARKs: a bracket holding only citations goes with the space before
    it ("disease [1-3]." -> "disease."); a run of markers goes with the separators between
    them ("lipids [1], [2]." -> "lipids."); a bracket that also holds other words keeps them."""
    if MARK not in text:
        return _SPACE_BEFORE_PUNCT.sub(r"\1", text)
    text = _LOOSE.sub("", _BRACKETED.sub("", text))
    text = _SEP_CLOSE.sub(r"\1", _OPEN_SEP.sub(r"\1", text))
    return _DOUBLE_STOP.sub(".", _SPACE_BEFORE_PUNCT.sub(r"\1", text))


def _norm(s: str) -> str:
    return " ".join(s.split())


class _Walker:
    def __init__(self, opts: PmcOptions) -> None:
        self.opts = opts
        self.out: list[str] = []

    def inline(self, el: etree._Element) -> str:
        """Text of ``el`` and its inline children; blocks are left to ``block``, citation
        markers become MARK unless references are kept."""
        parts = [el.text or ""]
        for child in el:
            name = _local(child.tag)
            if name == "xref" and child.get("ref-type") == "bibr" and not self.opts.references:
                parts.append(MARK)
            elif name and name not in BLOCKS:
                parts.append(self.inline(child))
            parts.append(child.tail or "")
        return "".join(parts)

    def text(self, el: etree._Element) -> str:
        return drop_markers(_norm(self.inline(el)))

    def para(self, el: etree._Element) -> None:
        text = self.text(el)
        if text:
            self.out.append(text)
        for child in el:
            if _local(child.tag) in BLOCKS:
                self.block(child)

    def block(self, el: etree._Element) -> None:
        name = _local(el.tag)
        if name == "p":
            self.para(el)
        elif name == "title":
            if self.opts.section_titles:
                self.out.append(self.text(el))
        elif name in ("fig", "table-wrap"):
            if self.opts.captions:
                for cap in el.iterfind("caption"):
                    for part in cap:
                        if _local(part.tag) == "title":  # a caption's title is caption text
                            self.out.append(self.text(part))
                        elif isinstance(part.tag, str):
                            self.block(part)
            if name == "table-wrap" and self.opts.tables:
                for row in el.iter("tr"):
                    self.out.append(" | ".join(self.text(c) for c in row if _local(c.tag) in ("td", "th")))
                for foot in el.iterfind("table-wrap-foot"):
                    self.children(foot)
        elif name == "disp-formula":
            if self.opts.formulas:
                self.out.append(_norm(" ".join(el.itertext())))
        elif name == "ref-list":
            if self.opts.references:
                for ref in el.iterfind("ref"):
                    self.out.append(_norm(" ".join(ref.itertext())))
        elif name in ("label", "graphic", "media", "object-id", "alternatives"):
            return
        else:
            self.children(el)

    def children(self, el: etree._Element) -> None:
        for child in el:
            if isinstance(child.tag, str):
                self.block(child)


def parse_article(data: bytes, member: str, opts: PmcOptions) -> Article:
    """Parse one JATS document (bytes); raises etree.XMLSyntaxError on malformed XML."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
    root = etree.fromstring(data, parser)
    meta = root.find("front/article-meta")
    if meta is None:
        raise etree.XMLSyntaxError("no front/article-meta element", None, 0, 0)
    ids = {a.get("pub-id-type"): (a.text or "").strip() for a in meta.iterfind("article-id")}
    pmc = ids.get("pmc") or ids.get("pmcid") or Path(member).stem
    pmc = pmc if pmc.upper().startswith("PMC") else f"PMC{pmc}"
    lic = meta.find("permissions/license")
    url = ""
    lic_text = ""
    if lic is not None:
        ref = lic.find("{http://www.niso.org/schemas/ali/1.0/}license_ref")
        url = lic.get(XLINK) or (ref.text.strip() if ref is not None and ref.text else "")
        lic_text = _norm(" ".join(lic.itertext()))
    retracted = any(r.get("related-article-type") == "retraction-forward" for r in meta.iter("related-article"))
    title_el = meta.find("title-group/article-title")
    title = _norm("".join(title_el.itertext())) if title_el is not None else ""
    walker = _Walker(opts)
    for abstract in meta.iterfind("abstract"):
        walker.children(abstract)
    # figures and tables may stand in <floats-group> after the body rather than in it
    for part in ("body", "floats-group"):
        el = root.find(part)
        if el is not None:
            walker.children(el)
    back = root.find("back")
    if back is not None and opts.references:
        for ref_list in back.iter("ref-list"):
            walker.block(ref_list)
    return Article(
        id=pmc,
        title=title,
        paragraphs=([title] if title else []) + walker.out,
        licence=classify_licence(url, lic_text),
        licence_url=url,
        retracted=retracted,
        pmid=ids.get("pmid", ""),
        doi=ids.get("doi", ""),
        article_type=root.get("article-type", ""),
        member=member,
    )


def _members(path: Path) -> Iterator[tuple[str, Callable[[], bytes]]]:
    if path.is_dir():
        for f in sorted(path.rglob("*.nxml")) + sorted(path.rglob("*.xml")):
            yield str(f.relative_to(path)), f.read_bytes
    elif path.name.endswith((".nxml", ".xml")):
        yield path.name, path.read_bytes
    else:
        with tarfile.open(path, "r:*") as tar:
            for info in tar:
                if not info.isfile() or not info.name.endswith((".nxml", ".xml")):
                    continue

                def read(info: tarfile.TarInfo = info) -> bytes:
                    fh = tar.extractfile(info)
                    if fh is None:
                        raise OSError("member cannot be read")
                    return fh.read()

                yield info.name, read


def iter_pmc(path: str | Path, opts: PmcOptions) -> Iterator[Article | BadMember]:
    """Articles of a directory, a ``.nxml`` file or a tarball; bad members come as BadMember.

    A tarball that cannot be read through to its end raises PipelineError naming it.
    """
    path = Path(path)
    if not path.exists():
        raise PipelineError(f"{path}: PMC input not found")
    try:
        for member, read in _members(path):
            try:
                data = read()
            except (OSError, EOFError, tarfile.TarError, zlib.error) as exc:
                yield BadMember(member, f"unreadable archive member ({exc})")
                continue
            try:
                yield parse_article(data, member, opts)
            except etree.XMLSyntaxError as exc:
                yield BadMember(member, f"malformed XML at line {exc.lineno}: {exc.msg}")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise PipelineError(f"{path}: unreadable or truncated archive ({exc}); download it again") from exc
