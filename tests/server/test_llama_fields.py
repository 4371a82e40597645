# tests/server/test_llama_fields: llama-server's chat template names and smaller request/response fields.
# `--chat-template NAME` renders each of llama.cpp's built-in names as llama.cpp does (the expected text is
# llama.cpp's own, tests/data/chat_templates/builtin_formats.json) and an unknown name is refused with the
# list; /apply-template honours add_generation_prompt; two assistant messages at the end are refused; the
# prompt object {"prompt_string"}; /chat/completions/input_tokens; CORS methods; generation_settings
# .logit_bias; `verbose` (__verbose); llamacpp:prompt_tokens_cached_total in /metrics.
import json
import re
import subprocess

import pytest

from conftest import BEE, ROOT, SMOLLM, Server, http, prompt_tokens

REFERENCE = json.loads((ROOT / "tests" / "data" / "chat_templates" / "builtin_formats.json").read_text())
CONV = REFERENCE["conversations"][0]["messages"]  # system, user, assistant, user, assistant, user
assert REFERENCE["conversations"][1]["messages"] == CONV and not REFERENCE["conversations"][1]["add_generation_prompt"]


@pytest.fixture(scope="module")
def named_servers():
    """One server per format family: a system turn (llama3), system text inside [INST] (mistral-v7),
    system text merged into the first user turn (gemma)."""
    servers = {name: Server("-c", "1024", "-np", "1", "--chat-template", name)
               for name in ("llama3", "mistral-v3", "gemma")}
    yield servers
    for s in servers.values():
        s.stop()


@pytest.mark.parametrize("name", ["llama3", "mistral-v3", "gemma"])
def test_builtin_template_renders_as_llama_cpp(named_servers, name):
    s = named_servers[name]
    with_gen, without_gen = REFERENCE["expected"][name][0], REFERENCE["expected"][name][1]
    code, _, r = s.post("/apply-template", {"messages": CONV})
    assert code == 200 and r["prompt"] == with_gen
    code, _, r = s.post("/apply-template", {"messages": CONV, "add_generation_prompt": False})
    assert code == 200 and r["prompt"] == without_gen
    assert s.get("/props")[2]["chat_template"] == name
    # The chat endpoint runs the same prompt.
    code, _, r = s.post("/v1/chat/completions", {"messages": CONV, "max_tokens": 1, "temperature": 0})
    assert code == 200 and r["usage"]["prompt_tokens"] == prompt_tokens(s, CONV)


def test_unknown_template_name_lists_the_valid_ones():
    r = subprocess.run([str(BEE), "serve", "-m", str(SMOLLM), "--port", "1", "--chat-template", "llama-3"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "'llama-3'" in r.stderr and "--chat-template-file" in r.stderr
    for name in REFERENCE["names"]:  # every valid name is listed
        assert re.search(r"[ ,]" + re.escape(name) + r"[,;]", r.stderr), (name, r.stderr)


def test_text_without_tags_is_a_literal_template_with_jinja():
    # llama-server with --jinja takes any --chat-template text as a template; without --jinja Bee still
    # refuses it (above), so a misspelt name is not silently rendered as itself.
    text = "This is not a chat template, it is"
    s = Server("-c", "256", "-np", "1", "--jinja", "--chat-template", text)
    try:
        code, _, r = s.post("/apply-template", {"messages": CONV})
        assert code == 200 and r["prompt"] == text
        assert "not a built-in name" in s.output()
    finally:
        s.stop()


def test_apply_template_add_generation_prompt(server):
    msgs = [{"role": "user", "content": "Hi"}]
    with_gen = server.post("/apply-template", {"messages": msgs})[2]["prompt"]
    without = server.post("/apply-template", {"messages": msgs, "add_generation_prompt": False})[2]["prompt"]
    assert with_gen.endswith("<|im_start|>assistant\n") and with_gen == without + "<|im_start|>assistant\n"
    code, _, r = server.post("/apply-template", {"messages": msgs, "add_generation_prompt": "no"})
    assert code == 400 and "add_generation_prompt" in r["error"]["message"]
    # A final assistant message is continued (prefill) whatever add_generation_prompt says.
    pre = msgs + [{"role": "assistant", "content": "Hel"}]
    for extra in ({}, {"add_generation_prompt": False}):
        assert server.post("/apply-template", {"messages": pre, **extra})[2]["prompt"] == with_gen + "Hel"


def test_two_assistant_messages_at_the_end_are_refused(server):
    msgs = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"},
            {"role": "assistant", "content": "again"}]
    for path in ("/apply-template", "/v1/chat/completions"):
        code, _, r = server.post(path, {"messages": msgs, "max_tokens": 1})
        assert code == 400 and "Cannot have 2 or more assistant messages at the end of the list." in r["error"]["message"]
    msgs.insert(2, {"role": "user", "content": "?"})  # not both at the end: fine
    assert server.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 1})[0] == 200


