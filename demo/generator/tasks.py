"""Write the demo benchmark tasks: one task of every type and a long-document one, each in its real format.

Composed from ``lexicon.py`` and our own templates with fixed seeds. Training splits draw their
entities and trigger words from ``lexicon.seen``, dev and test splits from ``lexicon.held_out``:
what a test item needs is in the pretraining text, not in the task's training split, and the
templates put words of different classes into the same contexts, so the context alone does not
give the label away. Also writes the tasks' registry entries (with the sha256 of every file) for
demo/config.yaml.

Usage: python demo/generator/tasks.py --out demo/raw_source/tasks [--spec demo/generator/demo_tasks.yaml]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import hashlib
import io
import json
import random
import re
import tarfile
from pathlib import Path

import lexicon as lx
import yaml

SEED = 20240611
SIZES = {"train": 200, "dev": 50, "test": 100}
URL_ROOT = "raw_source/tasks"
HALLMARKS = list(lx.HALLMARK_TERMS)
_TOKEN = re.compile(r"\w+(?:[-']\w+)*|[^\w\s]")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def _rng(task: str) -> random.Random:
    return random.Random(f"{SEED}-{task}")


def _words(words: list[str], split: str) -> list[str]:
    return lx.seen(words) if split == "train" else lx.held_out(words)


# --------------------------------------------------------------------------- NER (CoNLL TSV)


def _ner_sentence(rng: random.Random, split: str) -> list[tuple[str, bool]]:
    """Segments (text, is_disease) of one sentence. Chemicals and genes fill the same slots as
    diseases, so only knowing the word tells a disease from a distractor; the one telling
    context differs between training and test and comes from the pretraining text."""

    def slot() -> tuple[str, bool]:
        kind = rng.choices(("disease", "chemical", "gene"), (2, 1, 1))[0]
        words = {"disease": lx.DISEASES, "chemical": lx.CHEMICALS, "gene": lx.GENES}[kind]
        return rng.choice(_words(words, split)), kind == "disease"

    x, y = slot(), slot()
    n, pop = rng.randint(12, 900), rng.choice(lx.POPULATIONS)
    templates = [
        [x, (f" was reported in {n} of the {pop} .", False)],
        [("The role of ", False), x, (f" was examined in {pop} .", False)],
        [("We found no link between ", False), x, (" and ", False), y, (" .", False)],
        [x, (" and ", False), y, (" were recorded at baseline .", False)],
        [
            ("Patients with ", False),
            (rng.choice(_words(lx.DISEASES, split)), True),
            (" received ", False),
            y,
            (" .", False),
        ]
        if split == "train"
        else [
            ("The risk of ", False),
            (rng.choice(_words(lx.DISEASES, split)), True),
            (f" was higher among {pop} .", False),
        ],
    ]
    return rng.choice(templates)


def demo_ner() -> dict[str, bytes]:
    rng = _rng("ner")
    files = {}
    for split, fname in (("train", "train.tsv"), ("dev", "devel.tsv"), ("test", "test.tsv")):
        lines = []
        for _ in range(SIZES[split]):
            for text, entity in _ner_sentence(rng, split):
                for i, tok in enumerate(_tokens(text)):
                    tag = ("B-Disease" if i == 0 else "I-Disease") if entity else "O"
                    lines.append(f"{tok}\t{tag}")
            lines.append("")
        files[fname] = ("\n".join(lines) + "\n").encode()
    return files


# --------------------------------------------------------------------------- PICO (EBM-NLP 2.0 layout)


def _pico_abstract(rng: random.Random, split: str) -> list[tuple[str, str]]:
    """Three sentences: one in a trial's telling phrasing (another in training than in test,
    both from the pretraining text), two that put a population, an intervention or an outcome
    into the same neutral slot."""
    pop, interv, outcome = (rng.choice(_words(w, split)) for w in (lx.POPULATIONS, lx.INTERVENTIONS, lx.OUTCOMES))
    n, weeks = rng.randint(40, 2400), rng.choice([6, 12, 24, 52])
    first = (
        [(f"We randomly assigned {n} ", "O"), (pop, "PAR"), (" to ", "O"), (interv, "INT"), (" or usual care .", "O")]
        if split == "train"
        else [("The primary outcome was ", "O"), (outcome, "OUT"), (f" at {weeks} weeks .", "O")]
    )
    neutral = [(pop, "PAR"), (interv, "INT"), (outcome, "OUT")]
    rng.shuffle(neutral)
    return first + [("Data on ", "O"), neutral[0], (" were collected .", "O"), neutral[1], (" was reported .", "O")]


def _tar_gz(members: dict[str, bytes]) -> bytes:
    """A byte-identical archive on every run: sorted members, fixed times and owners."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        dirs = sorted({str(Path(m).parents[i]) for m in members for i in range(len(Path(m).parts) - 1)})
        for d in dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, 0
            tf.addfile(info)
        for name in sorted(members):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(members[name]), 0o644, 0
            tf.addfile(info, io.BytesIO(members[name]))
    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return out.getvalue()


