# tests/server/test_hybrid_cache: what a server keeps of a hybrid model's (qwen35: recurrent layers) slots.
# On the tiny synthetic qwen35 (random weights): the RAM prompt cache carries the recurrent state and the
# checkpoint taken 4 tokens before each prompt's end, so a prompt extending an earlier one, after another
# prompt took the slot, restarts there (--ctx-checkpoints 0: from the start) with the cold output; slot
# files save and restore the recurrent state (at the slot's end), and the restored slot continues as the
# uninterrupted one.
import pytest

from conftest import Server, synth_qwen35

A = "The three primary colors are red, yellow and blue. " * 6
OTHER = "Rivers run to the sea and the sea is never full. " * 6
GEN = {"n_predict": 8, "temperature": 0, "id_slot": 0, "cache_prompt": True}


@pytest.fixture(scope="module")
def q35(tmp_path_factory):
    return synth_qwen35(tmp_path_factory.mktemp("hybrid") / "q35.gguf", 11)


def completion(s, prompt):
    status, _, j = s.post("/completion", {"prompt": prompt, **GEN})
    assert status == 200, j
    return j


@pytest.mark.parametrize("checkpoints", [32, 0])
def test_ram_cache_restarts_at_the_checkpoint_near_the_prompt_end(q35, checkpoints):
    s = Server("-c", "1024", "-np", "1", "--cache-ram", "64", "--ctx-checkpoints", str(checkpoints),
               "--checkpoint-every-n-tokens", "-1", model=q35)
    try:
        first = completion(s, A)
        n_a = first["tokens_evaluated"]
        completion(s, OTHER)  # takes the slot: A's state goes to the RAM cache
        warm = completion(s, A + " And green")
    finally:
        s.stop()
    cold_server = Server("-c", "1024", "-np", "1", model=q35)
    try:
        cold = completion(cold_server, A + " And green")
    finally:
        cold_server.stop()
    assert warm["content"] == cold["content"]
    assert cold["timings"]["cache_n"] == 0
    # the RAM entry holds A's prompt and answer; the new prompt leaves it after A's prompt, where the
    # recurrent state exists only at the checkpoint (without checkpoints: nowhere but the start)
    assert warm["timings"]["cache_n"] == (n_a - 4 if checkpoints else 0)


def test_slot_file_carries_the_recurrent_state(q35, tmp_path):
    # A slot file holds the state at the slot's end (as llama-server's; checkpoints stay in memory), so the
    # follow-up prompt extends exactly the tokens the slot holds: the first prompt and its answer, as ids.
    s = Server("-c", "1024", "-np", "1", "--slot-save-path", tmp_path, model=q35)
    try:
        ids = s.post("/tokenize", {"content": A})[2]["tokens"]
        first = completion(s, ids)
        status, _, saved = s.post("/slots/0?action=save", {"filename": "q35.bin"})
        assert status == 200, saved
        assert saved["n_saved"] == len(ids) + len(first["tokens"]) - 1  # the last token is not decoded yet
        follow = ids + first["tokens"] + ids[:5]
        reference = completion(s, follow)  # continues from the state the file holds
        assert s.post("/slots/0?action=erase", {})[0] == 200
        status, _, restored = s.post("/slots/0?action=restore", {"filename": "q35.bin"})
        assert status == 200 and restored["n_restored"] == saved["n_saved"], restored
        again = completion(s, follow)
    finally:
        s.stop()
    assert again["timings"]["cache_n"] == reference["timings"]["cache_n"] == saved["n_saved"]
    assert again["tokens"] == reference["tokens"]
