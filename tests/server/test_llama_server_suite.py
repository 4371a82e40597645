# tests/server/test_llama_server_suite: llama-server behaviours that llama.cpp's own server test suite
# checks and Bee lacked (docs/COMPAT.md): `-a a,b,c` as several names (the id is the first in sorted
# order) and --tags in /v1/models; long options spelled with '_'; return_progress's opening event
# (processed == cache) and timings on progress chunks with timings_per_token; the n - 1 rule of
# predicted_per_second; the speculative counters under llama-server's names, and embeddings counted in
# /metrics; JSON schema `items` given as a list (a tuple); ignore_eos shown as -inf logit biases;
# continue_final_message with add_generation_prompt refused; `--cors-origins localhost`; text parts joined by
# "\n" (a prefill's by "\n\n").
import json
import urllib.request

import pytest

from conftest import Server, http

PROMPT = "The quick brown fox jumps over the lazy dog. " * 6


def stream(server, path, body):
    req = urllib.request.Request(server.url(path), data=json.dumps({**body, "stream": True}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    out = []
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r:
            line = line.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                out.append(json.loads(line[6:]))
    return out


def metrics(server):
    text = http("GET", server.url("/metrics"))[2]
    values, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            types[name] = kind
        elif line and not line.startswith("#"):
            name, value = line.split()
            values[name] = float(value)
    return values, types


@pytest.fixture(scope="module")
def named():
    # '_' for '-' in long options, as llama.cpp's parser allows (--ctx_size, --n_predict)
    s = Server("--ctx_size", "1024", "-np", "1", "-b", "32", "--n_predict", "16", "-a", "zeta, alpha,mid,alpha",
               "--tags", "small,chat", "--metrics")
    yield s
    s.stop()


def test_aliases_tags_and_underscore_options(named):
    code, _, j = named.get("/v1/models")
    assert code == 200
    m = j["data"][0]
    assert m["id"] == "alpha" and m["aliases"] == ["alpha", "mid", "zeta"] and m["tags"] == ["chat", "small"]
    props = named.get("/props")[2]
    assert props["model_alias"] == "alpha"
    assert props["default_generation_settings"]["n_ctx"] == 1024
    assert props["default_generation_settings"]["params"]["n_predict"] == 16


def test_progress_opening_event_and_timings(named):
    body = {"prompt": PROMPT, "n_predict": 2, "return_progress": True, "timings_per_token": True}
    prog = [e for e in stream(named, "/completion", body) if "prompt_progress" in e]
    first = prog[0]
    assert first["prompt_progress"]["processed"] == first["prompt_progress"]["cache"] == 0
    assert first["timings"]["prompt_n"] == 0 and first["timings"]["prompt_ms"] == 0.0
    assert first["timings"]["predicted_n"] == 0
    assert len(prog) > 2  # the opening event, then one per 32-token batch
    done = [p["prompt_progress"]["processed"] for p in prog]
    assert done == sorted(done) and done[-1] == prog[-1]["prompt_progress"]["total"]
    ms = [p["timings"]["prompt_ms"] for p in prog]
    assert ms == sorted(ms) and ms[-1] > 0
    assert [p["timings"]["prompt_n"] for p in prog] == done  # nothing cached on the first request
    # the same prompt again: the opening event already counts the reused prefix
    again = [e["prompt_progress"] for e in stream(named, "/completion", body) if "prompt_progress" in e]
    assert again[0]["cache"] > 0 and again[0]["processed"] == again[0]["cache"]
    assert again[-1]["processed"] == again[-1]["total"]


def test_generation_rate_excludes_first_token(named):
    one = named.post("/completion", {"prompt": "Hello", "n_predict": 1})[2]["timings"]
    assert one["predicted_n"] == 1 and one["predicted_per_second"] == 0.0 and one["predicted_per_token_ms"] == 0.0
    t = named.post("/completion", {"prompt": "Hello", "n_predict": 9, "ignore_eos": True})[2]["timings"]
    assert t["predicted_n"] == 9
    assert t["predicted_per_second"] == pytest.approx(8 * 1000.0 / t["predicted_ms"], rel=1e-9)
    assert t["predicted_per_token_ms"] == pytest.approx(t["predicted_ms"] / 8, rel=1e-9)


def test_metric_names(named):
    values, types = metrics(named)
    for name in ("spec_decode_num_draft_tokens_total", "spec_decode_num_accepted_tokens_total",
                 "spec_decode_num_drafts_total"):
        assert types["llamacpp:" + name] == "counter" and values["llamacpp:" + name] == 0
    assert types["llamacpp:n_busy_slots_per_decode"] == "gauge"


def test_embeddings_are_counted_in_metrics():
    s = Server("-c", "512", "-np", "1", "--embedding", "--pooling", "mean", "--metrics")
    try:
        before, _ = metrics(s)
        code, _, j = s.post("/v1/embeddings", {"input": ["hello world", "goodbye world"]})
        assert code == 200, j
        after, _ = metrics(s)
        n = j["usage"]["prompt_tokens"]
        assert after["llamacpp:prompt_tokens_total"] - before["llamacpp:prompt_tokens_total"] == n
        assert after["llamacpp:n_decode_total"] - before["llamacpp:n_decode_total"] == 2
        assert after["llamacpp:tokens_predicted_total"] == 0
        code, _, j = s.post("/v1/embeddings", {"input": "word " * 600})
        assert code == 400 and "too large" in j["error"]["message"], j
    finally:
        s.stop()


def test_items_list_is_a_tuple(server):
    schema = {"type": "array", "items": [{"type": "integer"}, {"type": "boolean"}]}
    code, _, j = server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Give a number and a truth value."}], "max_tokens": 40,
        "temperature": 0, "response_format": {"type": "json_schema", "json_schema": {"schema": schema}}})
    assert code == 200, j
    value = json.loads(j["choices"][0]["message"]["content"])
    assert len(value) == 2 and isinstance(value[0], int) and isinstance(value[1], bool)


