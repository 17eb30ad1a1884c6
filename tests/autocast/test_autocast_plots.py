import matplotlib
import torch
import torch.nn.functional as F

from amp_lessons import autocast
from amp_lessons._draw import named_artists

matplotlib.use("Agg")

OPS = {
    "mm": lambda x, w: x @ w,
    "sum": lambda x, w: (x @ w).sum(),
    "fp64 mm": lambda x, w: x.double() @ w.double(),
    "bce": lambda x, w: F.binary_cross_entropy(torch.sigmoid(x @ w), torch.zeros(8, 4)),
}


def test_output_dtypes_follow_the_policies_and_plot_one_cell_each():
    t = autocast.output_dtypes(OPS, torch.ones(8, 16), torch.ones(16, 4))
    assert t["mm"] == {"cpu": "bfloat16", "cuda": "float16"}
    assert t["sum"] == {"cpu": "bfloat16", "cuda": "float32"}  # sum: on no CPU list, fp32_set_opt_dtype on CUDA
    assert t["fp64 mm"] == {"cpu": "float64", "cuda": "float64"}
    assert t["bce"] == {"cpu": "float32", "cuda": "error"}  # banned on CUDA
    assert autocast.output_dtypes({"mm": OPS["mm"]}, torch.ones(2, 2), torch.ones(2, 2), device_types="cpu") == {
        "mm": {"cpu": "bfloat16"}
    }
    ax = autocast.plot_output_dtypes(t)  # one cell per op and device
    cells = named_artists(ax)
    assert "mm|cpu|bfloat16" in cells and "bce|cuda|error" in cells and len(cells) == 8
    assert all(cells[k] in ax.patches for k in cells)
    labels = [h.get_label() for h in ax.get_legend().legend_handles]
    assert labels == ["fp32", "fp16", "bf16", "fp64", "refused"]

    matplotlib.pyplot.close("all")
