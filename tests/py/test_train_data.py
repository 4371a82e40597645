# tests/py/test_train_data: `bee train-data` (drafter training data) as tools/train-drafter reads it — the tokens are
# the templated prompt as `bee tokenize` splits it plus the greedy answer `bee run` gives, the stored top-k log-probs
# name the next greedy token, the hidden states have the EAGLE-3 shape; resuming and bad input.
import json

import numpy as np
import pytest

from conftest import ROOT
from test_cli import assert_clean_error

PROMPTS = [
    "Explain how rainbows form.",
    json.dumps({"prompt": "Write a haiku about the sea."}),
    json.dumps({"messages": [{"role": "system", "content": "You answer in one sentence."},
                             {"role": "user", "content": "What is a prime number?"}]}),
]


def write_prompts(tmp_path, lines):
    p = tmp_path / "prompts.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def load_dump(folder):
    man = json.loads((folder / "manifest.json").read_text())
    arrays = []
    for sh in man["shards"]:
        arrays.append({k: np.load(folder / sh[k]) for k in ("tokens", "hidden", "topk_ids", "topk_logp")})
    return man, arrays


@pytest.fixture(scope="module")
def dump(bee, smollm, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train_data")
    prompts = write_prompts(tmp, PROMPTS)
    out = tmp / "dump"
    r = bee("train-data", "-m", smollm, "--prompts", prompts, "-o", out, "-n", "12", "--temp", "0", "-np", "2",
            "--top-logprobs", "8", "--shard-size", "2", "-t", "2")
    assert r.returncode == 0, r.stderr
    return out


def test_shapes_and_settings(dump):
    man, arrays = load_dump(dump)
    s = man["settings"]
    assert s["layers"] == [2, 15, 27]  # EAGLE-3's default taps [2, L/2, L-3] of SmolLM2's 30 layers
    assert (s["n_embd"], s["n_vocab"], s["top_k"]) == (576, 49152, 8)
    assert [len(sh["sequences"]) for sh in man["shards"]] == [2, 1]
    assert sorted(q["prompt"] for sh in man["shards"] for q in sh["sequences"]) == [0, 1, 2]
    for sh, a in zip(man["shards"], arrays):
        n = sh["n_rows"]
        assert a["tokens"].shape == (n,) and a["tokens"].dtype == np.int32
        assert a["hidden"].shape == (n, 3, 576) and a["hidden"].dtype == np.float16
        assert a["topk_ids"].shape == (n, 8) and a["topk_logp"].shape == (n, 8)
        assert n == sum(q["n_rows"] for q in sh["sequences"])
        h = a["hidden"].astype(np.float32)
        assert np.isfinite(h).all()
        # three different layers' inputs: the residual stream grows through the model
        norms = np.linalg.norm(h, axis=-1).mean(0)
        assert norms[0] > 0 and norms[0] < norms[1] < norms[2]
        lp = a["topk_logp"]
        assert (lp <= 0).all() and (np.diff(lp, axis=1) <= 0).all()  # log-probs, likeliest first
        assert (np.exp(lp).sum(1) <= 1 + 1e-4).all()


def test_tokens_are_templated_prompt_and_greedy_answer(bee, smollm, dump):
    man, arrays = load_dump(dump)
    for sh, a in zip(man["shards"], arrays):
        for q in sh["sequences"]:
            toks = a["tokens"][q["row0"]:q["row0"] + q["n_rows"]].tolist()
            n_prompt = q["n_prompt"]
            assert q["prompt_text"].startswith("<|im_start|>system\n") and q["prompt_text"].endswith("assistant\n")
            r = bee("tokenize", "-m", smollm, "--special", "-p", q["prompt_text"])
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout) == toks[:n_prompt]
            response = toks[n_prompt:]
            assert 0 < len(response) <= 12
            r = bee("run", "-m", smollm, "-p", q["prompt_text"], "-n", "12", "--temp", "0", "--json", "-t", "2")
            assert r.returncode == 0, r.stderr
            run = json.loads(r.stdout)
            # bee run leaves out the end-of-generation token that stopped it; the dump keeps it
            assert run["tokens"] == (response[:-1] if q["eog"] else response)
            # the stored top-1 at each row is the greedy next token
            top1 = a["topk_ids"][q["row0"]:q["row0"] + q["n_rows"], 0].tolist()
            assert top1[n_prompt - 1:-1] == response
    assert any(q["prompt_text"].find("You answer in one sentence.") > 0 for sh in man["shards"] for q in sh["sequences"])


