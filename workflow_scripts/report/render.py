"""Write a table as CSV, Markdown and LaTeX (atomically).

Display cells are ``(text, marks)``; marks are footnote symbols (RESTRICTED, INCOMPLETE)
rendered as superscripts in LaTeX.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from ..atomic import write_text

RESTRICTED = "†"
INCOMPLETE = "‡"
NO_VALUE = "—"
LEGEND = {
    RESTRICTED: "derived from credentialed data (MIMIC-III, i2b2, MedNLI); access needs a data use agreement",
    INCOMPLETE: "fewer runs than configured, or member tasks without results (see missing.md)",
}


def marked(label: str, restricted: bool) -> str:
    """A label (plot legend, table row) with the restricted mark where it applies."""
    return f"{label} {RESTRICTED}" if restricted else label


_TEX_MARKS = {RESTRICTED: r"\dagger", INCOMPLETE: r"\ddagger"}
_TEX_ESCAPES = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "—": "---",
    "−": "-",
    "±": r"$\pm$",
    "↔": r"$\leftrightarrow$",
}

DisplayCell = tuple[str, str]


CSV_DIGITS = 4


def csv_number(value: float | None) -> float | None:
    """A value as the CSV files hold it: rounded to CSV_DIGITS decimals."""
    return None if value is None else round(value, CSV_DIGITS)


def csv_percent(fraction: float | None) -> float | None:
    return None if fraction is None else csv_number(100.0 * fraction)


def _half_up(value: float, digits: int) -> Decimal:
    # Round half away from zero on the shortest decimal form, as tables are read: 81.65 -> 81.7.
    return Decimal(repr(round(value, 9))).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP)


def number(value: float | None, digits: int = 1) -> str:
    return "" if value is None else str(_half_up(value, digits))


def signed(value: float | None, digits: int = 1) -> str:
    if value is None:
        return ""
    rounded = _half_up(value, digits)
    if rounded == 0:
        rounded = abs(rounded)
    return ("+" if rounded >= 0 else "") + str(rounded)


def with_published(value: float | None, published: float | None, digits: int) -> str:
    """``91.7 (93.0, -1.3)``: ours, then the published value and the difference."""
    if value is None:
        text = NO_VALUE
    else:
        text = number(value, digits)
    if published is not None:
        diff = f", {signed(value - published, digits)}" if value is not None else ""
        text += f" ({number(published, digits)}{diff})"
    return text


def csv_text(header: Sequence[str], rows: Sequence[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(header), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in header})
    return buf.getvalue()


def _used_marks(rows: Sequence[Sequence[DisplayCell]]) -> list[str]:
    used = {m for row in rows for _, marks in row for m in marks}
    return [m for m in LEGEND if m in used]


def markdown(
    title: str, header: Sequence[str], rows: Sequence[Sequence[DisplayCell]], notes: Sequence[str] = ()
) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    out = [f"## {title}", "", line(header), "| " + " | ".join(["---"] + ["---:"] * (len(header) - 1)) + " |"]
    for row in rows:
        out.append(line([text + marks for text, marks in row]))
    extra = list(notes) + [f"{m} {LEGEND[m]}" for m in _used_marks(rows)]
    if extra:
        out.append("")
        out.extend(f"{n}  " for n in extra)
    return "\n".join(out) + "\n"


def tex_escape(text: str) -> str:
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in text)


def latex(
    caption: str, label: str, header: Sequence[str], rows: Sequence[Sequence[DisplayCell]], notes: Sequence[str] = ()
) -> str:
    def cell(text: str, marks: str) -> str:
        sup = "".join(_TEX_MARKS.get(m, m) for m in marks)
        return tex_escape(text) + (f"$^{{{sup}}}$" if sup else "")

    legend = [tex_escape(n) for n in notes] + [
        f"$^{{{_TEX_MARKS[m]}}}$ {tex_escape(LEGEND[m])}." for m in _used_marks(rows)
    ]
    out = [
        r"% needs \usepackage{booktabs}",
        r"\begin{table}[ht]",
        r"\centering",
        r"\small",
        r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
        r"\toprule",
        " & ".join(tex_escape(h) for h in header) + r" \\",
        r"\midrule",
    ]
    for row in rows:
        out.append(" & ".join(cell(t, m) for t, m in row) + r" \\")
    out += [r"\bottomrule", r"\end{tabular}"]
    caption_text = " ".join([tex_escape(caption) + "."] + legend)
    out += [rf"\caption{{{caption_text}}}", rf"\label{{{label}}}", r"\end{table}"]
    return "\n".join(out) + "\n"


def write_table(
    out_dir: Path,
    stem: str,
    csv_header: Sequence[str],
    csv_rows: Sequence[dict],
    title: str,
    header: Sequence[str],
    rows: Sequence[Sequence[DisplayCell]],
    notes: Sequence[str] = (),
) -> list[Path]:
    """Write ``stem.csv``, ``stem.md`` and ``stem.tex``; return their paths."""
    paths = [out_dir / f"{stem}.{ext}" for ext in ("csv", "md", "tex")]
    write_text(paths[0], csv_text(csv_header, csv_rows))
    write_text(paths[1], markdown(title, header, rows, notes))
    write_text(paths[2], latex(title, f"tab:{stem}", header, rows, notes))
    return paths