def test_ignore_eos_bans_end_of_generation_tokens(server):
    j = server.post("/completion", {"prompt": "Hi", "n_predict": 2, "ignore_eos": True})[2]
    bias = j["generation_settings"]["logit_bias"]
    assert bias and all(b["bias"] is None for b in bias)  # -inf is JSON null, as llama-server writes it
    assert 2 in [b["token"] for b in bias]  # SmolLM2's <|im_end|>
    j = server.post("/completion", {"prompt": "Hi", "n_predict": 2})[2]
    assert j["generation_settings"]["logit_bias"] == []


def test_continue_final_message_needs_generation_prompt_off(server):
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}]
    code, _, j = server.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 2,
                                                      "continue_final_message": True})
    assert code == 400 and "continue_final_message" in j["error"]["message"]
    code, _, j = server.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 2,
                                                      "continue_final_message": True, "add_generation_prompt": False})
    assert code == 200, j


def test_cors_origins_localhost():
    s = Server("-c", "256", "-np", "1", "--cors-origins", "localhost")
    try:
        def allowed(origin):
            h = http("OPTIONS", s.url("/completions"), headers={"Origin": origin,
                                                                "Access-Control-Request-Method": "POST"})[1]
            return h.get("Access-Control-Allow-Origin")
        for origin in ("http://localhost", "http://localhost:8080", "http://127.0.0.1:3000", "http://[::1]",
                       "https://[::1]:3000"):
            assert allowed(origin) == origin
        for origin in ("http://localhost.evil.com", "http://notlocalhost", "http://evil.com", "http://[::1].evil"):
            assert allowed(origin) is None, origin
    finally:
        s.stop()


def test_text_parts_join_as_llama_server(server):
    parts = [{"type": "text", "text": "What is"}, {"type": "text", "text": "the best book"}]
    prompt = server.post("/apply-template", {"messages": [{"role": "user", "content": parts}]})[2]["prompt"]
    assert "What is\nthe best book" in prompt  # parts of a message: joined by "\n" for the template
    prefill = [{"type": "text", "text": "Wh"}, {"type": "text", "text": "ill"}]
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": prefill}]
    prompt = server.post("/apply-template", {"messages": msgs})[2]["prompt"]
    assert prompt.endswith("<|im_start|>assistant\nWh\n\nill")  # a prefill's parts: "\n\n", continued