def test_resume_skips_finished_prompts(bee, smollm, tmp_path):
    prompts = write_prompts(tmp_path, PROMPTS)
    out = tmp_path / "dump"
    args = ("train-data", "-m", smollm, "--prompts", prompts, "-o", out, "-n", "4", "--temp", "0", "--shard-size", "1")
    r = bee(*args, "--max-prompts", "2")
    assert r.returncode == 0, r.stderr
    assert_clean_error(bee(*args), "already holds a dump", "--resume")
    assert_clean_error(bee(*args, "--resume", "-n", "5"), "n_predict")
    r = bee(*args, "--resume")
    assert r.returncode == 0, r.stderr
    assert "1 prompts to answer (2 done before)" in r.stderr
    man, _ = load_dump(out)
    assert [q["prompt"] for sh in man["shards"] for q in sh["sequences"]] == [0, 1, 2]


def test_bad_input(bee, smollm, tmp_path):
    prompts = write_prompts(tmp_path, PROMPTS)
    out = tmp_path / "o"
    assert_clean_error(bee("train-data", "-m", smollm, "-o", out), "--prompts")
    assert_clean_error(bee("train-data", "-m", smollm, "--prompts", prompts), "-o DIR")
    assert_clean_error(bee("train-data", "-m", smollm, "--prompts", prompts, "-o", out, "--layers", "2,15"),
                       "exactly 3")
    assert_clean_error(bee("train-data", "-m", smollm, "--prompts", prompts, "-o", out, "--layers", "2,15,99"),
                       "'99'", "0..30")
    bad = write_prompts(tmp_path, ["fine", '{"prompt": 3}'])
    assert_clean_error(bee("train-data", "-m", smollm, "--prompts", bad, "-o", out), "prompts.jsonl:2")
    assert_clean_error(bee("train-data", "-m", smollm, "--prompts", tmp_path / "missing.txt", "-o", out),
                       "missing.txt")
    assert_clean_error(bee("train-data", "-m", smollm, "--eval-head", tmp_path / "head.gguf"), "--data")


def test_committed_head_drafts_on_the_dump(bee, smollm, dump):
    """drafters/'s SmolLM2 head loads against its target (Eagle3Head::load) and, in Bee's forward, drafts the
    target's next greedy tokens far above chance on these answers (teacher forced)."""
    head = ROOT / "drafters" / "SmolLM2-135M-Instruct.eagle3.gguf"
    r = bee("train-data", "--eval-head", head, "-m", smollm, "--data", dump, "--depth", "4", "--json", "-t", "2")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    d = res["depths"]
    assert res["sequences"] == 3 and res["boundaries"] == d[0]["reached"] > 20
    assert d[0]["accepted"] / d[0]["reached"] > 0.15, res
    assert res["mean_accepted_length"] > 1.15, res


def test_eval_head_refuses_a_head_of_another_model(bee, gemma, dump):
    head = ROOT / "drafters" / "SmolLM2-135M-Instruct.eagle3.gguf"
    r = bee("train-data", "--eval-head", head, "-m", gemma, "--data", dump)
    assert_clean_error(r, "target_hidden_size is 576", "hidden size 640")


