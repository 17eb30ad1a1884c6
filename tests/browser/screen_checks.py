"""What an explorer looks like on the rendered screen, measured in the browser and, for the texts inside its
picture, in the kernel that drew it (matplotlib's renderer after the draw: :func:`amp_lessons._explorer.picture_layout`).

One call per screen, :func:`measure`, returns the facts; :func:`problems` turns them into the failures of a room's
rules, each with its measured value:

- (a) the picture holds all its texts and legends (none passes an edge of the PNG), and no legend covers a text
  that is not its own;
- (b) every slider's track is at least ``MIN_TRACK_PX`` wide, every text box shows the values the lesson asks for
  (``TEXT_VALUES``) and every menu its whole choice;
- (c) every control, read-out and picture lies inside the viewport (and, in the presenter, clear of its
  navigation bar);
- (d) the presenter only: text inside the picture is at least ``MIN_PICTURE_TEXT_PX`` tall on the screen (its
  font size in the PNG times the shown / natural width);
- (e) the pictures follow the theme: in the presenter's light theme a light background; in the dark theme the
  picture's background is dark (its corner pixel, read off the shown PNG) and every
  text in it readable (WCAG contrast at least 4.5:1 against that background, or against the box drawn around it).
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

MIN_TRACK_PX = 150.0
MIN_PICTURE_TEXT_PX = 20.0
# Values the lessons and the presenter's explanations ask to type: fp16's max plus half a step, a learning rate.
TEXT_VALUES = ("65504.5", "0.001")
MIN_CONTRAST_DARK = 4.5

# The measurement of one explorer's output area `root` in the page: controls, read-out, picture.
_SCREEN_JS = """
(root, values) => {
  const ctx = document.createElement('canvas').getContext('2d');
  const width = (text, el) => { const cs = getComputedStyle(el); ctx.font = cs.font; return ctx.measureText(text).width; };
  const rect = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom].map(v => Math.round(v)); };
  const shown = (el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const label = (el) => { const w = el.closest('.widget-inline-hbox, .jupyter-widgets'); const l = w && w.querySelector('.widget-label');
                          return (l && l.innerText.trim()) || el.getAttribute('title') || el.tagName; };
  const out = {sliders: [], texts: [], menus: [], boxes: [], pictures: [], viewport: [innerWidth, innerHeight], nav: null};
  for (const t of root.querySelectorAll('.widget-slider .noUi-target')) if (shown(t))
    out.sliders.push({label: label(t), px: Math.round(t.getBoundingClientRect().width)});
  for (const i of root.querySelectorAll('.widget-text input')) if (shown(i)) {
    const cs = getComputedStyle(i);
    const room = i.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const need = Math.max(...[...values, i.value].map(v => width(v, i)));
    out.texts.push({label: label(i), room: Math.round(room), need: Math.round(need), value: i.value});
  }
  for (const s of root.querySelectorAll('.widget-dropdown select')) if (shown(s)) {
    const cs = getComputedStyle(s);
    const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const text = s.options[s.selectedIndex] ? s.options[s.selectedIndex].text : '';
    out.menus.push({label: label(s), room: Math.round(room), need: Math.round(width(text, s)), value: text});
  }
  const parts = '.widget-slider, .widget-dropdown, .widget-text, .jupyter-button, .widget-toggle-buttons, '
              + '.widget-html, .widget-image, img, .widget-html table';
  for (const el of root.querySelectorAll(parts)) if (shown(el) && !el.parentElement.closest('.widget-slider, .widget-dropdown, .widget-text, .widget-toggle-buttons'))
    out.boxes.push({what: (el.className || el.tagName).toString().split(' ').slice(0, 2).join(' ') + ': '
                    + (el.innerText || label(el) || '').trim().slice(0, 40), rect: rect(el)});
  const nav = document.getElementById('amp-nav');
  if (nav && shown(nav)) out.nav = rect(nav);
  for (const img of root.querySelectorAll('img')) if (shown(img)) {
    let corner = null;
    try {
      const c = document.createElement('canvas'); c.width = 4; c.height = 4;
      const g = c.getContext('2d'); g.drawImage(img, 0, 0, 4, 4, 0, 0, 4, 4);
      corner = [...g.getImageData(1, 1, 1, 1).data.slice(0, 3)];
    } catch (e) { corner = null; }
    out.pictures.push({natural: [img.naturalWidth, img.naturalHeight], shown: rect(img),
                       scale: img.getBoundingClientRect().width / img.naturalWidth, corner});
  }
  return out;
}
"""

# Run in the kernel: every live explorer's picture layout by its widget's model id, in the order they were made.
_KERNEL_CODE = """
import json as _json
import ipywidgets as _w
from amp_lessons._explorer import picture_layout as _layout
_amp = {k: w.explorer for k, w in list(_w.Widget.widgets.items()) if getattr(w, "explorer", None) is not None}
print(_json.dumps({k: _layout(e.picture.fig) if e.picture is not None else None for k, e in _amp.items()}, default=float))
del _json, _w, _layout, _amp
"""


class Kernel:
    """A client of the kernel a page's explorers run in (its connection file in the server's runtime
    directory), to read their pictures' layout after the draw."""

    def __init__(self, kernel_id: str, *places: Path):
        """``places``: the folders where the connection file may be; Voila keeps its own folder, voila_*, in the
        temporary directory."""
        from jupyter_client import BlockingKernelClient

        places = [*places, *Path(tempfile.gettempdir()).glob("voila_*")]
        path = next(
            (p / f"kernel-{kernel_id}.json" for p in places if (p / f"kernel-{kernel_id}.json").is_file()), None
        )
        if path is None:
            raise AssertionError(f"no connection file for kernel {kernel_id} in {[str(p) for p in places]}")
        self.client = BlockingKernelClient(connection_file=str(path))
        self.client.load_connection_file()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=60)

    def run(self, code: str, timeout: float = 60.0) -> str:
        out, errors = [], []

        def on_output(msg):
            kind, content = msg["header"]["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                out.append(content["text"])
            elif kind == "error":
                errors.append(f"{content['ename']}: {content['evalue']}")

        self.client.execute_interactive(code, store_history=False, timeout=timeout, output_hook=on_output)
        assert not errors, f"the layout probe failed in the kernel: {errors}"
        return "".join(out)

    def layouts(self) -> dict[str, dict | None]:
        """Every explorer's picture layout (``picture_layout``) by the model id of its widget, in the order they
        were made."""
        return json.loads(self.run(_KERNEL_CODE))

    def close(self) -> None:
        self.client.stop_channels()


def measure(root) -> dict:
    """The screen facts of the explorer whose output area is ``root`` (an element handle)."""
    return root.evaluate(_SCREEN_JS, list(TEXT_VALUES))


def _luminance(rgb) -> float:
    def f(v):
        v /= 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = rgb
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b)


