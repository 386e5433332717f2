"""RQ5's figure, drawn from long-format cells only (so `make tables` redraws it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from runner.reporting.figures import pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def target_adaptation_curves(cells: pd.DataFrame) -> Figure:
    """Macro target-only AUROC and AP against k, with zero-shot and cross-source lines.

    The lines come from the like-for-like table (same fixed test sets as target-only) when
    the run has it; points whose SE is undefined (pool drawn whole) are drawn hollow.
    """
    sub = cells[cells["table"] == "table8b"]
    lines = cells[cells["table"] == "table8b_same_test_sets"]
    where = " (same test sets)" if len(lines) else ""
    if not len(lines):
        lines = sub
    fig, axes = pyplot().subplots(1, 2, figsize=(10, 3.6))
    target = sub[sub["row"].str.startswith("target-only")]
    for ax, metric in zip(axes, ["AUROC", "AP"], strict=True):
        t = target[target["column"] == metric]
        se = target[target["column"] == f"{metric} SE"]["value"].to_numpy(float)
        ks = t["row"].str.extract(r"k=(\d+)")[0].astype(int).to_numpy()
        values = t["value"].to_numpy(float)
        undefined = np.isnan(se)
        ax.errorbar(
            ks,
            values,
            yerr=np.where(undefined, 0.0, se),
            marker="o",
            capsize=3,
            label="target-only (± SE)",
        )
        if undefined.any():
            ax.plot(
                ks[undefined],
                values[undefined],
                "o",
                mfc="white",
                color="tab:blue",
                label="pool drawn whole (SE undefined)",
                zorder=3,  # over the filled marker errorbar drew
            )
        for row, style in (("zero-shot", "--"), ("cross-source", ":")):
            v = lines[(lines["row"] == row) & (lines["column"] == metric)]["value"]
            if len(v):
                ax.axhline(
                    float(v.iloc[0]),
                    ls=style,
                    color="gray" if row == "zero-shot" else "tab:red",
                    label=row + where,
                )
        ax.set_xscale("log")
        ax.minorticks_off()  # only the k values are labelled
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("target labels per source (k)")
        ax.set_ylabel(f"macro {metric}")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle("Target-label adaptation under source shift")
    fig.tight_layout()
    return fig
