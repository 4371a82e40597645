# tests/py/test_mtp: --spec-type draft-mtp (alias mtp) through `bee run` and `bee bench spec` on the tiny
# synthetic qwen35 (random weights with an MTP block): greedy output equals the output without speculation,
# alone and combined with ngram-mod; chosen by itself when no --spec-type is given; refused, naming the
# file, on a model without an MTP block. (Random weights: acceptance says nothing here, only exactness.)
import json

import pytest

from conftest import ROOT
from test_cli import assert_clean_error

VOCAB_DSC = ROOT / ".." / "shared" / "data" / "vocab" / "ggml-vocab-deepseek-coder.gguf"
PROMPT = "one two three one two three one two three four five six"


@pytest.fixture(scope="module")
def q35(bee, tmp_path_factory):
    out = tmp_path_factory.mktemp("mtp") / "q35.gguf"
    r = bee("gguf", "synth", out, "--shape", "qwen35-tiny", "--type", "f32", "--vocab", VOCAB_DSC, "--seed", "5")
    assert r.returncode == 0, r.stderr
    return out


def run_json(bee, model, *extra):
    r = bee("run", "-m", model, "-p", PROMPT, "-n", 32, "--temp", 0, "--json", "-t", 2, *extra)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_greedy_equals_plain(bee, q35):
    plain = run_json(bee, q35, "--spec-type", "none")
    assert "speculative" not in plain
    for types in ("draft-mtp", "mtp", "ngram-mod,draft-mtp"):
        j = run_json(bee, q35, "--spec-type", types, "--spec-draft-n-max", 4)
        assert j["tokens"] == plain["tokens"], types
        names = [d["name"] for d in j["speculative"]["drafters"]]
        assert "draft-mtp" in names, names
        assert j["timings"]["draft_n"] > 0, types
    auto = run_json(bee, q35)  # no --spec-type: the model's MTP block drafts
    assert auto["tokens"] == plain["tokens"]
    assert [d["name"] for d in auto["speculative"]["drafters"]] == ["draft-mtp"]
    assert auto["timings"]["draft_n"] > 0


def test_bench_spec_same_tokens(bee, q35, tmp_path):
    prompts = tmp_path / "p.jsonl"
    prompts.write_text("\n".join(json.dumps({"user": p}) for p in (PROMPT, "a b c d e f g", "x")) + "\n")
    r = bee("bench", "spec", "-m", q35, "--prompts", prompts, "-n", 24, "--ignore-eos", "--types",
            "draft-mtp;ngram-mod,draft-mtp", "--spec-draft-n-max", 3, "-o", "json", "-t", 2, "-r", 1)
    assert r.returncode == 0, r.stderr
    res = {c["spec_type"]: c for c in json.loads(r.stdout)}
    assert set(res) == {"none", "draft-mtp", "ngram-mod,draft-mtp"}, res.keys()
    for cfg, c in res.items():
        assert c["same_tokens"], f"{cfg}: output differs from no speculation"
    assert res["none"]["draft_n"] == 0, "none must not pick the MTP block by itself"
    assert res["draft-mtp"]["draft_n"] > 0


def test_refused_without_mtp_block(bee, smollm):
    r = bee("run", "-m", smollm, "-p", "hi", "-n", 4, "--spec-type", "mtp")
    assert_clean_error(r, "has no MTP (NextN) block")
