"""The page checks of lab_session.py on small pages of known colours (a browser, no Jupyter server): the
WCAG contrast measurement finds the failures it should and passes what it should, backgrounds composited."""

from __future__ import annotations

import pytest
from lab_session import _CONTRAST_JS

# WCAG 2.1 reference values: #767676 on white is 4.54:1 (the lightest grey that passes AA), #777777 4.48:1.
PAGE = """
<body style="background: white; margin: 0">
<div class="jp-OutputArea">
  <div class="jp-OutputPrompt" style="color: #eeeeee">[1]:</div>
  <span id="pass" style="color: #767676; font-size: 13px">passes</span>
  <span id="fail" style="color: #777777; font-size: 13px">fails</span>
  <span id="large" style="color: #949494; font-size: 24px">large text needs 3:1</span>
  <div style="background: rgba(0, 0, 0, 0.5)"><span id="composited" style="color: #808080">on half black</span></div>
  <span id="mix" style="color: color-mix(in srgb, #ff0000 50%, #000000)">colour-mixed</span>
  <span style="display: none; color: white">hidden</span>
</div>
</body>
"""


@pytest.fixture
def page(browser):
    p = browser.new_page()
    p.set_content(PAGE)
    yield p
    p.close()


def test_contrast_check_finds_exactly_the_failures(page):
    result = page.evaluate_handle("() => document.body").as_element().evaluate(_CONTRAST_JS)
    texts = {f["text"] for f in result["failures"]}
    # 5 visible texts; the prompt (JupyterLab's chrome) and the hidden span are not counted
    assert result["count"] == 5, result
    # #777 on white: 4.48:1 < 4.5. Under 50% black, white composites to rgb(128, 128, 128): the text's own grey.
    # #949494 (3.03:1) passes as large text; the colour-mixed dark red (about 10:1) passes.
    assert texts == {"fails", "on half black"}, result["failures"]
    worst = result["worst"]
    assert worst["text"] == "on half black" and worst["background"] == "rgb(128, 128, 128)"
    assert 1.0 <= worst["ratio"] < 1.1  # grey text on the same grey