def demo_pico() -> dict[str, bytes]:
    rng = _rng("pico")
    root = "ebm_nlp_demo"
    members: dict[str, bytes] = {}
    subsets = (("train", SIZES["train"] + SIZES["dev"]), ("test/gold", SIZES["test"]))
    pmid = 39100000
    for subset, count in subsets:
        for _ in range(count):
            pmid += 1
            words, labels = [], []
            # dev is a hashed subset of these training abstracts (holdout:N), so it shares their words
            for text, label in _pico_abstract(rng, "train" if subset == "train" else "test"):
                toks = _tokens(text)
                words += toks
                labels += [label] * len(toks)
            members[f"{root}/documents/{pmid}.tokens"] = (" ".join(words) + "\n").encode()
            members[f"{root}/documents/{pmid}.text"] = (" ".join(words) + "\n").encode()
            for folder, short in (("participants", "PAR"), ("interventions", "INT"), ("outcomes", "OUT")):
                ann = " ".join("1" if lab == short else "0" for lab in labels)
                path = f"{root}/annotations/aggregated/starting_spans/{folder}/{subset}/{pmid}.AGGREGATED.ann"
                members[path] = (ann + "\n").encode()
    return {"ebm_nlp_demo.tar.gz": _tar_gz(members)}


# --------------------------------------------------------------------------- relation (BLUE TSV)

# CPR:3 and CPR:4 turn on the direction of the verb, and the negative class uses the same verbs
# on another object; dev and test use verbs the training split never shows.
RE_TEMPLATES = {
    "CPR:3": ["@CHEMICAL$ {up} the expression of @GENE$ in {cell} .", "@GENE$ activity was {up} by @CHEMICAL$ ."],
    "CPR:4": ["@CHEMICAL$ {down} the expression of @GENE$ in {cell} .", "@GENE$ activity was {down} by @CHEMICAL$ ."],
    "CPR:5": ["@CHEMICAL$ is a potent agonist of @GENE$ ."],
    "CPR:6": ["@CHEMICAL$ acts as an antagonist of @GENE$ ."],
    "CPR:9": ["@CHEMICAL$ is metabolised by @GENE$ in the {organ} ."],
    "false": [
        "@CHEMICAL$ {verb} {outcome} in patients whose @GENE$ status was unknown .",
        "@GENE$ was measured after @CHEMICAL$ {verb} {outcome} .",
    ],
}
RE_LABELS = ["CPR:3", "CPR:4", "CPR:5", "CPR:6", "CPR:9", "false"]


def demo_re() -> dict[str, bytes]:
    rng = _rng("re")
    files = {}
    pmid = 39200000
    weights = [2, 2, 1, 1, 1, 3]  # the negative class is the most frequent, as in ChemProt
    for split in ("train", "dev", "test"):
        up, down = _words(lx.VERBS_INCREASE, split), _words(lx.VERBS_DECREASE, split)
        lines = ["index\tsentence\tlabel"]
        for _ in range(SIZES[split]):
            pmid += 1
            label = rng.choices(RE_LABELS, weights)[0]
            text = rng.choice(RE_TEMPLATES[label]).format(
                up=rng.choice(up),
                down=rng.choice(down),
                verb=rng.choice(up + down),
                cell=rng.choice(lx.CELLS),
                organ=rng.choice(lx.ORGANS),
                outcome=rng.choice(lx.OUTCOMES),
            )
            lines.append(f"{pmid}.T1.T2\t{text}\t{label}")
        files[f"{split}.tsv"] = ("\n".join(lines) + "\n").encode()
    return files


