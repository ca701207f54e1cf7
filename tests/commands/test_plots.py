"""The documentation's figures: no two labels overlap once drawn (tick labels, axis labels, titles, legend entries,
annotations), and the README shows each figure with the command that makes it."""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

from properties.commands import plots

ROOT = Path(__file__).resolve().parents[2]


def _texts(fig: Any) -> list[tuple[str, Any]]:
    """(what, Text) for every label drawn on ``fig``: each axis's visible tick labels inside its view, axis labels,
    titles, legend entries, annotations and the figure's title."""
    out = []
    for ax in fig.axes:
        axes = [ax.xaxis, ax.yaxis, *([ax.zaxis] if hasattr(ax, "zaxis") else [])]
        for axis in axes:
            low, high = sorted(axis.get_view_interval())
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                for label in (tick.label1, tick.label2):
                    if label.get_visible() and label.get_text() and low <= tick.get_loc() <= high:
                        out.append((f"{axis.axis_name} tick {label.get_text()}", label))
            out.append((f"{axis.axis_name} label", axis.label))
        out += [(f"title {t.get_text()[:20]!r}", t) for t in (ax.title, ax._left_title, ax._right_title)]
        out += [(f"text {t.get_text()[:20]!r}", t) for t in ax.texts]
        legend = ax.get_legend()
        out += [(f"legend {t.get_text()[:20]!r}", t) for t in (legend.get_texts() if legend else [])]
    suptitle = getattr(fig, "_suptitle", None)
    out += [("suptitle", suptitle)] if suptitle is not None else []
    return [(what, t) for what, t in out if t.get_visible() and t.get_text().strip()]


def overlaps(fig: Any, slack: float = 1.0) -> list[str]:
    """The pairs of drawn labels whose boxes intersect by more than ``slack`` pixels both ways."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    boxes = [(what, t.get_window_extent(renderer)) for what, t in _texts(fig)]
    found = []
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        width = min(box_a.x1, box_b.x1) - max(box_a.x0, box_b.x0)
        height = min(box_a.y1, box_b.y1) - max(box_a.y0, box_b.y0)
        if width > slack and height > slack:
            found.append(f"{a} × {b}")
    return found


def _figure_with(ticks: list[float]) -> Any:
    fig = plots._figure(2.0, 1.5)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([min(ticks), max(ticks)], [0, 1])
    ax.set_xticks(ticks, [f"{t:.6f}" for t in ticks])
    return fig


def test_the_check_finds_overlapping_tick_labels_and_passes_spaced_ones():
    assert overlaps(_figure_with([0.0, 0.1, 0.2, 0.3, 0.4, 0.5]))  # six long labels on a 2-inch axis
    assert not overlaps(_figure_with([0.0, 0.5]))


SLOW = {"grad_vs_depth"}  # 32-layer stacks: minutes on a shared CPU


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in plots.PLOTS])
def test_no_two_labels_of_a_figure_overlap(name):
    assert overlaps(plots.PLOTS[name].draw()) == []


def test_the_readme_shows_each_figure_and_the_command_that_makes_it():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shown = set(re.findall(r"\]\(docs/([\w.]+\.png)\)", readme))
    assert {p.file for p in plots.PLOTS.values()} <= shown
    for name, plot in plots.PLOTS.items():
        assert (ROOT / "docs" / plot.file).is_file()
        assert f"nanolm-verify plot {name}" in readme, f"README: the command that makes docs/{plot.file}"
