"""The browser harness's own logic, without a browser: when tests skip or fail, and what counts as a
kernel error or a request off this machine."""

import json

import harness
import pytest


def test_missing_chromium_skips_outside_ci_and_fails_in_ci(monkeypatch):
    monkeypatch.setattr(harness, "find_chromium", lambda: None)
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="browser tests need Chromium"):
        harness.require_browser()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true, so they must run"):
        harness.require_browser()


def test_chromium_override_must_exist(monkeypatch, tmp_path):
    monkeypatch.setenv("AMP_COURSE_CHROMIUM", str(tmp_path / "no-such-browser"))
    assert harness.find_chromium() is None
    exe = tmp_path / "chrome"
    exe.write_text("")
    monkeypatch.setenv("AMP_COURSE_CHROMIUM", str(exe))
    assert harness.find_chromium() == str(exe)


class NoPage:
    def on(self, event, handler):
        pass


def _frame(msg_type, content, msg_id="1", parent=None):
    # a v1 kernel-protocol frame: binary offsets, then the channel and JSON parts
    header = json.dumps({"msg_type": msg_type, "msg_id": msg_id}).encode()
    return b"\x00" * 16 + b"iopub" + header + json.dumps(parent or {}).encode() + b"{}" + json.dumps(content).encode()


def test_kernel_messages_pick_out_errors_and_stderr():
    km = harness.KernelMessages(NoPage())
    km._on_frame(_frame("error", {"ename": "ValueError", "evalue": 'boom "at" max', "traceback": []}))
    km._on_frame(_frame("stream", {"name": "stderr", "text": "a warning\n"}))
    km._on_frame(_frame("stream", {"name": "stdout", "text": "fine\n"}))
    km._on_frame(_frame("comm_msg", {"data": {"state": {"value": 3}}}))
    km._on_frame(json.dumps({"header": {"msg_type": "error"}, "content": {"ename": "KeyError", "evalue": "k"}}))
    errors, stderr = km.take()
    assert errors == ['ValueError: boom \\"at\\" max', "KeyError: k"]
    assert stderr == ["a warning\\n"]
    assert km.take() == ([], [])


def test_kernel_messages_know_which_widget_messages_the_kernel_has_answered():
    km = harness.KernelMessages(NoPage())
    km._on_sent(_frame("comm_msg", {"data": {"method": "update"}}, msg_id="a"))
    km._on_sent(json.dumps({"header": {"msg_type": "comm_msg", "msg_id": "b"}, "content": {}}))
    km._on_sent(_frame("kernel_info_request", {}, msg_id="c"))  # not a widget's message
    assert (km.sent, km.pending) == (2, {b"a", b"b"})
    km._on_frame(_frame("status", {"execution_state": "busy"}, msg_id="s1", parent={"msg_id": "a"}))
    km._on_frame(_frame("status", {"execution_state": "idle"}, msg_id="s2", parent={"msg_id": "c"}))
    assert km.pending == {b"a", b"b"}
    km._on_frame(_frame("status", {"execution_state": "idle"}, msg_id="s3", parent={"msg_id": "a"}))
    km._on_frame(json.dumps({"parent_header": {"msg_id": "b"}, "content": {"execution_state": "idle"}}))
    assert (km.sent, km.pending) == (2, set())
    km._on_frame(_frame("status", {"execution_state": "idle"}, msg_id="s4", parent={"msg_id": "d"}))
    km._on_sent(_frame("comm_msg", {}, msg_id="d"))  # its answer read first
    assert (km.sent, km.pending) == (3, set())


def test_remote_requests_flag_everything_off_this_machine():
    rr = harness.RemoteRequests.__new__(harness.RemoteRequests)
    rr.urls = []
    for url in [
        "http://127.0.0.1:8888/lab/api/settings",
        "ws://127.0.0.1:9/api/kernels/x/channels",
        "data:image/png;base64,xx",
        "blob:http://127.0.0.1:8888/abc",
        "about:blank",
    ]:
        rr._check(url)
    assert rr.urls == []
    rr._check("https://cdn.jsdelivr.net/npm/font.css")
    rr._check("http://example.org/x.png")
    assert rr.urls == ["https://cdn.jsdelivr.net/npm/font.css", "http://example.org/x.png"]


def test_server_kind_is_checked():
    with pytest.raises(ValueError, match="kind must be 'lab' or 'voila', got 'notebook'"):
        harness.Server("notebook", [])