# --------------------------------------------------------------------------- similarity (BIOSSES, BLUE TSV)


def _sts_sentence(rng: random.Random, d: str, c: str, g: str, verb: str) -> str:
    return rng.choice(
        [
            f"{c.capitalize()} {verb} {g} expression in patients with {d}.",
            f"In {d}, treatment with {c} {verb} the levels of {g}.",
            f"{g} activity was {verb} by {c} in {d}.",
            f"Patients with {d} given {c} showed {verb} {g} activity.",
        ]
    )


# A methods sentence that shares nothing with a finding.
STS_UNRELATED = [
    "Samples were stored at -80 C until analysis.",
    "Two reviewers extracted the data independently.",
    "Statistical analyses used a two-sided alpha of 0.05.",
    "Written informed consent was obtained from all participants.",
]


def demo_sts() -> dict[str, bytes]:
    """Pairs scored by what they share: a finding and a methods sentence (nothing), the same
    disease, drug and gene changed in opposite directions (half), or in the same direction with
    another verb (nearly everything). A verb's direction is known from the pretraining text, and
    dev and test use verbs the training split never shows."""
    rng = _rng("sts")
    files = {}
    header = "index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\tsentence1\tsentence2\tscore"
    index = 0
    base = {"unrelated": 0.3, "opposite": 2.0, "same": 3.7}
    for split in ("train", "dev", "test"):
        lines = [header]
        verbs = (_words(lx.VERBS_INCREASE, split), _words(lx.VERBS_DECREASE, split))
        for _ in range(SIZES[split]):
            d, c, g = (rng.choice(_words(w, split)) for w in (lx.DISEASES, lx.CHEMICALS, lx.GENES))
            kind, first = rng.choice(list(base)), rng.randrange(2)
            if kind == "same":
                v1, v2 = rng.sample(verbs[first], 2)
            else:
                v1, v2 = rng.choice(verbs[first]), rng.choice(verbs[1 - first])
            s1 = _sts_sentence(rng, d, c, g, v1)
            s2 = rng.choice(STS_UNRELATED) if kind == "unrelated" else _sts_sentence(rng, d, c, g, v2)
            # Five annotators score 0-4; the gold score is their mean, so a multiple of 0.2.
            votes = [min(4, max(0, round(base[kind] + rng.gauss(0, 0.5)))) for _ in range(5)]
            score = sum(votes) / 5
            lines.append(f"{index}\tmsrpar\tbiosses-demo\t2017\t{index}\tpubmed\tpubmed\t{s1}\t{s2}\t{score:.1f}")
            index += 1
        files[f"{split}.tsv"] = ("\n".join(lines) + "\n").encode()
    return files


# --------------------------------------------------------------------------- document classification (HoC)

# A hallmark's process is named in a frame every hallmark shares, so only knowing the process (from
# the pretraining text, for the held-out ones) tells its hallmark.
HOC_FRAMES = [
    "{t} was found in {d} .",
    "We observed {t} after {c} .",
    "{g} was linked to {t} .",
]
HOC_NEUTRAL = [
    "We analysed samples from {n} patients with {d} .",
    "{c} was administered at a dose of {n} mg .",
    "Expression of {g} was measured by quantitative PCR .",
]


def _hoc_lines(rng, sentences, split: str, doc: int, held_out_terms: bool) -> list[str]:
    """One HoC line per (template, hallmark) sentence of abstract ``doc``; ``held_out_terms``: a
    hallmark's process comes from the split's own share of the lexicon, else from all of it."""
    lines = []
    for s_no, (template, hallmark) in enumerate(sentences):
        terms = lx.HALLMARK_TERMS[hallmark] if hallmark else None
        text = template.format(
            t=rng.choice(_words(terms, split) if held_out_terms else terms) if hallmark else "",
            g=rng.choice(_words(lx.GENES, split)),
            c=rng.choice(_words(lx.CHEMICALS, split)),
            d=rng.choice(_words(lx.DISEASES, split)),
            n=rng.randint(10, 500),
        )
        text = text[0].upper() + text[1:]
        flags = ",".join(f"{k}_{int(HALLMARKS[k] == hallmark)}" for k in range(len(HALLMARKS)))
        lines.append(f"{flags}\t{text}\t{doc}_s{s_no}")
    return lines


