"""MEDLINE parsing throughput and peak memory: our parser beside pubmed_parser, one core each.

Generates one MEDLINE file of N articles shaped like the real baseline (authors with
affiliations, MeSH headings, chemicals, keywords, references, article ids) from the demo
generator's sentences, then runs each parser in its own single-threaded subprocess over
the same file and records articles/s and peak resident memory. The parsers run in turn,
``--repeats`` times, and the best run of each counts, so a busy machine affects both alike.

Usage: python benchmarks/bench_medline_parse.py [--articles 30000] [--repeats 2]
           [--out benchmarks/results/medline_parse.json]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RUNNERS = {
    "workflow_scripts.corpus.medline": (
        "from workflow_scripts.corpus.medline import iter_medline, Citation\n"
        "n = sum(isinstance(x, Citation) for x in iter_medline(PATH))\n"
    ),
    "pubmed_parser.parse_medline_xml": (
        "import pubmed_parser\nn = sum(1 for _ in pubmed_parser.parse_medline_xml(PATH))\n"
    ),
}
CHILD = """
import resource, sys, time
PATH = sys.argv[1]
t0 = time.perf_counter()
{body}
dt = time.perf_counter() - t0
print(n, dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _generator():
    gen_dir = ROOT / "demo" / "generator"
    sys.path.insert(0, str(gen_dir))
    spec = importlib.util.spec_from_file_location("demo_corpus_generator", gen_dir / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _extras(rng: random.Random, lx) -> tuple[str, str, str]:
    authors = "".join(
        f'<Author ValidYN="Y"><LastName>Name{rng.randint(1, 999)}</LastName><ForeName>A</ForeName>'
        f"<Initials>A</Initials><AffiliationInfo><Affiliation>Department of Medicine, University {i}, "
        f"City, Country.</Affiliation></AffiliationInfo></Author>"
        for i in range(rng.randint(3, 9))
    )
    mesh = "".join(
        f'<MeshHeading><DescriptorName UI="D{rng.randint(1, 999999):06d}" MajorTopicYN="N">{d}</DescriptorName>'
        f'<QualifierName UI="Q000{rng.randint(100, 999)}" MajorTopicYN="Y">drug therapy</QualifierName></MeshHeading>'
        for d in rng.sample(lx.DISEASES, 8)
    )
    chems = "".join(
        f'<Chemical><RegistryNumber>0</RegistryNumber><NameOfSubstance UI="D{rng.randint(1, 999999):06d}">{c}'
        "</NameOfSubstance></Chemical>"
        for c in rng.sample(lx.CHEMICALS, 4)
    )
    keywords = "".join(f'<Keyword MajorTopicYN="N">{g}</Keyword>' for g in rng.sample(lx.GENES, 5))
    citation = (
        f'<AuthorList CompleteYN="Y">{authors}</AuthorList>',
        f"<ChemicalList>{chems}</ChemicalList><MeshHeadingList>{mesh}</MeshHeadingList>"
        f'<KeywordList Owner="NOTNLM">{keywords}</KeywordList>',
    )
    refs = "".join(
        f"<Reference><Citation>Author X. Title {i}. J Demo. 2010;1:1.</Citation><ArticleIdList>"
        f'<ArticleId IdType="pubmed">{rng.randint(1, 39999999)}</ArticleId></ArticleIdList></Reference>'
        for i in range(20)
    )
    return citation[0], citation[1], f"<ReferenceList>{refs}</ReferenceList>"


SYLLABLES = ("ba", "ce", "di", "fo", "gu", "ka", "le", "mi", "no", "pu", "ra", "se", "ti", "vo", "xu", "zy")
SUFFIXES = ("", "ase", "in", "itis", "ol", "ide")


def rare_word(rank: int) -> str:
    """An invented word, one per rank: short for frequent ranks, longer further down the tail."""
    out = SUFFIXES[rank % len(SUFFIXES)]
    rank //= len(SUFFIXES)
    while True:
        out = SYLLABLES[rank % len(SYLLABLES)] + out
        rank //= len(SYLLABLES)
        if not rank:
            return out


def with_rare_words(text: str, rng: random.Random, fraction: float) -> str:
    """Replace ``fraction`` of the words by invented ones drawn from a Zipf-like law (rank
    tail exponent 0.3), so the vocabulary keeps growing with the corpus as real text's does."""
    return " ".join(rare_word(int(rng.paretovariate(0.3))) if rng.random() < fraction else w for w in text.split(" "))


def make_file(path: Path, articles: int, seed: int = 7, first_pmid: int = 40000000, rare_words: float = 0.0) -> None:
    gen = _generator()
    lx = sys.modules["lexicon"]
    rng = random.Random(seed)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as fh:
        fh.write(gen.MEDLINE_DOCTYPE + "<PubmedArticleSet>\n")
        for i in range(articles):
            sections = gen._regular_sections(rng, structured=rng.random() < 0.4)
            if rare_words:
                sections = [(label, cat, with_rare_words(text, rng, rare_words)) for label, cat, text in sections]
            xml = gen._citation(first_pmid + i, 1, gen.escape(gen._title(rng)), sections)
            authors, heads, refs = _extras(rng, lx)
            xml = xml.replace(xml[xml.index("<AuthorList") : xml.index("</AuthorList>") + 13], authors)
            xml = xml.replace("    </MedlineCitation>", f"      {heads}\n    </MedlineCitation>")
            xml = xml.replace("    </PubmedData>", f"      {refs}\n    </PubmedData>")
            fh.write(xml)
        fh.write("</PubmedArticleSet>\n")


def run_one(body: str, path: Path) -> dict:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(body=body), str(path)], capture_output=True, text=True, check=True, env=env
    )
    n, seconds, maxrss_kb = out.stdout.split()
    return {
        "articles": int(n),
        "seconds": round(float(seconds), 3),
        "articles_per_s": round(int(n) / float(seconds), 1),
        "peak_rss_mb": round(int(maxrss_kb) / 1024, 1),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--articles", type=int, default=30000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "medline_parse.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pubmed_bench.xml.gz"
        make_file(path, args.articles)
        runs: dict[str, list[dict]] = {name: [] for name in RUNNERS}
        for _ in range(max(1, args.repeats)):
            for name, body in RUNNERS.items():
                runs[name].append(run_one(body, path))
        results = {
            "file_bytes": path.stat().st_size,
            "articles": args.articles,
            "repeats": args.repeats,
            "python": sys.version.split()[0],
            "parsers": {name: min(r, key=lambda x: x["seconds"]) for name, r in runs.items()},
        }
    ours, ref = (results["parsers"][k]["articles_per_s"] for k in RUNNERS)
    results["speedup"] = round(ours / ref, 2)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
