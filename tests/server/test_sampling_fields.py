# tests/server/test_sampling_fields: logit_bias in its OpenAI and llama.cpp forms changes greedy output as
# asked (a ban, a forced token, a token given as text), bad values get a 400 naming the entry; the further
# llama.cpp samplers (top_n_sigma, typical_p, xtc, dynatemp, min_keep, mirostat 1 and 2, DRY, the
# `samplers` order) act; post_sampling_probs, timings_per_token, t_max_predict_ms, n_indent,
# return_progress and response_fields work; a request without a seed draws a fresh one. Context shift:
# test_context_shift.py; `lora`: test_lora.py.
import pytest

from conftest import Server, http

PROMPT = "The capital of France is"


def greedy(server, **extra):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 6, "temperature": 0,
                                             "cache_prompt": False, **extra})
    assert code == 200, j
    return j["tokens"]


def tokenize(server, text):
    return server.post("/tokenize", {"content": text})[2]["tokens"]


def test_logit_bias_bans_and_forces(server):
    plain = greedy(server)
    first = plain[0]
    banned = greedy(server, logit_bias={str(first): -1e9})  # OpenAI form: {"token id": bias}
    assert banned[0] != first and first not in banned
    assert greedy(server, logit_bias=[[first, False]]) == banned  # llama.cpp form, false = never
    forced = tokenize(server, " Berlin")
    assert len(forced) == 1
    assert greedy(server, logit_bias=[[forced[0], 100]]) == forced * 6
    assert greedy(server, logit_bias=[[" Berlin", 100]]) == forced * 6  # a token given as its text
    assert greedy(server, logit_bias={" Berlin": 100}) == forced * 6
    assert greedy(server, logit_bias=[]) == plain and greedy(server, logit_bias={}) == plain


def test_logit_bias_on_chat(server):
    code, _, j = server.post("/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Say something."}], "max_tokens": 4, "temperature": 0,
        "logit_bias": {str(tokenize(server, "!")[0]): 100}})
    assert code == 200, j
    assert j["choices"][0]["message"]["content"] == "!!!!"


@pytest.mark.parametrize("bias, words", [
    ({"99999999": 1}, "outside the vocabulary"),
    ([[1, "x"]], "finite number or false"),
    ([[1, True]], "true is not a bias"),
    ([[1]], "pair"),
    ([[1.5, 2]], "id or a string"),
    ("x", "must be an object"),
])
def test_logit_bias_errors(server, bias, words):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, "logit_bias": bias})
    assert code == 400, j
    assert words in j["error"]["message"]


def sampled(server, **extra):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 8, "temperature": 1.0, "seed": 42,
                                             "top_k": 0, "top_p": 1.0, "min_p": 0.0, "cache_prompt": False,
                                             "n_probs": 5, **extra})
    assert code == 200, j
    return j


def test_extended_samplers(server):
    # top_n_sigma 0.01 keeps only the maximum: sampling at temperature 1 becomes the greedy answer
    assert sampled(server, top_n_sigma=0.01)["tokens"][:6] == greedy(server)
    # XTC at probability 1 with a low threshold never picks the likeliest token of a confident step
    first_greedy = greedy(server)[0]
    assert sampled(server, xtc_probability=1.0, xtc_threshold=0.01)["tokens"][0] != first_greedy
    # the rest are accepted and deterministic for a seed
    for extra in ({"typical_p": 0.5}, {"dynatemp_range": 0.5, "dynatemp_exponent": 2}, {"min_keep": 3},
                  {"mirostat": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2},
                  {"mirostat": 1, "mirostat_tau": 3.0, "mirostat_eta": 0.2}):
        assert sampled(server, **extra)["tokens"] == sampled(server, **extra)["tokens"], extra
    code, _, j = server.post("/completion", {"prompt": PROMPT, "dynatemp_exponent": 0})
    assert code == 400 and "dynatemp_exponent" in j["error"]["message"]


REPEAT = "1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3,"