def demo_hoc() -> dict[str, bytes]:
    rng = _rng("hoc")
    files = {}
    doc = 39300000
    for split in ("train", "dev", "test"):
        lines = ["labels\tsentence\tindex"]
        for _ in range(SIZES[split]):
            doc += 1
            # at most three short sentences: the abstract fits the teacher's 64-token blocks
            hallmarks = rng.sample(HALLMARKS, rng.choice([0, 1, 2, 2, 3, 3]))
            sentences = [(rng.choice(HOC_FRAMES), h) for h in hallmarks] or [(rng.choice(HOC_NEUTRAL), None)]
            if len(hallmarks) == 1:
                sentences.append((rng.choice(HOC_NEUTRAL), None))
            rng.shuffle(sentences)
            lines += _hoc_lines(rng, sentences, split, doc, held_out_terms=True)
        files[f"{split}.tsv"] = ("\n".join(lines) + "\n").encode()
    return files


# Longer abstracts for reading in chunks: the same frames among more neutral sentences, so the
# abstracts run past the models' 64-token context and a hallmark is often told only after it.
# Every split names every process: this task asks whether a model reads the whole abstract, not
# what its pretraining taught (demo-hoc asks that).
LONG_SIZES = {"train": 150, "dev": 30, "test": 60}
HOC_LONG_NEUTRAL = HOC_NEUTRAL + [
    "Patients were followed for {n} months .",
    "Baseline characteristics did not differ between the groups .",
    "{g} levels were compared with those of {n} healthy controls .",
]


def demo_hoc_long() -> dict[str, bytes]:
    rng = _rng("hoc-long")
    files = {}
    doc = 39350000
    for split in ("train", "dev", "test"):
        lines = ["labels\tsentence\tindex"]
        for _ in range(LONG_SIZES[split]):
            doc += 1
            hallmarks = rng.sample(HALLMARKS, rng.choice([1, 2, 2, 3]))
            sentences = [(rng.choice(HOC_FRAMES), h) for h in hallmarks]
            sentences += [(rng.choice(HOC_LONG_NEUTRAL), None) for _ in range(rng.randint(3, 5))]
            rng.shuffle(sentences)
            lines += _hoc_lines(rng, sentences, split, doc, held_out_terms=False)
        files[f"{split}.tsv"] = ("\n".join(lines) + "\n").encode()
    return files


# --------------------------------------------------------------------------- QA (PubMedQA JSON)


def demo_pubmedqa() -> dict[str, bytes]:
    """Does the intervention reduce the outcome? The finding's verb answers: a verb of decrease
    says yes, one of increase says no, a non-significant change maybe."""
    rng = _rng("pubmedqa")
    files = {}
    pmid = 39400000
    for split in ("train", "dev", "test"):
        up, down = _words(lx.VERBS_INCREASE, split), _words(lx.VERBS_DECREASE, split)
        data = {}
        for _ in range(SIZES[split]):
            pmid += 1
            interv, outcome, pop = rng.choice(lx.INTERVENTIONS), rng.choice(lx.OUTCOMES), rng.choice(lx.POPULATIONS)
            label = rng.choices(["yes", "no", "maybe"], [4, 4, 2])[0]
            verb = rng.choice({"yes": down, "no": up, "maybe": up + down}[label])
            p = "0.4" if label == "maybe" else rng.choice(["0.001", "0.01", "0.02"])
            finding = f"{interv.capitalize()} {verb} {outcome} compared with control (P = {p})."
            contexts = [f"In {rng.randint(40, 900)} {pop}, {finding[0].lower()}{finding[1:]}"]
            data[str(pmid)] = {
                "QUESTION": f"Does {interv} reduce {outcome} in {pop}?",
                "CONTEXTS": contexts,
                "LABELS": ["RESULTS"],
                "MESHES": ["Humans", "Randomized Controlled Trials as Topic"],
                "YEAR": str(rng.randint(2005, 2023)),
                "reasoning_required_pred": label,
                "reasoning_free_pred": label,
                "final_decision": label,
                "LONG_ANSWER": finding,
            }
        files[f"pqal_{split}_set.json"] = (json.dumps(data) + "\n").encode()
    return files


