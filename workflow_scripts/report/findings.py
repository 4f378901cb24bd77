"""The study's findings in sentences, each computed from the tables: findings.md beside them,
and findings.html (the findings, the main tables and the plots on one page) for the HTML report.

    python -m workflow_scripts.report.findings --settings results/configs/report.yaml \
        --tables results/tables [--heldout results/tables/heldout_mlm.csv] [--plot results/tables/scores.png ...]

A paragraph on the method (which test, which correction, what the verdicts mean), then one
sentence per configured model pair and stated group mean (comparisons.csv rows ``mean:<group>``:
values, paired difference, the test, n, its interval, raw and corrected p, the verdict), one per
distilled student on held-out MLM loss (heldout_mlm.csv: teacher, student, train-longer
control), one per task on the no-training baseline (its own family of tests in comparisons.csv),
and one per anomaly (anomalies.py). An effect that is not there is stated as not appearing;
nothing here is typed in by hand.
"""

from __future__ import annotations

import argparse
import base64
import html
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import provenance
from ..atomic import write_text
from ..cli import run
from ..errors import PipelineError
from .anomalies import control_anomalies, spread_anomalies
from .families import BASELINE, STATED
from .group_compare import GROUP_PREFIX, STATED_GROUPS
from .multibootstrap import MULTI_BOOTSTRAP, SAMPLES
from .settings import ReportSettings, load
from .significance import BEYOND, CORRECTED, CORRECTION_NAMES, SUGGESTIVE
from .stats import SIGN_FLIP, T_TEST

log = logging.getLogger(__name__)


@dataclass
class Finding:
    topic: str
    sentence: str
    appeared: bool | None  # None: could not be computed


