"""Learn a vocabulary from corpus shards and save it as a transformers tokenizer directory.

    python -m workflow_scripts.vocab.train_vocab --settings S.yaml --corpus results/corpus/A [...] --out results/vocab/V

S.yaml: ``vocab: {name: V, train: VocabSettings}``. The output directory holds
tokenizer.json, tokenizer_config.json (and sentencepiece.model for SentencePiece
vocabularies); provenance.json, written last, names the corpus shards and the sample.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from .. import provenance
from ..atomic import atomic_dir
from ..cli import run
from ..errors import PipelineError
from ..progress import progress
from ..typed import load_settings, to_dict
from .sample import Sample, count_distinct_words, iter_texts, plan_sample
from .settings import TrainVocabSettings, VocabSettings

log = logging.getLogger(__name__)
CHECK_DOCUMENTS = 200
CHECK_CHARS = 2000


def _counted(texts: Iterator[str], total: int, desc: str) -> Iterator[str]:
    with progress(desc, total=total, unit="docs") as bar:
        for text in texts:
            yield text
            bar.update(1)


def ensure_enough_words(sample: Sample, settings: VocabSettings, name: str, corpora: Sequence[str]) -> None:
    """Stop early when the sample cannot fill the vocabulary: fewer distinct words than its size."""
    distinct = count_distinct_words(iter_texts(sample), settings.lowercase, stop_at=settings.size)
    if distinct < settings.size:
        raise PipelineError(
            f"vocabulary {name!r}: corpus {', '.join(map(str, corpora))} has only {distinct} distinct words in "
            f"{sample.size} sampled documents, fewer than the requested size {settings.size}; "
            "lower vocab size, raise sample_documents or use a larger corpus"
        )


def learn(settings: VocabSettings, sample: Sample, name: str, out: Path) -> dict:
    """Train into the (temporary) directory ``out``; return facts for the provenance record."""
    from .save import check_reload, wrap

    def texts() -> Iterator[str]:
        return _counted(iter_texts(sample), sample.size, f"vocab {name}: reading")

    check = [t[:CHECK_CHARS] for t in itertools.islice(iter_texts(sample), CHECK_DOCUMENTS)]
    facts: dict = {}
    if settings.algorithm.startswith("sentencepiece"):
        from . import spm

        proto = spm.train_model(settings, texts(), f"vocabulary {name!r}")
        tok = spm.to_tokenizer(proto, settings)
        (out / "sentencepiece.model").write_bytes(proto)
        facts["sentencepiece_agreement"] = spm.agreement(proto, tok, list(spm.sentences(check, settings.lowercase)))
    else:
        from . import bpe_wordpiece

        tok = bpe_wordpiece.train(settings, texts)
    wrap(tok, settings).save_pretrained(str(out))
    check_reload(out, tok, settings, check)
    facts["actual_size"] = tok.get_vocab_size()
    if facts["actual_size"] < settings.size:
        log.warning("vocabulary %s: learned %d tokens of the %d asked for", name, facts["actual_size"], settings.size)
    return facts


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--settings", required=True, help="YAML with a top-level 'vocab' key")
    parser.add_argument(
        "--corpus",
        required=True,
        nargs="+",
        action="extend",
        help="corpus directories (shard~N.parquet); repeat the flag or list several",
    )
    parser.add_argument("--out", required=True, help="tokenizer directory to write")
    args = parser.parse_args(argv)

    started = provenance.now()
    stage = load_settings(args.settings, TrainVocabSettings, "vocab")
    settings = stage.train
    # tokenizers sizes its thread pool from this on first use.
    os.environ["RAYON_NUM_THREADS"] = str(settings.threads)
    sample = plan_sample(args.corpus, stage.name, settings.sample_documents, settings.seed)
    ensure_enough_words(sample, settings, stage.name, args.corpus)
    out = Path(args.out)
    t0 = time.monotonic()
    with atomic_dir(out) as tmp:
        facts = learn(settings, sample, stage.name, tmp)
    facts["train_seconds"] = round(time.monotonic() - t0, 3)
    log.info(
        "vocabulary %s: %d tokens from %d documents in %.1fs",
        stage.name,
        facts["actual_size"],
        sample.size,
        facts["train_seconds"],
    )
    provenance.record(
        out,
        step="vocab.train",
        inputs={"corpus": list(args.corpus)},
        params={"name": stage.name, "train": to_dict(settings), "sample": sample.describe()},
        outputs=sorted(p for p in out.iterdir() if p.is_file() and p.name != provenance.FILENAME),
        seed=settings.seed,
        started=started,
        extra={"vocab": facts},
    )


if __name__ == "__main__":
    run(main)