# --------------------------------------------------------------------------- NLI (MedNLI JSONL)

NLI_CUES = {"entailment": lx.CUES_PRESENT, "contradiction": lx.CUES_ABSENT, "neutral": lx.CUES_UNCERTAIN}


def demo_nli() -> dict[str, bytes]:
    """A note's premise with a clinical cue (present, absent, to be established); whether the
    patient has the disease follows from the cue, and dev and test use cues only the notes show."""
    rng = _rng("nli")
    files = {}
    pair = 0
    names = {"train": "mli_train_v1.jsonl", "dev": "mli_dev_v1.jsonl", "test": "mli_test_v1.jsonl"}
    for split in ("train", "dev", "test"):
        lines = []
        for _ in range(SIZES[split]):
            pair += 1
            d, c = rng.choice(lx.DISEASES), rng.choice(lx.CHEMICALS)
            label = rng.choice(list(NLI_CUES))
            cue = rng.choice(_words(NLI_CUES[label], split))
            premise = rng.choice([f"Pt with {cue} {d}, currently on {c}.", f"Admitted with fever; {cue} {d}."])
            hypothesis = rng.choice([f"The patient has {d}.", f"Patient has a diagnosis of {d}."])
            lines.append(
                json.dumps(
                    {
                        "sentence1": premise,
                        "sentence2": hypothesis,
                        "gold_label": label,
                        "pairID": f"demo-{pair}",
                    }
                )
            )
        files[names[split]] = ("\n".join(lines) + "\n").encode()
    return files


# --------------------------------------------------------------------------- registry entries


def _entry(name: str, files: dict[str, bytes], row: dict) -> dict:
    """The registry entry of one task: its row of TASKS, with the sha256 of every file it writes."""
    # The demo tasks stand in for both benchmarks so the demo computes group means and a
    # BLURB-style score; BLURB has no NLI task.
    benchmarks = ["lewis"] if row["type"] == "nli" else ["lewis", "blurb"]
    head = {key: row[key] for key in ("display", "type", "domain", "format")}
    rest = {key: value for key, value in row.items() if key not in head}
    entry = {
        "name": name,
        **head,
        "benchmarks": benchmarks,
        "source": {
            "files": {
                f: {"url": f"{URL_ROOT}/{name}/{f}", "sha256": hashlib.sha256(data).hexdigest()}
                for f, data in sorted(files.items())
            }
        },
        **rest,
    }
    # copies, so that YAML writes no anchors where two tasks share a value
    return copy.deepcopy(entry)


# Sized for a 2-layer, hidden-64 model on CPU: a few epochs at the learning rate it was
# pretrained with, without dropout (dropout 0.1 and lr 1e-3 favour random weights).
SMALL = {"batch_size": 16, "lr": 3.0e-3, "dropout": 0.0, "epochs": 5, "eval_every": 0, "patience": 0}
# A two-layer model pretrained only on MLM gives [CLS] no summary of its input (the papers'
# models are 12 layers and were pretrained far longer); the sentence-level tasks read the
# mean over the input's tokens instead.
SENTENCE = {**SMALL, "pooling": "mean"}
TSV_SPLITS = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}


def _row(display, type_, domain, fmt, splits, metric, labels, **extra) -> dict:
    return {
        "display": display,
        "type": type_,
        "domain": domain,
        "format": fmt,
        "splits": splits,
        "metric": metric,
        "labels": labels,
        **extra,
    }


