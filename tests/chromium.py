"""Headless Chromium for the report's tests, driven over the DevTools protocol through a pipe.

`--remote-debugging-pipe` makes the browser read protocol messages (JSON, each ended by a NUL byte) on its file
descriptor 3 and answer on 4: no port is opened, no client library is needed, and nothing here touches the
network. One browser serves every page of a test run; each page opens in a tab of its own, which collects the
console's errors, uncaught exceptions, the browser's own error log (a blocked script, a refused request) and every
request the page makes.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-extensions",
    "--mute-audio",
    "--remote-debugging-pipe",
)
WAIT = 60.0
"""Seconds any one answer may take (a loaded machine starts Chromium slowly)."""


def chromium_path() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class BrowserError(RuntimeError):
    pass


@dataclass
class Page:
    """One tab: what it logged and requested since it opened."""

    browser: Browser
    session: str
    url: str
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression (awaited when it is a promise), or BrowserError with its exception."""
        answer = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in answer:
            raise BrowserError(f"{expression[:80]}: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> None:
        path.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        self.browser.pages.pop(self.session, None)
        self.browser.send("Target.closeTarget", {"targetId": self.browser.targets.pop(self.session)})


class Browser:
    def __init__(self, executable: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="kdissect-chromium-")
        commands_read, self._commands = os.pipe()
        self._answers, answers_write = os.pipe()

        def descriptors() -> None:  # in the child, before exec: the pipe ends as fds 3 and 4
            os.dup2(commands_read, 3)
            os.dup2(answers_write, 4)

        self.process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=descriptors,
            pass_fds=(3, 4),
        )
        os.close(commands_read)
        os.close(answers_write)
        self._buffer = b""
        self._next = 0
        self._answered: dict[int, dict[str, Any]] = {}
        self.pages: dict[str, Page] = {}
        self.targets: dict[str, str] = {}
        """Session id -> target id."""

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        number = self._next
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while number not in self._answered:
            message = self._read()
            if "id" in message:
                self._answered[message["id"]] = message
            else:
                self._event(message)
        answer = self._answered.pop(number)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error']}")
        return answer.get("result", {})

    def wait_for(self, page: Page, method: str, timeout: float = WAIT) -> None:
        """Read events until `page` gets `method`."""
        deadline = time.monotonic() + timeout
        while True:
            event = self._read(deadline - time.monotonic())
            if "id" in event:
                self._answered[event["id"]] = event
                continue
            self._event(event)
            if event.get("method") == method and event.get("sessionId") == page.session:
                return

    def _read(self, timeout: float = WAIT) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            ready, _, _ = select.select([self._answers], [], [], max(0.0, timeout))
            if not ready:
                raise BrowserError(f"Chromium gave no answer within {timeout:.0f} s")
            chunk = os.read(self._answers, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium closed its pipe (exit status {self.process.poll()})")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def _event(self, event: dict[str, Any]) -> None:
        page = self.pages.get(event.get("sessionId", ""))
        if page is None:
            return
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            page.errors.append(f"exception: {details.get('exception', {}).get('description') or details.get('text')}")
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            page.errors.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            page.errors.append(f"log: {params['entry'].get('text')}")
        elif method == "Network.requestWillBeSent":
            page.requests.append(params["request"]["url"])
        elif method == "Page.javascriptDialogOpening":
            page.errors.append(f"dialog: {params.get('message')}")
            self.send("Page.handleJavaScriptDialog", {"accept": False}, page.session)

    def open(self, path: Path, width: int = 1280, height: int = 800) -> Page:
        """A new tab showing the file at `path`, loaded, at `width`×`height`."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        url = path.resolve().as_uri()
        page = self.pages[session] = Page(self, session, url)
        self.targets[session] = target
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.send(f"{domain}.enable")
        page.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)
        page.send("Page.navigate", url=url)
        self.wait_for(page, "Page.loadEventFired")
        return page

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except BrowserError:
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._commands)
        os.close(self._answers)
        shutil.rmtree(self.profile, ignore_errors=True)
