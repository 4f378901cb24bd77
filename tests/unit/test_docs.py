"""The README and docs/ point at things that exist: relative links (and their #anchors), the
repository paths the README names, and the make targets README and docs tell users to run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "JOURNAL.md"]

FENCE = re.compile(r"^```.*?^```[ \t]*$", flags=re.M | re.S)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$", flags=re.M)
MAKE = re.compile(r"\bmake((?:[ \t]+[A-Z_]+=\S*)*)[ \t]+([a-z][\w-]*)")


def _prose(text: str) -> str:
    """The text outside fenced code blocks and inline code spans."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def _code(text: str) -> list[str]:
    """Fenced code blocks and inline code spans."""
    return FENCE.findall(text) + CODE_SPAN.findall(FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings; a repeated heading gets -1, -2, ... as on GitHub."""
    found: set[str] = set()
    counts: dict[str, int] = {}
    for _, heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        base = slug(heading)
        n = counts.get(base, 0)
        counts[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # a URL with a scheme: not a file of the repository
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{page.relative_to(ROOT)}: {target} (no heading with that anchor)")
    return broken


def make_targets() -> set[str]:
    targets = set()
    for line in (ROOT / "Makefile").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+(?:[ \t]+[A-Za-z0-9_.-]+)*)[ \t]*:(?!=)", line)
        if m:
            targets.update(t for t in m[1].split() if not t.startswith("."))
    return targets


def test_slugs_follow_github():
    assert slug("Long inputs, read in chunks") == "long-inputs-read-in-chunks"
    heading = "Mullenbach et al. 2018, MIMIC-III top-50 (`mimic-iii-50`)"
    assert slug(heading) == "mullenbach-et-al-2018-mimic-iii-top-50-mimic-iii-50"
    assert slug("Where did a number come from?") == "where-did-a-number-come-from"


def test_code_blocks_are_closed():
    """An unclosed fence would swallow the rest of a page, its links included."""
    unclosed = [p.name for p in PAGES if len(re.findall(r"^```", p.read_text(encoding="utf-8"), flags=re.M)) % 2]
    assert not unclosed, unclosed


def test_relative_links_between_readme_and_docs_resolve():
    assert len(PAGES) > 5
    broken = sorted({b for page in PAGES for b in broken_links(page)})
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_paths_the_readme_names_exist():
    """A code span naming a path with a folder in it; paths under results/ are written by the workflow."""
    named = {
        span.rstrip("/")
        for span in _code(README.read_text(encoding="utf-8"))
        if "/" in span and re.fullmatch(r"[\w.-]+(/[\w.-]+)*/?", span) and "results" not in span.split("/")
    }
    assert "schemas/config.schema.yaml" in named
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"README.md names paths that do not exist: {missing}"


def test_make_targets_named_in_readme_and_docs_exist():
    targets = make_targets()
    assert {"demo", "test", "install"} <= targets
    named = {
        (page.relative_to(ROOT).as_posix(), m[2])
        for page in PAGES
        for code in _code(page.read_text(encoding="utf-8"))
        for m in MAKE.finditer(code)
    }
    missing = sorted(f"{page}: make {target}" for page, target in named if target not in targets)
    assert not missing, "make targets that the Makefile does not have:\n" + "\n".join(missing)