def _read(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise PipelineError(f"{path}: not found; write the tables first (rule tables)")
    return pd.read_csv(path)


def _num(value, digits: int = 1) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{value:.{digits}f}"


def _signed(value, digits: int = 1) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{value:+.{digits}f}"


def _pval(p: float, alpha: float) -> str:
    """p to 3 decimals (2 significant digits below 0.001), with more digits where rounding would
    put the printed p on the other side of alpha than the verdict's (0.0498 is not "0.050")."""
    if p == 0:
        return "0"
    text = (lambda more: f"{p:.{1 + more}e}") if p < 0.001 else (lambda more: f"{p:.{3 + more}f}")
    more = 0
    while (float(text(more)) < alpha) != (p < alpha) and more < 6:
        more += 1
    return text(more)


def _needs(r) -> str:
    """The seeds an exact test would need, where the t-test stood in for it."""
    return "" if pd.isna(r.seeds_for_exact) else f"; the exact sign-flip test needs {int(r.seeds_for_exact)} seeds"


def _n(r) -> str:
    """A test's n, and for the multi-bootstrap the seeds it resamples."""
    n = int(r.n_pairs)
    if MULTI_BOOTSTRAP not in r.test:
        return f"n = {n}"
    rows = int(r.pretrain_seeds)
    return f"n = {n}: {rows} pretraining x {n // rows} fine-tuning seeds"


def survival(r) -> str:
    """Whether a claim's effect was tested against, and survives, pretraining-seed variation."""
    if MULTI_BOOTSTRAP in r.test:
        if r.verdict == BEYOND:
            return "; the effect survives pretraining-seed variation (multi-bootstrap)"
        return "; it is not shown to survive pretraining-seed variation (multi-bootstrap)"
    if r.verdict == BEYOND:
        return "; each model was pretrained once, so survival of pretraining-seed variation is untested"
    return ""


def _ps(settings: ReportSettings, r) -> str:
    sig = settings.significance
    return f"p = {_pval(r.p, sig.alpha)}, {CORRECTED[sig.correction]} = {_pval(r.p_corrected, sig.alpha)}"


def pair_findings(settings: ReportSettings, comparisons: pd.DataFrame) -> list[Finding]:
    """One sentence per configured pair and stated group mean."""
    out = []
    level = round(100 * settings.aggregation.confidence)
    stated = comparisons[comparisons["family"] == STATED]
    rows = [r for g in STATED_GROUPS for r in stated.itertuples(index=False) if r.task == GROUP_PREFIX + g]
    for r in rows:
        group = r.task[len(GROUP_PREFIX) :]
        a, b = settings.models[r.model_a].display, settings.models[r.model_b].display
        head = f"{a} vs {b}, {group} mean: {_num(r.value_a)} vs {_num(r.value_b)}"
        if pd.isna(r.mean_paired_difference):
            out.append(Finding(f"{group} mean", f"{head}; no paired comparison ({r.note}).", None))
            continue
        stats = (
            f"paired difference {_signed(r.mean_paired_difference)} ({r.test}, {_n(r)}, "
            f"{level}% CI {_signed(r.ci_low)} to {_signed(r.ci_high)}, {_ps(settings, r)}{_needs(r)})"
        )
        winner = a if r.mean_paired_difference > 0 else b
        if r.verdict == BEYOND:
            verdict = f"{winner} is better beyond seed noise"
        elif r.verdict == SUGGESTIVE:
            verdict = (
                f"suggestive (p = {_pval(r.p, settings.significance.alpha)}): {winner} scores higher, but not "
                f"after correcting for {int(r.family_size)} comparisons"
            )
        else:
            verdict = "the difference is within seed noise: no effect appeared"
        appeared = r.verdict == BEYOND and r.mean_paired_difference > 0
        out.append(Finding(f"{group} mean", f"{head}, {stats}: {verdict}{survival(r)}.", appeared))
    return out


def heldout_findings(settings: ReportSettings, heldout: pd.DataFrame) -> list[Finding]:
    """Teacher < student < train-longer control on held-out MLM loss, per distilled student."""

    def name(model: str) -> str:
        m = settings.models.get(model)
        return m.display if m else model

    loss = dict(zip(heldout["model"], heldout["heldout_loss"], strict=True))
    out = []
    for r in heldout[heldout["role"] == "distilled"].itertuples(index=False):
        teacher = loss.get(r.teacher)
        parts = [f"teacher {name(r.teacher)} {_num(teacher, 3)}", f"student {name(r.model)} {_num(r.heldout_loss, 3)}"]
        checks = [(teacher, r.heldout_loss, "the teacher is lower than its student")]
        if isinstance(r.control, str) and r.control:
            parts.append(f"train-longer control {name(r.control)} {_num(r.control_loss, 3)}")
            checks.append((r.heldout_loss, r.control_loss, "the student is lower than the train-longer control"))
        verdicts = [
            f"{text}: {'yes' if lo < hi else 'no, the effect did not appear'}"
            for lo, hi, text in checks
            if not (pd.isna(lo) or pd.isna(hi))
        ]
        appeared = all(lo < hi for lo, hi, _ in checks if not (pd.isna(lo) or pd.isna(hi)))
        out.append(
            Finding(
                "held-out MLM loss",
                f"Held-out MLM loss ({', '.join(parts)}; one evaluation on the same "
                f"masked blocks, no seed interval): {'; '.join(verdicts)}.",
                appeared,
            )
        )
    return out


def _baseline_sentence(settings: ReportSettings, display: str, base: float, claims: pd.DataFrame) -> Finding:
    """One task's claims above the no-training baseline: which models clear it, with their tests."""
    name = {m: settings.models[m].display for m in claims["model_a"]}
    tested = claims[claims["verdict"].notna()]
    above = tested[(tested["verdict"] == BEYOND) & (tested["mean_paired_difference"] > 0)]
    best = claims.loc[claims["value_a"].fillna(-1e9).idxmax()]
    tests = ", ".join(dict.fromkeys(f"{r.test}, {_n(r)}{_needs(r)}" for r in tested.itertuples()))
    if above.empty:
        weakest = tested.loc[tested["p_corrected"].idxmin()] if not tested.empty else None
        ps = f"; smallest {_ps(settings, weakest)}" if weakest is not None else ""
        return Finding(
            "baseline",
            f"{display}: no model's score clears the no-training baseline ({_num(base)}) after correction "
            f"({tests or 'no test'}{ps}; best {name[best.model_a]} {_num(best.value_a)}): nothing learned appeared.",
            False,
        )
    worst = above.loc[above["p_corrected"].idxmax()]
    sentence = (
        f"{display}: {len(above)} of {len(claims)} models score above the no-training baseline ({_num(base)}) "
        f"beyond seed noise ({tests}; largest {_ps(settings, worst)}); best {name[best.model_a]} "
        f"{_num(best.value_a)}"
    )
    rest = [r for r in claims.itertuples() if r.model_a not in set(above["model_a"])]
    if rest:
        sentence += "; the others not: " + ", ".join(
            f"{name[r.model_a]} ({_signed(r.mean_paired_difference)}, {_ps(settings, r)})"
            if not pd.isna(r.p)
            else f"{name[r.model_a]} (no test: {r.note})"
            for r in rest
        )
    return Finding("baseline", sentence + ".", True)


def baseline_findings(settings: ReportSettings, comparisons: pd.DataFrame) -> list[Finding]:
    """Per task: which real models score above the no-training baseline, by their corrected tests."""
    claims = comparisons[comparisons["family"] == BASELINE]
    out = []
    for task, t in settings.tasks.items():
        mine = claims[claims["task"] == task]
        if mine.empty:
            continue
        base = mine["value_b"].iloc[0]
        if pd.isna(base):
            out.append(Finding("baseline", f"{t.display}: no baseline value.", None))
            continue
        out.append(_baseline_sentence(settings, t.display, base, mine))
    return out


def _family_tests(claims: pd.DataFrame) -> str:
    """Which test decided how many of a family's claims, and over how many pairs."""
    tested = claims[claims["test"].notna()]
    parts = [
        f"the {test} for {len(g)} (n = {', '.join(str(int(n)) for n in sorted(g['n_pairs'].unique()))})"
        for test, g in tested.groupby("test", sort=False)
    ]
    return "; ".join(parts) or "none tested"


def method(settings: ReportSettings, comparisons: pd.DataFrame) -> str:
    """How the sentences below were decided, with this study's families and tests."""
    sig, level = settings.significance, round(100 * settings.aggregation.confidence)
    families = [
        (f"the model pairs on the {' and '.join(STATED_GROUPS)} means", comparisons[comparisons["family"] == STATED]),
        ("the models above the no-training baseline, per task", comparisons[comparisons["family"] == BASELINE]),
    ]
    described = "; ".join(
        f"{name}: {int(c['family_size'].iloc[0])} claims, {_family_tests(c)}" for name, c in families if not c.empty
    )
    correction = (
        "no correction for many comparisons (report.correction: none)"
        if sig.correction == "none"
        else f"{CORRECTION_NAMES[sig.correction]} correction within each family (report.correction: {sig.correction})"
    )
    return (
        f"Each paired comparison over n seeds is tested with the {SIGN_FLIP} permutation test (two-sided, all 2^n "
        "sign vectors) where its smallest attainable p, 2/2^n, is below the strictest level the claim is judged at "
        f"(alpha / m for m claims in its family, and 1 - {settings.aggregation.confidence}), and with Student's "
        f"{T_TEST} otherwise, which can reach that level with few seeds but assumes roughly normal differences; "
        f"the choice depends on n and m only, never on the scores. Intervals ({level}%, uncorrected): the t "
        "interval, or the shifts the sign-flip test does not reject. "
        f"{correction}: {described or 'no claims'}. "
        f"Beyond seed noise: corrected p < alpha = {sig.alpha}; suggestive: raw p < alpha but not the corrected p; "
        "within seed noise otherwise. " + scores(settings) + " " + pretraining_seeds(settings)
    )


def scores(settings: ReportSettings) -> str:
    """What the two kinds of number in a sentence are, so that a reader does not subtract one from the other."""
    stat = settings.aggregation.statistic_of("lewis")
    return (
        f"A score is a table's cell (a task's {stat} over its runs; a group's, the mean of its tasks' cells); a "
        "signed difference is the mean over paired seeds of the two models' difference, so it need not equal "
        "the difference of their cells."
    )


def pretraining_seeds(settings: ReportSettings) -> str:
    """What the tests say of pretraining-seed variation, with the models pretrained more than once."""
    seeded = [f"{m.display} ({len(m.pretrain_seeds)})" for m in settings.models.values() if len(m.pretrain_seeds) > 1]
    if not seeded:
        return (
            "Pretraining was run once per model: every interval covers fine-tuning seeds only, so no effect here "
            "is shown to survive pretraining-seed variation."
        )
    return (
        f"Models pretrained once per seed ({', '.join(seeded)} pretraining seeds): their cells pool every pretraining "
        "x fine-tuning run, and their claims are tested with the multi-bootstrap of Sellam et al. (ICLR 2022, "
        f"'The MultiBERTs'): {SAMPLES:,} replicates, each drawing pretraining seeds with replacement and, "
        "within each, fine-tuning seeds, the same draws for both models (a model pretrained once pairs its runs "
        "with each of the other's seeds); its p is twice the share of replicates on the smaller side of zero, "
        "counted as (k + 1) / (B + 1), its interval their percentiles. A bootstrap over a few seeds covers too "
        "little, so such a claim must also pass the test above on the runs' means over pretraining seeds: its p "
        "is the larger of the two (an intersection-union test), and its interval the two intervals joined (the "
        "shifts that not both tests reject), so it holds zero wherever the p says noise. Such a claim beyond "
        "noise survives pretraining-seed variation; the other intervals cover fine-tuning seeds only."
    )


def findings(settings: ReportSettings, tables: Path, heldout: Path | None) -> tuple[str, list[Finding]]:
    """The method paragraph and the findings."""
    comparisons = _read(tables / "comparisons.csv")
    medians = _read(tables / "medians.csv")
    out = pair_findings(settings, comparisons)
    if heldout is not None:
        out += heldout_findings(settings, _read(heldout))
    out += baseline_findings(settings, comparisons)
    anomalies = control_anomalies(settings, medians)
    anomalies += spread_anomalies(settings, _read(tables / "spread.csv"), comparisons)
    out += [Finding("anomaly", sentence, True) for sentence in anomalies]
    return method(settings, comparisons), out


CORRECTED_P = re.compile(r"corrected p(?: \(no correction\))? = ([0-9.e+-]+)")


def unsupported(items: list[Finding], alpha: float) -> list[str]:
    """Sentences that say "beyond" without printing a corrected p, or with one not below alpha
    (a baseline sentence's claim ends where it lists "the others not")."""
    out = []
    for f in items:
        claim = f.sentence.split("the others not:")[0]
        ps = [float(p.rstrip(".")) for p in CORRECTED_P.findall(claim)]
        if "beyond" in claim and not (ps and all(p < alpha for p in ps)):
            out.append(f.sentence)
    return out


def to_markdown(intro: str, items: list[Finding]) -> str:
    lines = ["## Findings", "", intro, ""]
    lines += [f"- {f.sentence}" for f in items] or ["- No comparison is configured (aggregation.compare)."]
    return "\n".join(lines) + "\n"


def _pivot_html(table: pd.DataFrame, row: str, table_id: str) -> str:
    wide = table.pivot_table(index=row, columns="model_display", values="value", aggfunc="first", sort=False)
    return wide.round(1).to_html(na_rep="—", table_id=table_id, border=0)


def to_html(intro: str, items: list[Finding], tables: Path, plots: Sequence[Path]) -> str:
    """Findings, the per-task and group tables and the plots on one self-contained page (the
    HTML report shows it on its first page)."""
    entries = "".join(f"<li>{html.escape(f.sentence)}</li>" for f in items)
    medians = _pivot_html(_read(tables / "medians.csv"), "task_display", "medians")
    groups = _pivot_html(_read(tables / "groups.csv"), "group", "groups")
    figures = "".join(
        f"<figure><img alt='{p.stem}' style='max-width:100%' "
        f"src='data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}'>"
        f"<figcaption>{p.stem}</figcaption></figure>"
        for p in plots
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Findings</title></head><body>"
        f"<h2>Findings</h2><p>{html.escape(intro)}</p><ul id='findings'>{entries}</ul>"
        f"<h2>Test results per task (x100)</h2>{medians}<h2>Group means (x100)</h2>{groups}"
        f"<h2>Plots</h2>{figures}</body></html>\n"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m workflow_scripts.report.findings", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--settings", required=True, help="report settings YAML (results/configs/report.yaml)")
    parser.add_argument("--tables", required=True, type=Path, help="directory of the tables (results/tables)")
    parser.add_argument("--heldout", type=Path, default=None, help="heldout_mlm.csv, where the study distils")
    parser.add_argument("--plot", type=Path, action="append", default=[], help="a figure shown on the page")
    args = parser.parse_args(argv)
    started = provenance.now()
    settings = load(args.settings)
    intro, items = findings(settings, args.tables, args.heldout)
    wrong = unsupported(items, settings.significance.alpha)
    if wrong:
        raise PipelineError(f"a finding says 'beyond' without a corrected p below alpha: {wrong[0]}")
    md, page = args.tables / "findings.md", args.tables / "findings.html"
    write_text(md, to_markdown(intro, items))
    write_text(page, to_html(intro, items, args.tables, args.plot))
    for f in items:
        log.info("%s", f.sentence)
    inputs: dict = {"settings": args.settings, "plots": [str(p) for p in args.plot]}
    inputs.update({name: str(args.tables / f"{name}.csv") for name in ("comparisons", "medians", "spread", "groups")})
    if args.heldout is not None:
        inputs["heldout"] = str(args.heldout)
    provenance.record(
        md,
        step="report.findings",
        inputs=inputs,
        outputs=[md, page],
        started=started,
        path=args.tables / "findings.provenance.json",
    )


if __name__ == "__main__":
    run(main)