# task -> (the writer of its files, its registry row)
TASKS = {
    "demo-ner": (
        demo_ner,
        _row(
            "Demo NER",
            "ner",
            "pubmed",
            "conll",
            {"train": "train.tsv", "dev": "devel.tsv", "test": "test.tsv"},
            "entity_f1",
            ["O", "B-Disease", "I-Disease"],
            max_length=64,
            expected_counts=SIZES,
            finetune=SMALL,
        ),
    ),
    "demo-pico": (
        demo_pico,
        _row(
            "Demo PICO",
            "pico",
            "pubmed",
            "ebm_nlp",
            {
                "train": "ebm_nlp_demo.tar.gz/ebm_nlp_demo#train",
                "dev": f"holdout:{SIZES['dev']}:ebm_nlp_demo.tar.gz/ebm_nlp_demo#train",
                "test": "ebm_nlp_demo.tar.gz/ebm_nlp_demo#test/gold",
            },
            "word_macro_f1",
            ["O", "PAR", "INT", "OUT"],
            negative_label="O",
            max_length=64,
            expected_counts=SIZES,
            finetune=SMALL,
        ),
    ),
    "demo-re": (
        demo_re,
        _row(
            "Demo RE",
            "relation",
            "pubmed",
            "blue_tsv",
            TSV_SPLITS,
            "micro_f1_excl_negative",
            RE_LABELS,
            negative_label="false",
            max_length=64,
            expected_counts=SIZES,
            finetune={**SENTENCE, "epochs": 8},
        ),
    ),
    "demo-sts": (
        demo_sts,
        _row(
            "Demo STS",
            "similarity",
            "pubmed",
            "biosses",
            TSV_SPLITS,
            "pearson",
            [],
            max_length=64,
            expected_counts=SIZES,
            finetune=SENTENCE,
        ),
    ),
    "demo-hoc": (
        demo_hoc,
        _row(
            "Demo HoC",
            "doc_classification",
            "pubmed",
            "hoc",
            TSV_SPLITS,
            {"lewis": "example_f1", "blurb": "label_micro_f1"},
            HALLMARKS,
            max_length=64,
            expected_counts=SIZES,
            finetune={**SENTENCE, "lr": 1.0e-3, "epochs": 20},
        ),
    ),
    "demo-pubmedqa": (
        demo_pubmedqa,
        _row(
            "Demo PubMedQA",
            "qa",
            "pubmed",
            "pubmedqa",
            {"train": "pqal_train_set.json", "dev": "pqal_dev_set.json", "test": "pqal_test_set.json"},
            "accuracy",
            ["yes", "no", "maybe"],
            max_length=64,
            expected_counts=SIZES,
            finetune={**SENTENCE, "epochs": 10},
        ),
    ),
    "demo-nli": (
        demo_nli,
        _row(
            "Demo MedNLI",
            "nli",
            "clinical",
            "mednli",
            {"train": "mli_train_v1.jsonl", "dev": "mli_dev_v1.jsonl", "test": "mli_test_v1.jsonl"},
            "accuracy",
            ["entailment", "contradiction", "neutral"],
            max_length=64,
            expected_counts=SIZES,
            finetune=SENTENCE,
        ),
    ),
    # Abstracts longer than the models' context, read in 64-token chunks that overlap by 16
    # tokens; a hallmark told in any chunk counts (max over the chunks' logits). In neither
    # benchmark, like the full study's long-document task: its own row, outside the means.
    "demo-hoc-long": (
        demo_hoc_long,
        _row(
            "Demo HoC (long)",
            "doc_classification",
            "pubmed",
            "hoc",
            TSV_SPLITS,
            "label_micro_f1",
            HALLMARKS,
            benchmarks=[],
            max_length=256,
            expected_counts=LONG_SIZES,
            # three seeds: each run reads about four chunks per abstract
            seeds=[1, 2, 3],
            finetune={
                **SENTENCE,
                "batch_size": 8,
                "lr": 2.0e-3,
                "epochs": 12,
                "chunking": True,
                "chunk_stride": 16,
                "chunk_pooling": "max",
            },
        ),
    ),
}


def generate() -> tuple[dict[str, bytes], dict]:
    """All demo task files (path under the output folder -> bytes) and their registry entries."""
    tasks = {name: write() for name, (write, _) in TASKS.items()}
    specs = {name: _entry(name, tasks[name], row) for name, (_, row) in TASKS.items()}
    files = {f"{task}/{name}": data for task, fs in tasks.items() for name, data in fs.items()}
    return files, specs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="output folder (demo/raw_source/tasks)")
    ap.add_argument("--spec", type=Path, help="also write the registry entries here (demo_tasks.yaml)")
    args = ap.parse_args()
    files, specs = generate()
    for name, data in files.items():
        path = args.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if args.spec:
        args.spec.write_text(
            "# Registry entries of the demo tasks, written by demo/generator/tasks.py; paste under\n"
            "# tasks: in demo/config.yaml. urls are relative to the demo run directory.\n"
            + yaml.safe_dump(specs, sort_keys=False, allow_unicode=True),
            encoding="utf-8",
        )


if __name__ == "__main__":
    main()