def _hex_rgb(color: str):
    color = color.lstrip("#")
    return tuple(int(color[i : i + 2], 16) for i in (0, 2, 4))


def contrast(a, b) -> float:
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def problems(screen: dict, layout: dict | None, *, presenter: bool, dark: bool) -> dict[str, list[str]]:
    """The failures of one screen, by rule (a)...(e): a list of texts with their measured values (empty: passes).
    In JupyterLab (``presenter=False``) the notebook scrolls: (c) asks only that nothing passes the right edge."""
    out: dict[str, list[str]] = {k: [] for k in "abcde"}
    if layout is not None:
        w, h = layout["size"]
        for o in layout["outside"]:
            out["a"].append(f"{o['kind']} {o['what']!r} passes the picture's edge by {o['by']:.0f} px ({w}x{h} PNG)")
        for o in layout["overlaps"]:
            out["a"].append(f"legend [{o['legend']}] covers text {o['text']!r} ({o['area']:.0f} px^2)")
    for s in screen["sliders"]:
        if s["px"] < MIN_TRACK_PX:
            out["b"].append(f"slider {s['label']!r}: track {s['px']} px < {MIN_TRACK_PX:.0f}")
    for t in screen["texts"]:
        if t["room"] < t["need"]:
            out["b"].append(f"text box {t['label']!r}: {t['room']} px for values needing {t['need']} px")
    for m in screen["menus"]:
        if m["room"] < m["need"]:
            out["b"].append(f"menu {m['label']!r}: {m['room']} px for {m['value']!r} ({m['need']} px)")
    vw, vh = screen["viewport"]
    nav = screen["nav"]
    for b in screen["boxes"]:
        x0, y0, x1, y1 = b["rect"]
        if x1 > vw + 0.5 or x0 < -0.5 or (presenter and (y1 > vh + 0.5 or y0 < -0.5)):
            out["c"].append(f"{b['what']!r} at {b['rect']} passes the {vw}x{vh} viewport (right {x1}, bottom {y1})")
        elif nav and min(x1, nav[2]) > max(x0, nav[0]) and min(y1, nav[3]) > max(y0, nav[1]):
            out["c"].append(f"{b['what']!r} at {b['rect']} lies under the navigation bar {nav}")
    for p in screen["pictures"]:
        if presenter and layout is not None and layout["texts"]:
            smallest = min(layout["texts"], key=lambda t: t["px"])
            px = smallest["px"] * p["scale"]
            if px < MIN_PICTURE_TEXT_PX:
                out["d"].append(
                    f"text {smallest['text']!r} is {px:.1f} px on screen ({smallest['px']:.0f} px in the PNG, "
                    f"shown at {p['scale']:.2f}x) < {MIN_PICTURE_TEXT_PX:.0f}"
                )
        corner = p["corner"]
        if corner is None:
            continue
        if dark and _luminance(corner) > 0.1:
            out["e"].append(f"picture background rgb{tuple(corner)} is not dark (luminance {_luminance(corner):.2f})")
        elif presenter and not dark and _luminance(corner) < 0.5:
            out["e"].append(f"picture background rgb{tuple(corner)} is dark in the light theme")
        if dark and layout is not None:
            need = MIN_CONTRAST_DARK
            low = [
                (
                    t["text"],
                    t["color"],
                    contrast(_hex_rgb(t["color"]), _hex_rgb(t["box_color"]) if t["box_color"] else corner),
                )
                for t in layout["texts"]
            ]
            low = [x for x in low if x[2] < need]
            if low:
                worst = min(low, key=lambda x: x[2])
                out["e"].append(
                    f"{len(low)} texts under {need}:1 contrast on the background rgb{tuple(corner)}; worst "
                    f"{worst[0]!r} {worst[1]} at {worst[2]:.2f}:1"
                )
    return out
