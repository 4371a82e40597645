# tests/server/test_scheduler: continuous batching gives the same greedy text as one-by-one requests,
# the prompt cache shows in timings.cache_n, metrics counters move, and a client that disconnects
# frees its slot.
import concurrent.futures
import json
import socket
import time

import openai
import pytest

from conftest import Server, http

PROMPTS = [f"Write a short story about a {animal} who learns to {skill}." for animal, skill in [
    ("cat", "swim"), ("dog", "fly"), ("fox", "cook"), ("owl", "sing"), ("bear", "paint"), ("mouse", "dance"),
    ("horse", "read"), ("frog", "climb"), ("goat", "skate"), ("duck", "code"), ("lion", "knit"), ("wolf", "juggle"),
    ("crab", "ski"), ("seal", "bake"), ("hawk", "draw"), ("deer", "whistle")]]


@pytest.fixture(scope="module")
def batch_server():
    s = Server("-c", "8192", "-np", "8", "--metrics")
    yield s
    s.stop()


def stream_chat(base, prompt, n=48):
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused", max_retries=0)
    out = client.chat.completions.create(model="x", messages=[{"role": "user", "content": prompt}], max_tokens=n,
                                         temperature=0, stream=True)
    return "".join(c.choices[0].delta.content or "" for c in out if c.choices)


def test_parallel_streams_equal_sequential(batch_server):
    base = batch_server.base
    with concurrent.futures.ThreadPoolExecutor(16) as ex:
        parallel = list(ex.map(lambda p: stream_chat(base, p), PROMPTS))
    sequential = [stream_chat(base, p) for p in PROMPTS]
    assert all(len(t) > 20 for t in parallel)
    assert parallel == sequential
    text = http("GET", batch_server.url("/metrics"))[2]
    busy = float(next(l.split()[1] for l in text.splitlines() if l.startswith("llamacpp:n_busy_slots_per_decode")))
    assert busy > 1.5, "requests were not batched together"


def test_prompt_cache_hit(server):
    body = {"prompt": "The quick brown fox jumps over the lazy dog. " * 8, "n_predict": 4, "temperature": 0}
    first = server.post("/completion", body)[2]
    second = server.post("/completion", body)[2]
    n_prompt = first["tokens_evaluated"]
    # The whole prompt but its last token comes from the cache (one token is always evaluated again).
    assert second["timings"]["cache_n"] == n_prompt - 1
    assert second["timings"]["prompt_n"] == 1
    assert second["content"] == first["content"]
    nocache = server.post("/completion", {**body, "cache_prompt": False})[2]
    assert nocache["timings"]["cache_n"] == 0 and nocache["content"] == first["content"]


def metric(server, name):
    text = http("GET", server.url("/metrics"))[2]
    for line in text.splitlines():
        if line.startswith(f"llamacpp:{name} "):
            return float(line.split()[1])
    raise AssertionError(f"metric {name} missing from:\n{text}")


def test_metrics_counters_move(server):
    text = http("GET", server.url("/metrics"))[2]
    for name in ["prompt_tokens_total", "prompt_seconds_total", "tokens_predicted_total",
                 "tokens_predicted_seconds_total", "n_decode_total", "n_tokens_max", "n_busy_slots_per_decode",
                 "prompt_tokens_seconds", "predicted_tokens_seconds", "requests_processing", "requests_deferred"]:
        assert f"# TYPE llamacpp:{name} " in text
    before = {n: metric(server, n) for n in ["prompt_tokens_total", "tokens_predicted_total", "n_decode_total"]}
    server.post("/completion", {"prompt": "Counting metrics, one more time", "n_predict": 5, "ignore_eos": True,
                                "cache_prompt": False})
    assert metric(server, "tokens_predicted_total") == before["tokens_predicted_total"] + 5
    assert metric(server, "prompt_tokens_total") > before["prompt_tokens_total"]
    assert metric(server, "n_decode_total") >= before["n_decode_total"] + 5


