# tests/server/test_loading: requests made while the model is still loading get 503 with the OpenAI
# error envelope (llama-server's "Loading model"), /health included; once loaded the same requests work.
# Gemma with a 32K f32 KV cache takes a few seconds to get ready, and the HTTP port is open within
# milliseconds of the start, so the poll below always sees the loading phase.
import subprocess
import time

from conftest import BEE, GEMMA, free_port, http


def test_requests_while_loading_get_503():
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([str(BEE), "serve", "-m", str(GEMMA), "--port", str(port), "-c", "32768", "-np", "1",
                             "-ctk", "f32", "-ctv", "f32"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
    try:
        seen_503 = {}
        deadline = time.time() + 120
        while time.time() < deadline:
            assert proc.poll() is None, f"bee serve exited with {proc.returncode}"
            try:
                health = http("GET", base + "/health", timeout=5)
                completion = http("POST", base + "/v1/chat/completions", chat, timeout=60)
            except OSError:  # not listening yet
                time.sleep(0.005)
                continue
            for name, (status, _, body) in (("health", health), ("chat", completion)):
                if status == 503:
                    assert body == {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}
                    seen_503[name] = True
            if health[0] == 200:
                break
            time.sleep(0.005)
        assert seen_503.get("health") and seen_503.get("chat"), "the loading phase was never observed"
        status, _, body = http("POST", base + "/v1/chat/completions", chat)
        assert status == 200 and body["object"] == "chat.completion"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
