"""Score per cost: the Pareto frontier of models on a score against a cost, its plot and its sentence.

A model is on the frontier when no other model is at least as good on both axes and better on one.
Controls are drawn beside the models, in grey, and never on the frontier (as in every other figure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from ..atomic import atomic_file  # noqa: E402
from .render import number  # noqa: E402


@dataclass
class Point:
    name: str  # the label drawn (display name, with its restricted mark)
    cost: float
    score: float
    control: bool = False


@dataclass
class Panel:
    score: str  # "All mean", "BLURB score"
    cost: str  # axis label
    lower_is_better: bool  # device-hours: fewer is better; throughput: more is better
    points: list[Point]

    @property
    def title(self) -> str:
        return f"{self.score} against {self.cost}"


def frontier(points: list[Point], lower_is_better: bool) -> list[Point]:
    """The non-control points no other non-control point dominates, by cost (best first)."""
    sign = 1.0 if lower_is_better else -1.0
    models = [p for p in points if not p.control]

    def dominates(a: Point, b: Point) -> bool:
        cheaper, better = sign * a.cost <= sign * b.cost, a.score >= b.score
        return cheaper and better and (sign * a.cost < sign * b.cost or a.score > b.score)

    front = [p for p in models if not any(dominates(q, p) for q in models if q is not p)]
    return sorted(front, key=lambda p: (sign * p.cost, -p.score))


def sentence(panel: Panel) -> str:
    """One findings sentence naming the models on the panel's frontier."""
    front = frontier(panel.points, panel.lower_is_better)
    if not front:
        return f"{panel.title}: no model has both figures, so there is no frontier."
    names = ", ".join(f"{p.name} ({number(p.score)} at {p.cost:.3g})" for p in front)
    rest = len([p for p in panel.points if not p.control]) - len(front)
    others = f"; {rest} other{'s are' if rest > 1 else ' is'} dominated" if rest else ""
    return f"{panel.title}: the Pareto frontier holds {names}{others}."


NEAR = 0.02  # points closer than this share of each axis's span share one label


def _log_scale(points: list[Point]) -> bool:
    costs = [p.cost for p in points]
    return bool(costs) and min(costs) > 0 and max(costs) / min(costs) > 100


def _labels(points: list[Point], log: bool) -> list[tuple[Point, str]]:
    """One label per cluster of points that would print over each other, the names one per line at the
    first point (a model's pretraining seeds share its score, and models of one architecture their throughput)."""
    x = [math.log10(p.cost) if log else p.cost for p in points]
    y = [p.score for p in points]
    span_x, span_y = (max(v) - min(v) or 1.0 for v in (x, y))
    clusters: list[list[int]] = []
    for i in range(len(points)):
        near = (c for c in clusters if abs(x[c[0]] - x[i]) <= NEAR * span_x and abs(y[c[0]] - y[i]) <= NEAR * span_y)
        cluster = next(near, None)
        if cluster is None:
            clusters.append([i])
        else:
            cluster.append(i)
    return [(points[c[0]], "\n".join(points[i].name for i in c)) for c in clusters]


def _draw(ax, panel: Panel) -> None:
    log = _log_scale(panel.points)
    for i, p in enumerate(panel.points):
        colour = "0.5" if p.control else f"C{i % 10}"
        ax.scatter([p.cost], [p.score], edgecolors=colour, facecolors="none" if p.control else colour, zorder=3)
    for p, label in _labels(panel.points, log):
        ax.annotate(label, (p.cost, p.score), textcoords="offset points", xytext=(4, 4), fontsize=7, va="bottom")
    ax.margins(x=0.12, y=0.08)
    front = frontier(panel.points, panel.lower_is_better)
    if front:
        ax.plot([p.cost for p in front], [p.score for p in front], "k--", linewidth=1, label="Pareto frontier")
        ax.legend(fontsize=7, loc="best")  # where it hides the fewest points
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(panel.cost)
    ax.set_ylabel(panel.score)
    ax.set_title(panel.title, fontsize=9)


def _separate(fig, ax) -> None:
    """Moves each label that would print over one placed above it down until it clears them all (labels
    of points at nearby scores otherwise overlap)."""
    renderer = fig.canvas.get_renderer()
    placed = []
    for ann in sorted(ax.texts, key=lambda a: -a.xy[1]):
        for _ in range(len(placed) + 1):
            box = ann.get_window_extent(renderer)
            hit = next((b for b in placed if b.overlaps(box)), None)
            if hit is None:
                break
            x, y = ann.xyann
            ann.xyann = (x, y - (box.y1 - hit.y0 + 1) * 72 / fig.dpi)
        placed.append(ann.get_window_extent(renderer))


def figure(panels: list[Panel], title: str):
    """One panel per score and cost; a panel without points says so."""
    cols = 2
    rows = max(1, -(-len(panels) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 4.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, panels, strict=False):
        if panel.points:
            _draw(ax, panel)
        else:
            ax.axis("off")
            ax.set_title(panel.title, fontsize=9)
            ax.text(0.5, 0.5, "no model has both figures", ha="center", va="center", transform=ax.transAxes)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    for ax, panel in zip(axes.flat, panels, strict=False):
        if panel.points:
            _separate(fig, ax)
    return fig


def plot(panels: list[Panel], path: Path, title: str) -> Path:
    fig = figure(panels, title)
    with atomic_file(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path