@pytest.mark.parametrize("stream", [True, False])
def test_disconnect_cancels_work(server, stream):
    body = json.dumps({"prompt": "Tell me a very long story.", "n_predict": 100000, "ignore_eos": True,
                       "stream": stream}).encode()
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(b"POST /completion HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    if stream:
        got = b""
        while got.count(b"data: ") < 3:
            got += sock.recv(4096)
    deadline = time.time() + 30
    while not any(s["is_processing"] and s["n_decoded"] >= 3 for s in server.get("/slots")[2]):
        assert time.time() < deadline, "the request never started"
        time.sleep(0.05)
    sock.close()
    deadline = time.time() + 10
    while any(s["is_processing"] for s in server.get("/slots")[2]):
        assert time.time() < deadline, "the slot kept generating after the client left"
        time.sleep(0.05)
    # Nothing runs any more: the decode counter stands still.
    decodes = metric(server, "n_decode_total")
    time.sleep(0.5)
    assert metric(server, "n_decode_total") == decodes


def test_cache_reuse_shifts_chunks():
    """--cache-reuse: with the old cache = X + J + Y and the new prompt = X + Y, Y is moved (KV shift)
    instead of being computed again."""
    s = Server("-c", "2048", "-np", "1", "--cache-reuse", "16", "--cache-ram", "0")
    try:
        x = "System: you are a helpful assistant who answers in one sentence. "
        j = "Some unrelated text that the next request drops entirely, " * 3
        y = "Question: what is the tallest mountain on Earth and how tall is it? Answer:"
        first = s.post("/completion", {"prompt": x + j + y, "n_predict": 2, "temperature": 0})[2]
        n_xy = len(s.post("/tokenize", {"content": x + y, "add_special": True})[2]["tokens"])
        second = s.post("/completion", {"prompt": x + y, "n_predict": 8, "temperature": 0})[2]
        assert second["timings"]["cache_n"] >= n_xy - 3, (second["timings"], n_xy)
        assert first["timings"]["cache_n"] == 0
        assert second["tokens_predicted"] > 0
        # Off per request: only the common prefix X is reused.
        third = s.post("/completion", {"prompt": x + j + y, "n_predict": 2, "temperature": 0, "n_cache_reuse": 0})[2]
        assert third["timings"]["cache_n"] < n_xy - 10
    finally:
        s.stop()


@pytest.mark.parametrize("cache_ram", ["64", "0"])
def test_cache_ram_restores_evicted_prompt(cache_ram):
    """One slot: prompt A, then a different prompt B takes the slot, then A again. With --cache-ram A's
    KV comes back from host RAM (cache_n = all of A but its last token) and the greedy output is the same."""
    s = Server("-c", "1024", "-np", "1", "--cache-ram", cache_ram)
    try:
        a = {"prompt": "The history of the printing press begins in Mainz, " * 6, "n_predict": 8, "temperature": 0}
        b = {"prompt": "Recipe for bread: flour, water, salt and yeast. " * 6, "n_predict": 8, "temperature": 0}
        first = s.post("/completion", a)[2]
        assert s.post("/completion", b)[2]["timings"]["cache_n"] <= 2
        again = s.post("/completion", a)[2]
        if cache_ram == "0":
            assert again["timings"]["cache_n"] <= 2
        else:
            assert again["timings"]["cache_n"] == first["tokens_evaluated"] - 1
        assert again["content"] == first["content"]
    finally:
        s.stop()


def test_unified_kv_evicted_slot_goes_to_ram():
    """Four slots sharing 400 cells: B on slot 1 needs slot 0's cells, so A's cache leaves the KV cache for
    host RAM; A again on slot 0 comes back from RAM (slot 1, idle, makes room the same way) with the same
    output."""
    s = Server("-c", "400", "--cache-ram", "64")
    try:
        a = {"prompt": "The history of the printing press begins in Mainz, " * 14, "n_predict": 8,
             "temperature": 0, "id_slot": 0}
        b = {"prompt": "Recipe for bread: flour, water, salt and yeast. " * 25, "n_predict": 8, "temperature": 0,
             "id_slot": 1}
        first = s.post("/completion", a)[2]
        assert s.post("/completion", b)[2]["timings"]["cache_n"] == 0
        assert s.get("/slots")[2][0]["n_cached_tokens"] == 0  # evicted
        again = s.post("/completion", a)[2]
        assert again["timings"]["cache_n"] == first["tokens_evaluated"] - 1
        assert again["content"] == first["content"]
    finally:
        s.stop()


def test_unified_kv():
    """-np -1: four slots sharing one cache, each may use the whole context. When the shared cache runs
    out, the generating slots end with llama-server's "Context size has been exceeded." (500), and the
    server carries on."""
    s = Server("-c", "320")
    try:
        slots = s.get("/slots")[2]
        assert len(slots) == 4 and all(x["n_ctx"] == 320 for x in slots)
        body = {"prompt": "word " * 100, "n_predict": 200, "ignore_eos": True, "temperature": 0}
        with concurrent.futures.ThreadPoolExecutor(2) as ex:
            results = list(ex.map(lambda _: s.post("/completion", body), range(2)))
        errors = [r for r in results if r[0] != 200]
        assert errors, "two 300-token sequences cannot both fit 320 shared cells"
        for code, _, e in errors:
            assert code == 500 and e["error"]["message"] == "Context size has been exceeded."
        ok = s.post("/completion", {"prompt": "The capital of France is", "n_predict": 4, "temperature": 0,
                                     "ignore_eos": True})
        assert ok[0] == 200 and ok[2]["tokens_predicted"] == 4
    finally:
        s.stop()
