"""What benchmarks/gpu_demo.sh measured, as JSON, from the run's own records; rewritten while it runs.

    python benchmarks/gpu_demo_report.py --directory results/demo-gpu --out gpu_demo.json \\
        [--samples card.csv] [--set key=value ...]

- wall time per stage: each job from Snakemake's log (bench_demo.parse_log), grouped by the stage
  (``rules/<stage>.smk``) that defines its rule: first start to last end, and job-seconds;
- the card's busy share: ``nvidia-smi`` samples (timestamp, utilisation %, memory MiB), over the
  run and within each stage's span: the share of samples with the card computing, and the mean;
- runs per card: each fine-tuning run's share of its card, as its provenance records it (840/share),
  and the most fine-tuning runs that ran at once;
- the tables: medians, BLURB and the findings, as written.
Nothing here is a prediction: a figure missing from the records is left out.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_demo import parse_log  # noqa: E402

from workflow_scripts.console import rule_stages  # noqa: E402

TABLES = ("results/tables/medians.csv", "results/tables/blurb.csv", "results/tables/findings.md")


def card_samples(path: Path | None) -> list[tuple[datetime, float, float]]:
    """(time, utilisation %, memory MiB) per line of ``nvidia-smi --query-gpu=timestamp,utilization.gpu,
    memory.used --format=csv,noheader,nounits``; lines cut short by a stop are skipped."""
    samples = []
    if path is None or not path.is_file():
        return samples
    for line in path.read_text(errors="replace").splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            stamp = datetime.strptime(parts[0].split(".")[0], "%Y/%m/%d %H:%M:%S")
            samples.append((stamp, float(parts[1]), float(parts[2])))
        except (ValueError, IndexError):
            continue
    return samples


def busy(samples: list, start: datetime | None = None, end: datetime | None = None) -> dict | None:
    inside = [s for s in samples if (start is None or s[0] >= start) and (end is None or s[0] <= end)]
    if not inside:
        return None
    return {
        "samples": len(inside),
        "busy_share": round(sum(1 for s in inside if s[1] > 0) / len(inside), 3),
        "mean_utilization_pct": round(sum(s[1] for s in inside) / len(inside), 1),
        "max_memory_mib": max(s[2] for s in inside),
    }


def stages(jobs: list[dict], stage_of: dict[str, str], samples: list) -> dict:
    out: dict[str, dict] = {}
    for stage in dict.fromkeys(stage_of.get(j["rule"], j["rule"]) for j in sorted(jobs, key=lambda j: j["start"])):
        mine = [j for j in jobs if stage_of.get(j["rule"], j["rule"]) == stage]
        start, end = min(j["start"] for j in mine), max(j["end"] for j in mine)
        out[stage] = {
            "jobs": len(mine),
            "wall_s": (end - start).total_seconds(),
            "job_s": sum((j["end"] - j["start"]).total_seconds() for j in mine),
            "card": busy(samples, start, end),
        }
    return out


def finetune_runs(directory: Path, jobs: list[dict]) -> dict:
    shares = {}
    for path in (directory / "results" / "finetune").glob("*/*/fold~*/seed~*/provenance.json"):
        cards = json.loads(path.read_text()).get("cards") or {}
        if cards.get("share"):
            units, whole = (int(x) for x in cards["share"].split("/"))
            shares[str(path.parent.relative_to(directory))] = {
                "cards": cards.get("cuda_visible_devices"),
                "runs_per_card": whole // units,
            }
    runs = [j for j in jobs if j["rule"] == "finetune"]
    most = max((sum(1 for o in runs if o["start"] <= j["start"] < o["end"]) for j in runs), default=0)
    per_card = sorted({s["runs_per_card"] for s in shares.values()})
    return {"runs": len(runs), "runs_per_card": per_card, "most_at_once": most, "cards_used": _cards(shares)}


def _cards(shares: dict) -> dict:
    counts: dict[str, int] = {}
    for share in shares.values():
        counts[share["cards"]] = counts.get(share["cards"], 0) + 1
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--directory", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--samples", type=Path, default=None)
    parser.add_argument("--set", action="append", default=[], help="key=value to record as it is (JSON if it parses)")
    args = parser.parse_args()
    record: dict = {}
    for item in args.set:
        key, value = item.split("=", 1)
        try:
            record[key] = json.loads(value)
        except ValueError:
            record[key] = value
    log = args.directory / "results" / "logs" / "snakemake.log"
    jobs = parse_log(log)["jobs"] if log.is_file() else []
    samples = card_samples(args.samples)
    record["card"] = busy(samples)
    record["stages"] = stages(jobs, rule_stages(ROOT / "Snakefile"), samples)
    record["finetune"] = finetune_runs(args.directory, jobs)
    record["tables"] = {
        name: (args.directory / name).read_text() for name in TABLES if (args.directory / name).is_file()
    }
    part = args.out.with_name(args.out.name + ".part")
    part.write_text(json.dumps(record, indent=1))
    part.replace(args.out)


if __name__ == "__main__":
    main()