def test_dry_breaks_a_repeat(server):
    def run(**extra):
        code, _, j = server.post("/completion", {"prompt": REPEAT, "n_predict": 12, "temperature": 0,
                                                 "cache_prompt": False, **extra})
        assert code == 200, j
        return j
    plain = run()["content"]
    assert plain.startswith(" 1, 2, 3")  # greedy keeps counting the cycle
    dry = run(dry_multiplier=0.8)
    assert not dry["content"].startswith(" 1, 2, 3")
    g = dry["generation_settings"]
    assert (g["dry_multiplier"], g["dry_base"], g["dry_allowed_length"], g["dry_penalty_last_n"]) == \
        (pytest.approx(0.8), 1.75, 2, -1)
    assert g["dry_sequence_breakers"] == ["\n", ":", "\"", "*"]
    # "," as a breaker: no repeat spans more than the token after a comma, shorter than allowed_length 2
    assert run(dry_multiplier=0.8, dry_sequence_breakers=[","])["content"] == plain
    assert run(dry_multiplier=0.8, dry_penalty_last_n=4)["content"] == plain  # too short a window to see a repeat
    for bad, words in (({"dry_base": 0.5}, "dry_base"), ({"dry_sequence_breakers": "x"}, "array"),
                       ({"dry_sequence_breakers": [""]}, "non-empty"), ({"dry_allowed_length": -1}, "dry_allowed_length")):
        code, _, j = server.post("/completion", {"prompt": REPEAT, "n_predict": 1, "dry_multiplier": 1, **bad})
        assert code == 400 and words in j["error"]["message"], (bad, j)


def test_samplers_order(server):
    # only top-k 1: sampling at temperature 1 is the greedy answer, whatever the seed
    one = {"top_k": 1, "top_p": 1.0, "min_p": 0.0, "samplers": ["top_k", "temperature"]}
    assert sampled(server, **one)["tokens"][:6] == greedy(server)
    j = sampled(server, **{**one, "samplers": "kt"})
    assert j["tokens"][:6] == greedy(server)
    assert j["generation_settings"]["samplers"] == ["top_k", "temperature"]
    # without top_k in the order, top_k 1 does nothing: more than one token survives the chain
    probs = lambda order: sampled(server, **{**one, "samplers": order}, post_sampling_probs=True)["completion_probabilities"]
    assert all(len(t["top_probs"]) == 1 for t in probs(["top_k", "temperature"]))
    assert any(len(t["top_probs"]) > 1 for t in probs(["temperature"]))
    for bad in (["top_k", "bogus"], "kq", [1]):
        code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, "samplers": bad})
        assert code == 400 and "samplers" in j["error"]["message"], (bad, j)


def test_post_sampling_probs(server):
    j = sampled(server, top_k=3, post_sampling_probs=True)
    for t in j["completion_probabilities"]:
        assert "logprob" not in t and 0 < t["prob"] <= 1
        top = t["top_probs"]
        assert 1 <= len(top) <= 3  # top_k 3: nothing else survives the chain
        assert sum(x["prob"] for x in top) == pytest.approx(1.0, abs=1e-5)
        assert t["id"] in [x["id"] for x in top]
    g = greedy_probs = server.post("/completion", {"prompt": PROMPT, "n_predict": 2, "temperature": 0, "n_probs": 4,
                                                   "post_sampling_probs": True})[2]
    assert all(t["prob"] == 1.0 and len(t["top_probs"]) == 1 for t in g["completion_probabilities"]), greedy_probs
    code, _, c = server.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2,
                                                      "logprobs": True, "top_logprobs": 2, "post_sampling_probs": True})
    assert code == 200 and "prob" in c["choices"][0]["logprobs"]["content"][0]


def stream_events(server, path, body):
    import http.client
    import json
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("POST", path, json.dumps({**body, "stream": True}), {"Content-Type": "application/json"})
    text = conn.getresponse().read().decode()
    return [json.loads(e[6:]) for e in text.split("\n\n") if e.startswith("data: {")]


