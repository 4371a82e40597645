# tests/server/test_idle_sleep: --sleep-idle-seconds. After the idle time the model is freed and /props says
# is_sleeping; /health, GET /props, /v1/models and /metrics answer without waking it; any other request
# reloads it and is served exactly as before; a running stream keeps it awake; requests arriving together
# while it sleeps are all served; router mode lists a sleeping model as "sleeping".
import json
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import BEE, SMOLLM, Server

PROMPT = {"prompt": "The capital of France is", "n_predict": 8, "temperature": 0, "cache_prompt": False}


def is_sleeping(server):
    status, _, props = server.get("/props")
    assert status == 200, props
    return props["is_sleeping"]


def wait_sleeping(server, timeout=15):
    deadline = time.time() + timeout
    while not is_sleeping(server):
        assert time.time() < deadline, "the server did not go to sleep"
        time.sleep(0.1)


def metric(server, name):
    status, _, text = server.get("/metrics")
    assert status == 200, text
    return float(next(l.split()[1] for l in text.splitlines() if l.startswith(f"llamacpp:{name} ")))


@pytest.fixture(scope="module")
def sleepy():
    s = Server("-c", "1024", "-np", "2", "--metrics", "--sleep-idle-seconds", "1")
    yield s
    s.stop()


def test_sleeps_answers_read_only_and_wakes_with_the_same_model(sleepy):
    status, _, before = sleepy.post("/completion", PROMPT)
    assert status == 200, before
    assert not is_sleeping(sleepy)
    wait_sleeping(sleepy)
    assert "going to sleep" in sleepy.output()
    predicted = metric(sleepy, "tokens_predicted_total")
    assert predicted >= 8
    # none of these wakes it
    assert sleepy.get("/health")[0] == 200
    status, _, models = sleepy.get("/v1/models")
    assert status == 200 and models["data"][0]["id"] == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert models["data"][0]["meta"]["n_vocab"] == 49152
    status, _, props = sleepy.get("/props")
    assert props["is_sleeping"] and props["total_slots"] == 2
    time.sleep(0.3)
    assert is_sleeping(sleepy)
    # a generation wakes it: the reloaded model answers as before, and the counters go on
    status, _, after = sleepy.post("/completion", PROMPT)
    assert status == 200, after
    assert after["content"] == before["content"]
    assert not is_sleeping(sleepy)
    assert "woke the server" in sleepy.output()
    assert metric(sleepy, "tokens_predicted_total") == predicted + 8


def rss_kib(server):
    with open(f"/proc/{server.proc.pid}/status") as f:
        return int(next(l.split()[1] for l in f if l.startswith("VmRSS:")))


def test_sleep_gives_the_memory_back_every_time(sleepy):
    for _ in range(3):  # every cycle, not only the first (glibc keeps reloaded buffers otherwise)
        assert sleepy.post("/completion", PROMPT)[0] == 200
        awake = rss_kib(sleepy)
        wait_sleeping(sleepy)
        deadline = time.time() + 10
        while rss_kib(sleepy) > awake // 2:  # weights and KV cache are most of it
            assert time.time() < deadline, (awake, rss_kib(sleepy))
            time.sleep(0.1)


def test_tokenize_wakes_it_too(sleepy):
    wait_sleeping(sleepy)
    status, _, r = sleepy.post("/tokenize", {"content": "Hello"})
    assert status == 200 and len(r["tokens"]) > 0
    assert not is_sleeping(sleepy)


def test_requests_arriving_together_while_asleep_are_all_served(sleepy):
    status, _, ref = sleepy.post("/completion", PROMPT)
    assert status == 200
    wait_sleeping(sleepy)
    results = [None] * 6
    def run(i):
        results[i] = sleepy.post("/completion", PROMPT)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    for status, _, r in results:
        assert status == 200, r
        assert r["content"] == ref["content"]
    assert sleepy.output().count("woke the server") >= 1


def test_a_running_stream_keeps_it_awake(sleepy):
    wait_sleeping(sleepy)
    body = {"prompt": "Once upon a time", "n_predict": 400, "ignore_eos": True, "stream": True, "temperature": 0}
    req = urllib.request.Request(sleepy.url("/completion"), data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    n_tokens, slept = 0, False
    start = time.time()
    with urllib.request.urlopen(req, timeout=120) as stream:
        for line in stream:
            if line.startswith(b"data: "):
                n_tokens += 1
                if n_tokens % 20 == 0:
                    slept |= is_sleeping(sleepy)
                    time.sleep(0.1)  # a slow reader: the stream lasts well past the idle time
    assert time.time() - start > 1.5
    assert n_tokens >= 400 and not slept
    wait_sleeping(sleepy)  # and once it is done, the model sleeps again


def test_idle_time_must_be_positive_or_minus_one():
    for bad in ("0", "-2", "x"):
        r = subprocess.run([str(BEE), "serve", "-m", str(SMOLLM), "--sleep-idle-seconds", bad],
                           capture_output=True, text=True, timeout=60)
        assert r.returncode == 2
        assert "--sleep-idle-seconds" in r.stderr and ">= 1, or -1" in r.stderr


def test_router_lists_a_sleeping_model(tmp_path):
    (tmp_path / SMOLLM.name).symlink_to(SMOLLM)
    name = SMOLLM.name[: -len(".gguf")]
    s = Server("--models-dir", tmp_path, "-c", "512", "-np", "1", "--sleep-idle-seconds", "1", model=None)
    try:
        def status():
            return {m["id"]: m["status"]["value"] for m in s.get("/models")[2]["data"]}[name]
        chat = {"model": name, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 3, "temperature": 0}
        code, _, first = s.post("/v1/chat/completions", chat)
        assert code == 200, first
        deadline = time.time() + 15
        while status() != "sleeping":
            assert time.time() < deadline, status()
            time.sleep(0.1)
        code, _, props = s.get(f"/props?model={name}")
        assert code == 200 and props["is_sleeping"]
        assert status() == "sleeping"
        code, _, again = s.post("/v1/chat/completions", chat)
        assert code == 200 and again["choices"][0]["message"] == first["choices"][0]["message"]
        assert status() == "loaded"
    finally:
        s.stop()


def test_a_failed_reload_is_a_500_and_the_next_request_tries_again(tmp_path):
    model = tmp_path / "copy.gguf"
    model.write_bytes(SMOLLM.read_bytes())
    s = Server("-c", "512", "-np", "1", "--sleep-idle-seconds", "1", model=model)
    try:
        wait_sleeping(s)
        model.rename(tmp_path / "gone.gguf")
        status, _, r = s.post("/completion", PROMPT)
        assert status == 500 and "reloading the model after sleep failed" in r["error"]["message"], r
        assert is_sleeping(s) and s.get("/health")[0] == 200
        (tmp_path / "gone.gguf").rename(model)
        status, _, r = s.post("/completion", PROMPT)
        assert status == 200 and r["tokens_predicted"] == 8
    finally:
        s.stop()
