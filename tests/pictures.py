"""What the picture tests share: is a widget's image a PNG; does a plot's legend lie outside its axes."""

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(image) -> bool:
    return bytes(image.value).startswith(PNG)


def legend_outside(ax) -> bool:
    """The legend's box lies right of the axes' box (after drawing): it covers no data."""
    ax.figure.canvas.draw()
    legend = ax.get_legend()
    return legend is not None and legend.get_window_extent().x0 >= ax.get_window_extent().x1
