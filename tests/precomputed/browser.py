"""Neuroglancer in headless Chromium, for tests: show a viewer state, screenshot it, keep logs.

The client is the one the ``neuroglancer`` package bundles, served by ``neuroglancer.Viewer``
on 127.0.0.1; Chromium (Debian's ``chromium`` and ``chromium-driver``) draws WebGL with
SwiftShader, on the CPU. Nothing here reaches the network.
"""

from __future__ import annotations

import importlib.util
import io
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

CHROME_FLAGS = (
    "--headless=new",
    "--no-sandbox",  # CI runs as root
    "--disable-dev-shm-usage",
    "--use-gl=angle",
    "--use-angle=swiftshader",
    "--enable-unsafe-swiftshader",
    "--no-first-run",
    "--disable-extensions",
)
SCREENSHOT_TIMEOUT = 120.0


def missing() -> str | None:
    """Why the browser test cannot run here, or None when it can."""
    for program, package in (("chromium", "chromium"), ("chromedriver", "chromium-driver")):
        if shutil.which(program) is None:
            return f"{program} is not installed (apt-get install {package}; .ci/run does)"
    for module in ("selenium", "neuroglancer", "PIL"):
        if importlib.util.find_spec(module) is None:
            return f"the Python package {module} is not installed (pip install '.[dev]')"
    return None


@dataclass
class Shot:
    """What the browser showed: a PNG, and the console messages logged while it loaded."""

    png: bytes
    console: list[tuple[str, str]] = field(default_factory=list)

    def pixels(self) -> np.ndarray:
        from PIL import Image

        return np.asarray(Image.open(io.BytesIO(self.png)).convert("RGB"))

    def errors(self) -> list[str]:
        return [text for level, text in self.console if level == "error"]


def drawn_fraction(pixels: np.ndarray) -> float:
    """The fraction of pixels that differ from the most common colour (the background)."""
    flat = pixels.reshape(-1, pixels.shape[-1])
    _, counts = np.unique(flat, axis=0, return_counts=True)
    return float(1 - counts.max() / len(flat))


class Neuroglancer:
    """One headless Chromium showing the bundled Neuroglancer client; close it when done."""

    def __init__(self) -> None:
        import neuroglancer
        import selenium.webdriver
        from selenium.webdriver.chrome.service import Service

        neuroglancer.set_server_bind_address("127.0.0.1")
        self.viewer = neuroglancer.Viewer()
        options = selenium.webdriver.ChromeOptions()
        options.binary_location = shutil.which("chromium") or "chromium"
        options.enable_bidi = True
        for flag in CHROME_FLAGS:
            options.add_argument(flag)
        service = Service(executable_path=shutil.which("chromedriver"))
        self.driver = selenium.webdriver.Chrome(service=service, options=options)
        self.console: list[tuple[str, str]] = []
        self.driver.script.add_console_message_handler(self._log)
        self.driver.script.add_javascript_error_handler(self._log)
        self.driver.get(self.viewer.get_viewer_url())

    def _log(self, entry: Any) -> None:
        self.console.append((str(entry.level), str(entry.text)))

    def show(
        self,
        state: dict[str, Any],
        size: tuple[int, int],
        *,
        loaded: Callable[[], bool],
        timeout: float = SCREENSHOT_TIMEOUT,
    ) -> Shot:
        """Set ``state``, wait until ``loaded()`` (the data was asked for), screenshot it.

        Neuroglancer takes the screenshot once every visible chunk has arrived and drawn.
        """
        import neuroglancer

        first = len(self.console)
        # a fresh page for each state: the client keeps no camera or chunk of the last one
        self.driver.refresh()
        self.viewer.set_state(neuroglancer.ViewerState(state))
        deadline = time.monotonic() + timeout
        while not loaded():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Neuroglancer did not load the layers in {timeout:.0f} s")
            time.sleep(0.05)
        png = self._screenshot(size, deadline - time.monotonic())
        return Shot(png, self.console[first:])

    def _screenshot(self, size: tuple[int, int], timeout: float) -> bytes:
        with self.viewer.config_state.txn() as s:
            s.show_ui_controls = False
            s.show_panel_borders = False
            s.viewer_size = list(size)
        done = threading.Event()
        result: list[Any] = []

        def handler(reply: Any) -> None:
            result.append(reply)
            done.set()

        deadline = time.monotonic() + max(timeout, 1.0)
        for _ in range(5):  # the canvas takes the size asked for within a frame or two
            done.clear()
            result.clear()
            self.viewer.async_screenshot(handler)
            if not done.wait(max(deadline - time.monotonic(), 0.1)):
                raise TimeoutError("Neuroglancer took no screenshot in time")
            shot = result[0].screenshot
            if (shot.width, shot.height) == tuple(size):
                break
        return bytes(shot.image)

    def close(self) -> None:
        self.driver.quit()


@contextmanager
def neuroglancer_browser() -> Iterator[Neuroglancer]:
    """A :class:`Neuroglancer` browser, closed at the end."""
    browser = Neuroglancer()
    try:
        yield browser
    finally:
        browser.close()
