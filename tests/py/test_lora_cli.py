# tests/py/test_lora_cli: `bee run` and `bee chat` with LoRA adapters (a random adapter for SmolLM2 written
# with the gguf package): --lora changes the greedy tokens, scale 0 and --lora-init-without-apply give the
# plain model's, llama.cpp's FILE:SCALE form equals FILE SCALE, a bad file is refused with its name.
import json

import numpy as np
import pytest

import gguf

PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def adapter(tmp_path_factory, smollm):
    shapes = {t.name: (int(t.shape[0]), int(t.shape[1])) for t in gguf.GGUFReader(str(smollm)).tensors
              if t.name.endswith((".attn_q.weight", ".attn_v.weight", ".ffn_down.weight"))}
    path = tmp_path_factory.mktemp("lora") / "adapter.gguf"
    rng = np.random.default_rng(7)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_type("adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", 16.0)
    for name, (n_in, n_out) in shapes.items():
        w.add_tensor(name + ".lora_a", (rng.uniform(-1, 1, (8, n_in)) / np.sqrt(n_in)).astype(np.float16))
        w.add_tensor(name + ".lora_b", rng.uniform(-0.3, 0.3, (n_out, 8)).astype(np.float16))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def tokens(bee, smollm, *extra):
    r = bee("run", "-m", smollm, "-p", PROMPT, "-n", "10", "--temp", "0", "--json", *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["tokens"]


def test_run_with_adapter(bee, smollm, adapter):
    plain = tokens(bee, smollm)
    on = tokens(bee, smollm, "--lora", adapter)
    assert on != plain
    assert tokens(bee, smollm, "--lora-scaled", adapter, "0") == plain
    assert tokens(bee, smollm, "--lora", adapter, "--lora-init-without-apply") == plain
    assert tokens(bee, smollm, "--lora-scaled", f"{adapter}:1.0") == on
    assert tokens(bee, smollm, "--lora-scaled", adapter, "1") == on


def test_chat_with_adapter(bee, smollm, adapter):
    def reply(*extra):
        r = bee("chat", "-m", smollm, "--temp", "0", "-n", "12", "-c", "512", *extra, input="Name a fruit.\n")
        assert r.returncode == 0, r.stderr
        return r.stdout
    assert reply("--lora-scaled", adapter, "0") == reply()
    assert reply("--lora-scaled", adapter, "2") != reply()


def test_bad_adapter_refused(bee, smollm, tmp_path):
    r = bee("run", "-m", smollm, "-p", PROMPT, "-n", "1", "--lora", smollm)
    assert r.returncode != 0
    assert "not a LoRA adapter" in r.stderr and str(smollm) in r.stderr, r.stderr
    r = bee("run", "-m", smollm, "-p", PROMPT, "-n", "1", "--lora", tmp_path / "missing.gguf")
    assert r.returncode != 0 and "missing.gguf" in r.stderr, r.stderr
