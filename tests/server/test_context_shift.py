# tests/server/test_context_shift: --context-shift. A slot that fills its context keeps its first n_keep
# tokens, drops n_discard after them and goes on; the tokens it generates after the shift are the ones a
# fresh request gets for the shortened text (the moved keys are re-rotated, not recomputed); speculation
# stays lossless through shifts; without the flag the slot stops with truncated: true.
import pytest

from conftest import Server

PROMPT = "Write a long story about a lighthouse keeper."
N_CTX = 256


@pytest.fixture(scope="module")
def shifting():
    s = Server("-c", str(N_CTX), "-np", "1", "--context-shift")
    yield s
    s.stop()


def completion(server, **body):
    code, _, j = server.post("/completion", {"temperature": 0, "cache_prompt": False, **body})
    assert code == 200, j
    return j


def test_generation_goes_past_the_context(shifting):
    pt = shifting.post("/tokenize", {"content": PROMPT, "add_special": True})[2]["tokens"]
    d = 40
    r = completion(shifting, prompt=pt, n_predict=300, ignore_eos=True, n_keep=-1, n_discard=d)
    assert r["tokens_predicted"] == 300 and r["truncated"] and r["stop_type"] == "limit"
    gen, n = r["tokens"], N_CTX - len(pt)  # gen[n] is the token sampled when the context filled up
    assert completion(shifting, prompt=pt, n_predict=n, ignore_eos=True)["tokens"] == gen[:n]
    # after the shift the cache holds the prompt and gen[d:n]; gen[n] is decoded at the next free position
    for k in range(3):
        fresh = completion(shifting, prompt=pt + gen[d:n + 1 + k], n_predict=1)
        assert fresh["tokens"][0] == gen[n + 1 + k], k
    # the default: n_keep 0 (only BOS, if any, stays) and half of the rest dropped, again and again
    r = completion(shifting, prompt=PROMPT, n_predict=700, ignore_eos=True)
    assert r["tokens_predicted"] == 700 and r["truncated"]
    assert completion(shifting, prompt="The capital of France is", n_predict=3)["content"].startswith(" Paris")


def test_speculation_across_shifts(shifting):
    spec = Server("-c", str(N_CTX), "-np", "1", "--context-shift", "--spec-type", "suffix")
    try:
        for body in ({"prompt": "1, 2, 3, 1, 2, 3, 1, 2, 3,"},
                     {"prompt": PROMPT, "n_keep": -1, "n_discard": 30}):
            body.update(n_predict=500, ignore_eos=True)
            plain, drafted = completion(shifting, **body), completion(spec, **body)
            assert drafted["tokens"] == plain["tokens"]  # lossless through the shifts
            assert drafted["timings"]["draft_n_accepted"] > 100
    finally:
        spec.stop()


def test_without_the_flag_a_full_slot_stops():
    s = Server("-c", str(N_CTX), "-np", "1")
    try:
        r = completion(s, prompt=PROMPT, n_predict=400, ignore_eos=True, n_keep=-1)  # n_keep alone is accepted
        assert r["truncated"] and r["stop_type"] == "limit" and r["tokens_predicted"] < 256
    finally:
        s.stop()


def test_bad_fields(shifting):
    for bad in ({"n_keep": -2}, {"n_discard": -1}, {"n_keep": "x"}):
        code, _, j = shifting.post("/completion", {"prompt": PROMPT, "n_predict": 1, **bad})
        assert code == 400, (bad, j)