def test_timings_per_token(server):
    evs = stream_events(server, "/completion", {"prompt": PROMPT, "n_predict": 4, "temperature": 0,
                                                "timings_per_token": True})
    deltas = [e for e in evs if not e["stop"]]
    assert [e["timings"]["predicted_n"] for e in deltas] == [1, 2, 3, 4]
    assert all(e["timings"]["prompt_n"] > 0 for e in deltas)
    plain = stream_events(server, "/completion", {"prompt": PROMPT, "n_predict": 2, "temperature": 0})
    assert all("timings" not in e for e in plain if not e["stop"])
    chat = stream_events(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                          "max_tokens": 2, "timings_per_token": True})
    assert [e["timings"]["predicted_n"] for e in chat if e["choices"] and e["choices"][0]["delta"].get("content")] == [1, 2]


def test_t_max_predict_ms(server):
    newline = {"logit_bias": [["\n", 100]], "temperature": 0, "n_predict": 200, "cache_prompt": False}
    code, _, j = server.post("/completion", {"prompt": PROMPT, "t_max_predict_ms": 1, **newline})
    assert code == 200 and j["stop_type"] == "limit" and j["tokens_predicted"] < 200, j
    code, _, j = server.post("/completion", {"prompt": PROMPT, "t_max_predict_ms": 1, "n_predict": 5, "temperature": 0,
                                             "logit_bias": [["\n", False]]})  # no newline: the limit never applies
    assert j["tokens_predicted"] == 5, j
    code, _, j = server.post("/completion", {"prompt": PROMPT, "t_max_predict_ms": -1})
    assert code == 400


def test_no_seed_draws_a_fresh_one(server):
    body = {"prompt": PROMPT, "n_predict": 16, "temperature": 1.5, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
            "cache_prompt": False}
    outs = [server.post("/completion", body)[2] for _ in range(3)]
    assert len({tuple(o["tokens"]) for o in outs}) > 1  # three draws of 16 tokens at temperature 1.5
    assert all(o["generation_settings"]["seed"] == 4294967295 for o in outs)


def test_return_progress(server):
    small_batches = Server("-c", "1024", "-np", "1", "-b", "64")  # a 300-token prompt takes 5 steps
    try:
        evs = stream_events(small_batches, "/completion", {"prompt": "word " * 300, "n_predict": 1,
                                                           "return_progress": True})
    finally:
        small_batches.stop()
    prog = [e["prompt_progress"] for e in evs if "prompt_progress" in e]
    assert [p["processed"] for p in prog] == [64, 128, 192, 256, prog[-1]["total"]], prog
    assert [p["processed"] for p in prog] == sorted(p["processed"] for p in prog)
    assert prog[-1]["processed"] == prog[-1]["total"] and prog[0]["cache"] == 0
    assert all(p["time_ms"] >= 0 for p in prog)
    chat = stream_events(server, "/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}],
                                                          "max_tokens": 1, "return_progress": True})
    assert any("prompt_progress" in e and e["choices"] == [] for e in chat)
    plain = stream_events(server, "/completion", {"prompt": "Hi", "n_predict": 1})
    assert all("prompt_progress" not in e for e in plain)


CODE = "def f(x):\n    if x:\n        return 1\n"


def test_n_indent(server):
    def run(**extra):
        code, _, j = server.post("/completion", {"prompt": CODE, "n_predict": 40, "temperature": 0,
                                                 "cache_prompt": False, **extra})
        assert code == 200, j
        return j
    plain = run()["content"]
    first_nl = plain.index("\n")
    line2 = plain[first_nl + 1:].split("\n")[0]
    assert len(line2) - len(line2.lstrip(" \t")) < 4  # greedy leaves the indented block
    cut = run(n_indent=4)
    assert cut["stop_type"] == "limit" and cut["tokens_predicted"] < 40
    assert plain.startswith(cut["content"]) and cut["content"] == plain[:first_nl + 1 + len(line2) - len(line2.lstrip(" \t"))]
    streamed = stream_events(server, "/completion", {"prompt": CODE, "n_predict": 40, "temperature": 0, "n_indent": 4})
    assert "".join(e["content"] for e in streamed) == cut["content"]


def test_response_fields(server):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 2, "response_fields":
                                             ["content", "generation_settings/n_predict", "no/such"]})
    assert code == 200 and set(j) == {"content", "generation_settings/n_predict"} and j["generation_settings/n_predict"] == 2
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, "response_fields": "content"})
    assert code == 400 and "response_fields" in j["error"]["message"]
