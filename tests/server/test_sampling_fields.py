# tests/server/test_sampling_fields: logit_bias in its OpenAI and llama.cpp forms changes greedy output as
# asked (a ban, a forced token, a token given as text), bad values get a 400 naming the entry; the further
# llama.cpp samplers (top_n_sigma, typical_p, xtc, dynatemp, min_keep, mirostat 2) act, and the options Bee
# does not implement (mirostat 1, DRY, samplers, ...) are refused when switched on (accepted when off).
import pytest

from conftest import http

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


@pytest.mark.parametrize("field, on, off", [
    ("mirostat", 1, 0), ("dry_multiplier", 0.8, 0), ("n_keep", 10, 0), ("t_max_predict_ms", 100, 0),
    ("post_sampling_probs", True, False), ("samplers", ["top_k", "temperature"], []),
])
def test_unimplemented_options_refused_when_on(server, field, on, off):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, field: on})
    assert code == 400, j
    assert field in j["error"]["message"]
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, field: off})
    assert code == 200, j


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
                  {"mirostat": 2, "mirostat_tau": 3.0, "mirostat_eta": 0.2}):
        assert sampled(server, **extra)["tokens"] == sampled(server, **extra)["tokens"], extra
    code, _, j = server.post("/completion", {"prompt": PROMPT, "dynatemp_exponent": 0})
    assert code == 400 and "dynatemp_exponent" in j["error"]["message"]
