"""What the explorer tests share: is a widget's image a PNG."""

PNG = b"\x89PNG\r\n\x1a\n"


def is_png(image) -> bool:
    return bytes(image.value).startswith(PNG)
