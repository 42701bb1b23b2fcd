"""The playground in headless Chromium, as a person uses it: type a sentence or a pattern,
click, read the level, see the drawing and the error with its caret.

Marked ``browser``: they need Debian's ``chromium`` and ``chromium-driver``, Selenium and the
web extra (``bash .ci/browser`` installs them and runs these tests); without them they skip.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


@pytest.fixture(scope="module")
def browser():
    if CHROMIUM is None or not os.path.exists(CHROMEDRIVER):
        pytest.skip(
            "chromium and chromium-driver are not installed (bash .ci/browser installs them)"
        )
    webdriver = pytest.importorskip("selenium.webdriver", reason="pip install selenium")
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="matlang-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
        "--window-size=1280,1250",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def _wait(driver, test, timeout=90):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout, poll_frequency=0.2).until(lambda d: test(d))


def _text(driver, element_id):
    return driver.find_element("id", element_id).text


def _submit(driver, text, *, mode="sentence"):
    """Choose the mode, type ``text`` into the box and click Analyze; wait for the answer."""
    live = driver.find_element("id", "live")
    if live.is_selected():
        live.click()  # one request per click (a mode switch asks too; the last one shows)
    driver.find_element("id", f"mode-{mode}").click()
    box = driver.find_element("id", "sentence")
    box.clear()
    box.send_keys(text)
    body = driver.find_element("tag name", "body")
    before = body.get_attribute("data-done") or "0"
    driver.find_element("id", "go").click()
    _wait(
        driver,
        lambda d: (
            (body.get_attribute("data-done") or "0") != before
            and body.get_attribute("data-busy") == "0"
            and driver.execute_script("return String(seq)") == body.get_attribute("data-done")
        ),
    )


def _open(driver, server):
    driver.get(server + "/")
    _wait(driver, lambda d: _text(d, "level") != "")  # the example sentence, analysed on load


def test_page_shows_the_example_with_its_witness_pair(browser, server, tmp_path):
    _open(browser, server)
    assert _text(browser, "level") == "L2 (as written L3)"
    assert _text(browser, "wl").startswith("beyond 1-WL (witness)")
    svg = browser.find_element("css selector", "#drawing svg")
    assert svg.size["width"] > 300
    assert len(browser.find_elements("css selector", "#drawing g#nodes-0 use")) == 8
    assert "0 ≠ 6" in _text(browser, "witness")
    assert "readout" in _text(browser, "plan")
    # .ci/browser keeps it as results/playground.png; other runs leave the tree as it was
    out = Path(os.environ.get("MATLANG_SCREENSHOT") or tmp_path / "playground.png")
    out.parent.mkdir(exist_ok=True)
    browser.save_screenshot(str(out))
    assert out.stat().st_size > 10_000


def test_typing_a_sentence_shows_its_level_and_values(browser, server):
    _open(browser, server)
    _submit(browser, "onesᵀ A ones / 2")
    assert _text(browser, "level") == "L1"
    assert _text(browser, "wl") == "at most 1-WL"
    rows = browser.find_elements("css selector", "#values tr")
    values = {
        r.find_elements("tag name", "td")[0].text: r.find_elements("tag name", "td")[2].text
        for r in rows[1:]
    }
    assert values["K4"] == "6" and values["petersen"] == "15"


def test_a_mistyped_function_shows_the_caret_and_did_you_mean(browser, server):
    _open(browser, server)
    _submit(browser, "trace(A^3)")
    error = browser.find_element("id", "error")
    assert error.is_displayed()
    text = error.text
    assert "unknown function 'trace'" in text
    assert "trace(A^3)\n  ^^^^^^^^^^" in text
    assert "did you mean 'tr'?" in text
    assert _text(browser, "level") == ""


def test_a_pattern_no_sentence_counts_shows_the_certificate_pair(browser, server):
    _open(browser, server)
    _submit(browser, "K4", mode="pattern")
    assert _text(browser, "level") == "none"
    assert "beyond 3-WL" in _text(browser, "wl")
    assert "rook4x4 / shrikhande" in _text(browser, "witness")
    assert len(browser.find_elements("css selector", "#drawing g#nodes-1 use")) == 16


def test_live_typing_updates_without_a_click(browser, server):
    _open(browser, server)
    browser.find_element("id", "mode-sentence").click()
    box = browser.find_element("id", "sentence")
    box.clear()
    box.send_keys("tr(A^3) / 6")
    _wait(browser, lambda d: _text(d, "level") == "L2")
    _wait(browser, lambda d: "witness" in _text(d, "wl"))
    assert browser.find_elements("css selector", "#drawing svg")
