# tests/server/test_mtp: the qwen35 MTP block drafting inside the server's continuous batch. On the tiny
# synthetic qwen35 (random weights, an MTP block), 4 slots generating at once give with draft-mtp, with
# ngram-mod,draft-mtp and with no --spec-type (the block chosen by itself) the tokens of the same server
# without speculation. Random weights: only exactness is checked, not acceptance.
import concurrent.futures

import pytest

from conftest import Server, synth_qwen35

PROMPTS = ["one two three one two three one two", "a b c d e f g", "the cat sat on the mat. " * 3, "x"]
ARGS = ["-c", "2048", "-np", "4", "-t", "2"]


@pytest.fixture(scope="module")
def q35(tmp_path_factory):
    return synth_qwen35(tmp_path_factory.mktemp("mtp") / "q35.gguf", 7)


def run_all(server):
    def one(p):
        status, _, body = server.post("/completion", {"prompt": p, "n_predict": 24, "temperature": 0})
        assert status == 200, body
        return body

    with concurrent.futures.ThreadPoolExecutor(len(PROMPTS)) as ex:
        return list(ex.map(one, PROMPTS))


@pytest.fixture(scope="module")
def reference(q35):
    s = Server(*ARGS, "--spec-type", "none", model=q35)
    try:
        out = run_all(s)
    finally:
        s.stop()
    assert all("draft_n" not in o["timings"] for o in out)
    return out


@pytest.mark.parametrize("types", [["--spec-type", "draft-mtp"], ["--spec-type", "ngram-mod,mtp"], []])
def test_four_slots_greedy_equals_plain(q35, reference, types):
    s = Server(*ARGS, *types, "--spec-draft-n-max", "4", model=q35)
    try:
        out = run_all(s)
    finally:
        s.stop()
    for i, (got, want) in enumerate(zip(out, reference)):
        assert got["tokens"] == want["tokens"], f"{types} prompt {i}"
    assert sum(o["timings"]["draft_n"] for o in out) > 0, types
