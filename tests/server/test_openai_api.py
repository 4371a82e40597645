# tests/server/test_openai_api: the official `openai` client against `bee serve` — chat, streaming,
# text completions, models, logprobs — plus the native endpoints.
import openai
import pytest

from conftest import http


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key="unused")


MESSAGES = [{"role": "user", "content": "What is the capital of France?"}]


def test_models(client):
    models = client.models.list()
    assert len(models.data) == 1
    assert models.data[0].id == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_chat(client):
    r = client.chat.completions.create(model="x", messages=MESSAGES, max_tokens=12, temperature=0)
    assert r.object == "chat.completion"
    assert r.id.startswith("chatcmpl-")
    c = r.choices[0]
    assert c.message.role == "assistant"
    assert c.finish_reason in ("stop", "length")
    assert len(c.message.content) > 0
    assert r.usage.completion_tokens <= 12 and r.usage.prompt_tokens > 5
    assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens


def test_chat_stream_matches_non_stream(client):
    full = client.chat.completions.create(model="x", messages=MESSAGES, max_tokens=16, temperature=0)
    chunks = list(client.chat.completions.create(model="x", messages=MESSAGES, max_tokens=16, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].choices[0].finish_reason == full.choices[0].finish_reason
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == full.usage.completion_tokens


def test_max_tokens_precedence(server):
    body = {"messages": MESSAGES, "temperature": 0, "ignore_eos": True}
    assert server.post("/v1/chat/completions", {**body, "max_tokens": 3})[2]["usage"]["completion_tokens"] == 3
    r = server.post("/v1/chat/completions", {**body, "max_tokens": 3, "max_completion_tokens": 5})[2]
    assert r["usage"]["completion_tokens"] == 5
    r = server.post("/v1/chat/completions", {**body, "max_tokens": 3, "max_completion_tokens": 5, "n_predict": 2})[2]
    assert r["usage"]["completion_tokens"] == 2
    assert r["choices"][0]["finish_reason"] == "length"


def test_completions(client):
    r = client.completions.create(model="x", prompt="The capital of France is", max_tokens=6, temperature=0)
    assert r.object == "text_completion"
    assert "Paris" in r.choices[0].text
    streamed = "".join(c.choices[0].text for c in client.completions.create(
        model="x", prompt="The capital of France is", max_tokens=6, temperature=0, stream=True) if c.choices)
    assert streamed == r.choices[0].text


def test_chat_logprobs(client):
    r = client.chat.completions.create(model="x", messages=MESSAGES, max_tokens=4, temperature=0,
                                       logprobs=True, top_logprobs=3)
    lp = r.choices[0].logprobs.content
    assert len(lp) == r.usage.completion_tokens
    for t in lp:
        assert len(t.top_logprobs) == 3
        assert t.logprob <= 0
        # greedy: the chosen token is the most likely one
        assert t.top_logprobs[0].token == t.token and t.top_logprobs[0].logprob == pytest.approx(t.logprob)


def test_stop_string(server):
    r = server.post("/completion", {"prompt": "Count: 1, 2, 3, 4,", "n_predict": 30, "temperature": 0, "stop": [" 7"]})[2]
    assert r["stop_type"] == "word" and r["stopping_word"] == " 7"
    assert r["content"].rstrip().endswith("6,") and " 7" not in r["content"]


def test_native_stream_has_no_done_sentinel(server):
    import urllib.request, json
    req = urllib.request.Request(server.url("/completion"), method="POST",
                                 data=json.dumps({"prompt": "Hello", "n_predict": 4, "stream": True}).encode())
    with urllib.request.urlopen(req) as r:
        events = [l for l in r.read().decode().split("\n\n") if l]
    assert all(e.startswith("data: ") for e in events)
    assert "[DONE]" not in events[-1]
    last = json.loads(events[-1][6:])
    assert last["stop"] is True and "timings" in last and last["tokens_predicted"] == 4


def test_tokenize_detokenize_template(server):
    s, _, r = server.post("/tokenize", {"content": "Hello world", "with_pieces": True})
    assert s == 200 and [p["piece"] for p in r["tokens"]] == ["Hello", " world"]
    ids = [p["id"] for p in r["tokens"]]
    assert server.post("/detokenize", {"tokens": ids})[2] == {"content": "Hello world"}
    p = server.post("/apply-template", {"messages": MESSAGES})[2]["prompt"]
    assert "<|im_start|>user\nWhat is the capital of France?<|im_end|>" in p and p.endswith("<|im_start|>assistant\n")


def test_props_and_slots(server):
    props = server.get("/props")[2]
    assert props["total_slots"] == 4 and "im_start" in props["chat_template"]
    slots = server.get("/slots")[2]
    assert [s["id"] for s in slots] == [0, 1, 2, 3] and all(s["n_ctx"] == 1024 for s in slots)
