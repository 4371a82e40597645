# tests/server/test_slot_save: POST /slots/{id}?action=save|erase|restore on every KV storage type.
# Each server pairs a K type with a V type so that eight servers cover all sixteen types (turbo types on
# the V side: SmolLM2 is small, so turbo K is kept at q8_0 unless --kv-auto-asymmetric off, which two
# more servers cover). On each: generate, save, continue (the uninterrupted reference), erase, restore,
# continue again — the same cache hit and the same greedy text — then the refusals.
import os
import time

import pytest

from conftest import Server

PAIRS = [("f32", "turbo2"), ("f16", "turbo3"), ("bf16", "turbo4"), ("q8_0", "turbo2_64"), ("q4_0", "turbo3_64"),
         ("q4_1", "turbo4_64"), ("q5_0", "turbo2_tcq"), ("q5_1", "turbo3_tcq")]
UNPROTECTED = [("turbo3", "turbo3"), ("turbo2_tcq", "turbo4_64")]  # with --kv-auto-asymmetric off

PROMPT = "The three primary colors are red, yellow and"
GEN = {"n_predict": 6, "temperature": 0, "id_slot": 0, "cache_prompt": True}


@pytest.fixture(scope="module")
def save_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("slots")


def completion(s, prompt):
    status, _, j = s.post("/completion", {"prompt": prompt, **GEN})
    assert status == 200, j
    return j


def action(s, name, body=None, slot=0):
    return s.post(f"/slots/{slot}?action={name}", body if body is not None else {})


def n_cached(s, want=None):
    """Slot 0's cached tokens. /slots is a snapshot the inference thread publishes after each step, so
    give it a moment to catch up with an action that has just answered."""
    deadline = time.time() + 5
    while True:
        n = s.get("/slots")[2][0]["n_cached_tokens"]
        if want is None or n == want or time.time() > deadline:
            return n
        time.sleep(0.02)


@pytest.mark.parametrize("ctk,ctv,asym", [(k, v, "on") for k, v in PAIRS] + [(k, v, "off") for k, v in UNPROTECTED],
                         ids=lambda x: str(x))
def test_save_erase_restore(save_dir, ctk, ctv, asym):
    s = Server("-c", "512", "-np", "1", "--slot-save-path", save_dir, "-ctk", ctk, "-ctv", ctv,
               "--kv-auto-asymmetric", asym)
    try:
        name = f"{ctk}-{ctv}-{asym}.bin"
        first = completion(s, PROMPT)
        status, _, saved = action(s, "save", {"filename": name})
        assert status == 200, saved
        assert saved["id_slot"] == 0 and saved["filename"] == name
        assert saved["n_saved"] == n_cached(s, saved["n_saved"]) > first["tokens_evaluated"]
        assert saved["n_written"] == os.path.getsize(save_dir / name)
        assert saved["timings"]["save_ms"] >= 0

        follow = PROMPT + first["content"] + " Mixing"
        reference = completion(s, follow)  # uninterrupted: continues from the cache the save captured
        status, _, erased = action(s, "erase")
        assert status == 200 and erased == {"id_slot": 0, "n_erased": reference["tokens_evaluated"] + reference["tokens_predicted"] - 1}, erased
        assert n_cached(s, 0) == 0
        status, _, restored = action(s, "restore", {"filename": name})
        assert status == 200, restored
        assert restored["n_restored"] == saved["n_saved"] and restored["n_read"] == saved["n_written"]
        assert restored["timings"]["restore_ms"] >= 0
        assert n_cached(s, saved["n_saved"]) == saved["n_saved"]
        again = completion(s, follow)
        assert again["timings"]["cache_n"] == reference["timings"]["cache_n"] >= first["tokens_evaluated"] - 1
        assert again["content"] == reference["content"]

        # A file from a server with other KV types is refused by name, and the slot is left as it was.
        for other in sorted(p.name for p in save_dir.glob("*.bin")):
            if other != name:
                status, _, err = action(s, "restore", {"filename": other})
                assert status == 400 and "KV types" in err["error"]["message"], err
                break
        in_cache = again["tokens_evaluated"] + again["tokens_predicted"] - 1
        assert n_cached(s, in_cache) == in_cache
        for bad in ["../x.bin", "a/b.bin", "", ".."]:
            status, _, err = action(s, "save", {"filename": bad})
            assert status == 400 and err["error"]["type"] == "invalid_request_error", (bad, err)
        assert action(s, "restore", {"filename": "missing.bin"})[0] == 400
        assert action(s, "save", {"filename": "x.bin"}, slot=3)[0] == 400
        assert action(s, "frobnicate", {"filename": "x.bin"})[0] == 400
    finally:
        s.stop()


def test_without_save_path_is_501(server):
    status, _, err = server.post("/slots/0?action=save", {"filename": "x.bin"})
    assert status == 501 and err["error"]["type"] == "not_supported_error"