def reference_drafter(path, target_path):
    """tests/reference/dflash_reference's float64 numpy forward on a DFlash GGUF (llama.cpp's dialect, no token_embd:
    the target's), its weights dequantized with gguf-py: an implementation independent of Bee's."""
    import sys
    import gguf
    sys.path.insert(0, str(ROOT / "tests" / "reference"))
    from dflash_reference import Drafter, read_drafter

    embd = next(t for t in gguf.GGUFReader(str(target_path)).tensors if t.name == "token_embd.weight")
    c, w, d2t, f = read_drafter(path, gguf.quants.dequantize(embd.data, embd.tensor_type), 512)
    assert list(f["dflash.target_layers"].contents()) == [2, 15, 27]
    return Drafter(c, w), d2t, f["dflash.block_size"].contents()


def test_eval_head_measures_a_dflash_drafter_as_the_reference_forward_does(bee, smollm, dump):
    """--eval-head with drafters/'s SmolLM2 DFlash drafter (DflashModel::load, Bee's block forward) counts, per depth,
    the blocks the float64 reference forward accepts on the same dump: the block [token a, mask x d] at a over the
    features of rows < a, row i against the target's top-1 at row a+i, up to the first miss."""
    path = ROOT / "drafters" / "SmolLM2-135M-Instruct.dflash.gguf"
    r = bee("train-data", "--eval-head", path, "-m", smollm, "--data", dump, "--depth", "4", "--json", "-t", "2")
    assert r.returncode == 0, r.stderr
    assert "DFlash, 2 layers" in r.stderr
    res = json.loads(r.stdout.strip().splitlines()[-1])
    drafter, d2t, block = reference_drafter(path, smollm)
    man, arrays = load_dump(dump)
    depth = min(4, block - 1)
    reached, accepted, boundaries = [0] * depth, [0] * depth, 0
    for sh, a in zip(man["shards"], arrays):
        for q in sh["sequences"]:
            rows = slice(q["row0"], q["row0"] + q["n_rows"])
            tok, top1 = a["tokens"][rows], a["topk_ids"][rows, 0]
            feats = a["hidden"][rows].astype(np.float64).reshape(q["n_rows"], -1)
            n, pos = q["n_rows"], np.arange(q["n_rows"])
            for anchor in range(max(1, q["n_prompt"] - 1), n - 1):
                boundaries += 1
                logits = drafter.draft(feats[:anchor], pos[:anchor], int(tok[anchor]), anchor, min(depth, n - 1 - anchor))
                for i, row in enumerate(logits):
                    reached[i] += 1
                    if d2t[int(np.argmax(row))] != top1[anchor + i]:
                        break
                    accepted[i] += 1
    assert res["boundaries"] == boundaries > 20
    # Bee's Q8_0 activations against float64: a near-tie may fall the other way, nothing more
    assert all(abs(d["reached"] - x) <= 1 for d, x in zip(res["depths"], reached)), (res, reached)
    assert all(abs(d["accepted"] - x) <= 1 for d, x in zip(res["depths"], accepted)), (res, accepted)
    assert sum(accepted) >= 10 and accepted[0] / boundaries > 0.15, accepted  # a trained drafter, above chance


def test_eval_head_refuses_a_file_that_is_no_drafter(bee, smollm, dump):
    r = bee("train-data", "--eval-head", smollm, "-m", smollm, "--data", dump)
    assert_clean_error(r, "neither an EAGLE-3 head nor a DFlash drafter")


def test_eval_head_refuses_a_dump_without_the_drafters_layers(bee, smollm, tmp_path):
    prompts = write_prompts(tmp_path, PROMPTS[:1])
    out = tmp_path / "other_layers"
    r = bee("train-data", "-m", smollm, "--prompts", prompts, "-o", out, "-n", "4", "--temp", "0", "--layers", "1,15,27",
            "-t", "2")
    assert r.returncode == 0, r.stderr
    for drafter in ("SmolLM2-135M-Instruct.eagle3.gguf", "SmolLM2-135M-Instruct.dflash.gguf"):
        r = bee("train-data", "--eval-head", ROOT / "drafters" / drafter, "-m", smollm, "--data", out)
        assert_clean_error(r, "do not include 2", "--layers 2,15,27")
