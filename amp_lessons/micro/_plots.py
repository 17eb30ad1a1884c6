"""Pictures of the microscaling lesson: the recipe table, tiny updates in bf16, training with bf16 weights."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes

from .._draw import axes_for, legend_outside, name_artist, styled
from ._records import LowPrecisionRun, RecipeRow, TinyUpdates

__all__ = ["plot_recipe_snr", "plot_tiny_updates", "plot_training"]


@styled
def plot_recipe_snr(tables: dict, ax=None) -> Axes:
    """Signal-to-noise ratio (dB) of each recipe (rows) for each tensor (bars); ``tables`` maps a tensor kind
    to :func:`amp_lessons.micro.recipe_table`'s rows (:class:`~amp_lessons.micro.RecipeRow`). Each tensor's bars
    are named by its kind."""
    if (
        not isinstance(tables, dict)
        or not tables
        or not all(
            isinstance(rows, list | tuple) and rows and all(isinstance(r, RecipeRow) for r in rows)
            for rows in tables.values()
        )
    ):
        raise TypeError("tables must map each tensor kind to the RecipeRows of amp_lessons.micro.recipe_table")
    ax = axes_for(ax, (10, 6))
    kinds = list(tables)
    recipes = [r.recipe for r in tables[kinds[0]]]
    y = np.arange(len(recipes))
    h = 0.8 / len(kinds)
    for i, k in enumerate(kinds):
        snr = [max(r.snr_db, 0.0) for r in tables[k]]
        at = y + (i - (len(kinds) - 1) / 2) * h
        name_artist(ax, k, ax.barh(at, snr, height=h, label=k))
        for yy, v in zip(at, snr):
            if v < 1:  # a bar too short to see: say its value, so that 0 dB does not read as a missing bar
                ax.annotate(f"{k}: {v:.0f} dB", (v, yy), xytext=(3, 0), textcoords="offset points", va="center",
                            fontsize="x-small")  # fmt: skip
    ax.set_yticks(y, recipes)
    ax.invert_yaxis()
    ax.set_xlabel("signal-to-noise ratio (dB, higher is better; 6 dB per bit)")
    legend_outside(ax)
    ax.set_title("fp8 scaling recipes and fp4 quantizers, same tensors (emulated bit-exactly)", loc="left")
    return ax


@styled
def plot_tiny_updates(result: TinyUpdates, ax=None) -> Axes:
    """The weight after each of :func:`amp_lessons.micro.tiny_updates`' steps, per method, against the exact sum
    (lines named by the method, and "exact")."""
    if not isinstance(result, TinyUpdates):
        raise TypeError(
            f"result must be the TinyUpdates of amp_lessons.micro.tiny_updates, got {type(result).__name__}"
        )
    ax = axes_for(ax, (10, 4.5))
    steps = np.arange(1, result.steps + 1)
    name_artist(ax, "exact", ax.plot(steps, result.exact.numpy(), color="k", lw=1, ls="--", label="exact")[0])
    for m, trajectory in result.trajectories.items():
        name_artist(ax, m, ax.plot(steps, trajectory.numpy(), lw=1.5, label=m)[0])
    ax.set_xlabel("update")
    ax.set_ylabel("weight")
    legend_outside(ax)
    ax.set_title("Adding 1e-4 again and again to a bf16 weight", loc="left")
    return ax


@styled
def plot_training(results: dict[str, LowPrecisionRun], ax=None) -> Axes:
    """Loss curves of :func:`amp_lessons.micro.train_low_precision` (log scale); each legend entry gives the
    run's final loss and share of weights that never moved, written as lesson 10 prints them. The legend sits
    below the axes, which keep the figure's full width.
    Named artists (:func:`amp_lessons._draw.named_artists`): each run's curve by its name."""
    ax = axes_for(ax, (10, 4.5))
    for m, r in results.items():
        if not isinstance(r, LowPrecisionRun):
            raise TypeError(
                f"results[{m!r}] must be a LowPrecisionRun of amp_lessons.micro.train_low_precision, "
                f"got {type(r).__name__}"
            )
        (line,) = ax.plot(
            np.arange(1, len(r.loss) + 1),
            r.loss,
            lw=1.5,
            label=f"{m}: final loss {r.loss[-1]:.4f}, {100 * r.never_moved:.1f}% of weights never moved",
        )
        name_artist(ax, m, line)
    ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (MSE)")
    # below the axes, not beside them: the long labels would squeeze the axes to a fraction of the width
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), borderaxespad=0.0, fontsize=9, ncols=1)
    ax.set_title("A small MLP with bf16 weights: how the update is rounded", loc="left")
    return ax
