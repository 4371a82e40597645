# tests/server/test_page: the chat page at `/` in headless Chromium (Debian chromium + chromium-driver,
# driven with selenium): send a message, watch the streamed reply and its tokens/s line appear.
import shutil

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


@pytest.fixture(scope="module")
def browser():
    driver_path = shutil.which("chromedriver")
    assert driver_path, "chromedriver is missing: run `make setup` (Debian package chromium-driver)"
    opts = webdriver.ChromeOptions()
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]:
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium")
    d = webdriver.Chrome(service=Service(driver_path), options=opts)
    yield d
    d.quit()


def test_chat_page_streams_a_reply(server, browser):
    browser.get(server.url("/"))
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "model").text != "")
    assert browser.find_element(By.ID, "model").text == "SmolLM2-135M-Instruct.Q4_1.gguf"
    limit = browser.find_element(By.ID, "max")
    limit.clear()
    limit.send_keys("24")
    box = browser.find_element(By.ID, "input")
    box.send_keys("What is the capital of France?")
    browser.find_element(By.ID, "send").click()
    WebDriverWait(browser, 120).until(lambda d: "tokens/s" in d.find_element(By.CSS_SELECTOR, ".assistant .stats").text)
    reply = browser.find_element(By.CSS_SELECTOR, ".assistant div").text
    stats = browser.find_element(By.CSS_SELECTOR, ".assistant .stats").text
    assert len(reply) > 0, "no reply text"
    assert "error" not in stats
    assert browser.find_element(By.CSS_SELECTOR, ".user").text == "What is the capital of France?"
    n_tokens = int(stats.split()[0])  # "N tokens, X tokens/s" from the last chunk's timings
    assert 0 < n_tokens <= 24


def test_web_ui_files_are_public(keyed_server):
    """The files browsers ask of llama-server's web UI answer without the API key, like the page."""
    from conftest import http
    for path, ctype in [("/sw.js", "javascript"), ("/manifest.webmanifest", "manifest+json"),
                        ("/_app/version.json", "application/json")]:
        status, headers, body = http("GET", keyed_server.url(path))
        assert status == 200 and ctype in headers["Content-Type"], (path, status, body)
    assert "unregister" in http("GET", keyed_server.url("/sw.js"))[2]
    assert http("GET", keyed_server.url("/manifest.webmanifest"))[2]["start_url"] == "."
    assert http("GET", keyed_server.url("/props"))[0] == 401