def test_prompt_object(server):
    def run(prompt):
        return server.post("/completion", {"prompt": prompt, "n_predict": 2, "temperature": 0, "cache_prompt": False})

    code, _, plain = run("The capital of France is")
    assert code == 200
    for obj in ({"prompt_string": "The capital of France is"},
                {"prompt_string": "The capital of France is", "multimodal_data": []}):
        code, _, r = run(obj)
        assert code == 200 and r["content"] == plain["content"] and r["tokens_evaluated"] == plain["tokens_evaluated"]
    code, _, rs = run([{"prompt_string": "The capital of France is"}, "Hello"])  # several prompts
    assert code == 200 and len(rs) == 2 and rs[0]["content"] == plain["content"]
    code, _, r = run({"prompt_string": "Describe", "multimodal_data": ["aGVsbG8="]})
    assert code == 400 and "multimodal" in r["error"]["message"]
    code, _, r = run({"text": "no prompt_string"})
    assert code == 400 and "prompt_string" in r["error"]["message"]


def test_chat_input_tokens(server):
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"}]
    for path in ("/chat/completions/input_tokens", "/v1/chat/completions/input_tokens"):
        code, _, r = server.post(path, {"messages": msgs})
        assert code == 200 and r == {"input_tokens": prompt_tokens(server, msgs), "object": "response.input_tokens"}
    usage = server.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 1})[2]["usage"]
    assert usage["prompt_tokens"] == prompt_tokens(server, msgs)
    assert server.post("/v1/chat/completions/input_tokens", {"messages": 5})[0] == 400


def test_cors_preflight_methods(server):
    code, headers, _ = http("OPTIONS", server.url("/v1/chat/completions"), headers={"Origin": "http://example.com"})
    assert code in (200, 204) and headers.get("Access-Control-Allow-Methods") == "GET, POST, DELETE, OPTIONS"


def test_generation_settings_logit_bias(server):
    body = {"prompt": "Hello", "n_predict": 1, "logit_bias": [[15, 1.5], [20, False]]}
    code, _, r = server.post("/completion", body)
    assert code == 200
    assert r["generation_settings"]["logit_bias"] == [{"bias": 1.5, "token": 15}, {"bias": None, "token": 20}]
    r = server.post("/completion", {"prompt": "Hello", "n_predict": 1})[2]
    assert r["generation_settings"]["logit_bias"] == []


def test_verbose_field(server):
    msgs = [{"role": "user", "content": "Hi"}]
    body = {"messages": msgs, "max_tokens": 3, "temperature": 0}
    r = server.post("/v1/chat/completions", body)[2]
    assert "__verbose" not in r
    r = server.post("/v1/chat/completions", {**body, "verbose": True})[2]
    v = r["__verbose"]
    assert v["content"] == r["choices"][0]["message"]["content"]
    assert v["tokens_predicted"] == r["usage"]["completion_tokens"]
    assert v["prompt"].endswith(server.post("/apply-template", {"messages": msgs})[2]["prompt"])
    assert v["generation_settings"]["n_predict"] == 3
    assert server.post("/v1/chat/completions", {**body, "verbose": 1})[0] == 400
    # Streaming: the first closing chunk carries it (content went out in the deltas).
    code, _, text = http("POST", server.url("/v1/chat/completions"), {**body, "verbose": True, "stream": True})
    chunks = [json.loads(l[6:]) for l in text.splitlines() if l.startswith("data: {")]
    verbose = [c for c in chunks if "__verbose" in c]
    assert code == 200 and len(verbose) == 1 and verbose[0]["choices"][0]["finish_reason"] in ("stop", "length")
    assert verbose[0]["__verbose"]["content"] == "" and verbose[0]["__verbose"]["tokens_predicted"] == 3
    # OpenAI text completions.
    r = server.post("/v1/completions", {"prompt": "Hello", "max_tokens": 2, "verbose": True})[2]
    assert r["__verbose"]["content"] == r["choices"][0]["text"] and r["__verbose"]["tokens_predicted"] == 2


def metric(server, name):
    text = server.get("/metrics")[2]
    m = re.search(r"^llamacpp:" + name + r" (\S+)$", text, re.M)
    assert m, text
    return float(m.group(1))


def test_metrics_prompt_tokens_cached_total(server):
    before = metric(server, "prompt_tokens_cached_total")
    body = {"prompt": "A long enough prompt about the cache and its reuse: " * 4, "n_predict": 1, "id_slot": 0,
            "cache_prompt": True}
    cached = sum(server.post("/completion", body)[2]["timings"]["cache_n"] for _ in range(2))
    assert cached > 0
    assert metric(server, "prompt_tokens_cached_total") == before + cached
