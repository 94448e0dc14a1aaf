"""A headless Chromium driven over the DevTools protocol on a pipe, with the standard library only.

``Browser()`` starts ``chromium --headless --remote-debugging-pipe`` (messages are NUL-terminated
JSON on the child's fds 3 and 4), opens one page and records its console errors and uncaught
exceptions; ``call`` sends a command to the page and waits for its answer. Used by
test_leaderboard_browser.py; ``python -m tests.browser PAGE PNG`` writes the README's screenshot.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

NAMES = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_chromium() -> str | None:
    """``$GRADEBENCH_CHROMIUM``, else the first of :data:`NAMES` on the PATH."""
    env = os.environ.get("GRADEBENCH_CHROMIUM")
    if env:
        return env if Path(env).is_file() else shutil.which(env)
    return next((p for p in map(shutil.which, NAMES) if p), None)


class Browser:
    def __init__(self, executable: str, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.TemporaryDirectory(prefix="gb-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # the child's fd 3 reads our commands, its fd 4 writes the answers
        args = [executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
                "--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--mute-audio",
                f"--user-data-dir={self.profile.name}", "--remote-debugging-pipe", "about:blank"]

        def fds() -> None:  # copies first, so neither end is overwritten by the other's dup2
            a, b = os.dup(to_child_r), os.dup(from_child_w)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(args, preexec_fn=fds, close_fds=False,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child_r)
        os.close(from_child_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        target = self._send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self._send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")

    # -- the protocol ------------------------------------------------------------------------------------------
    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from chromium")
            chunk = os.read(self._from_child, 1 << 16)
            if not chunk:
                raise RuntimeError("chromium closed its pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_child, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """A command to the page's session, its result."""
        return self._send(method, params, self.session)

    def wait_for(self, method: str) -> dict[str, Any]:
        """The next event ``method`` (one already received counts)."""
        deadline = time.monotonic() + self.timeout
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._read_message(deadline)
            if e.get("method") == method:
                return e
            self.events.append(e)

    # -- what the tests use ------------------------------------------------------------------------------------
    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:60]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def open(self, url: str, *, width: int, height: int = 900, mobile: bool = False) -> None:
        """Load ``url`` in a window ``width`` x ``height`` CSS pixels (``mobile``: a phone's viewport)."""
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                         "mobile": mobile})
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")

    def click(self, x: float, y: float) -> None:
        """A real left click (mouse pressed and released) at page viewport coordinates."""
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1})

    def errors(self) -> list[str]:
        """Console errors, failed loads and uncaught exceptions seen so far."""
        out = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("exception", {}).get("description")
                               or p.get("exceptionDetails")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", ""))
        return out

    def screenshot(self, *, width: int, height: int) -> bytes:
        """A PNG of the top ``width`` x ``height`` of the page."""
        import base64

        data = self.call("Page.captureScreenshot", {"format": "png", "clip": {
            "x": 0, "y": 0, "width": width, "height": height, "scale": 1}})["data"]
        return base64.b64decode(data)

    def close(self) -> None:
        try:
            self._send("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        self.profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main(argv: list[str]) -> int:
    """``python -m tests.browser PAGE PNG``: a 1280-wide screenshot of the page's top, in 64 colours."""
    page, png = Path(argv[0]).resolve(), Path(argv[1])
    exe = find_chromium()
    if exe is None:
        sys.stderr.write("chromium not found: apt-get install chromium\n")
        return 2
    with Browser(exe) as b:
        b.open(page.as_uri(), width=1280, height=860)
        raw = b.screenshot(width=1280, height=860)
    from io import BytesIO

    from PIL import Image

    image = Image.open(BytesIO(raw)).convert("RGB").quantize(colors=64, dither=Image.Dither.NONE)
    image.save(png, optimize=True)
    sys.stdout.write(f"wrote {png} ({png.stat().st_size:,} bytes)\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
