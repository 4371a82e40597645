# tests/py/test_eagle3: --spec-type draft-eagle3 through `bee bench spec` and `bee run` on both real
# models, with random-weight heads written for each target (tests/reference/random_eagle3_head.py): greedy
# output equals output without speculation on 8 prompts x 128 tokens, alone and combined with a model-free
# type; -md picks the kind by the file; heads that do not fit are refused with what to do.
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAKE_HEAD = ROOT / "tests" / "reference" / "random_eagle3_head.py"


def make_head(target, out, **kw):
    args = [sys.executable, str(MAKE_HEAD), "--target", str(target), "--out", str(out)]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    subprocess.run(args, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def heads(tmp_path_factory, smollm, gemma):
    d = tmp_path_factory.mktemp("eagle3")
    return {"smollm": make_head(smollm, d / "smollm.gguf", draft_vocab=0), "gemma": make_head(gemma, d / "gemma.gguf")}


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    lines = (ROOT / "bench" / "prompts" / "open.jsonl").read_text().splitlines()[:8]
    assert len(lines) == 8
    p = tmp_path_factory.mktemp("prompts") / "open8.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("name", ["smollm", "gemma"])
def test_greedy_output_is_unchanged(bee, smollm, gemma, heads, prompts, name):
    model = smollm if name == "smollm" else gemma
    r = bee("bench", "spec", "-m", model, "-md", heads[name], "--prompts", prompts, "-n", 128, "--ignore-eos",
            "--types", "draft-eagle3;ngram-mod,draft-eagle3", "--spec-draft-n-max", 3, "--no-spec-dm-adaptive",
            "-o", "json", "-t", 2, timeout=900)
    assert r.returncode == 0, r.stderr
    res = {c["spec_type"]: c for c in json.loads(r.stdout)}
    assert set(res) == {"none", "draft-eagle3", "ngram-mod,draft-eagle3"}, res.keys()
    for cfg, c in res.items():
        assert c["same_tokens"], f"{cfg}: output differs from no speculation"
        assert all(len(o) == 128 for o in c["outputs"]), cfg
    assert res["draft-eagle3"]["draft_n"] >= 8 * 100, "the head drafted at (almost) every step"


def test_md_alone_picks_eagle3_by_the_file(bee, smollm, heads):
    base = ["run", "-m", smollm, "-p", "The capital of France is", "-n", 24, "--temp", 0, "-t", 2]
    plain = bee(*base)
    assert plain.returncode == 0, plain.stderr
    r = bee(*base, "-md", heads["smollm"], "-v")
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert "EAGLE-3 head" in r.stderr


def test_wrong_files_are_refused(bee, smollm, heads):
    base = ["run", "-m", smollm, "-p", "hi", "-n", 4]
    r = bee(*base, "-md", heads["smollm"], "--spec-type", "draft")
    assert r.returncode != 0 and "use --spec-type draft-eagle3" in r.stderr, r.stderr
    r = bee(*base, "-md", smollm, "--spec-type", "draft-eagle3")
    assert r.returncode != 0 and "use --spec-type draft" in r.stderr, r.stderr
    r = bee(*base, "-md", heads["gemma"], "--spec-type", "eagle3")
    assert r.returncode != 0 and "target_hidden_size" in r.stderr and "made for another model" in r.stderr, r.stderr
    r = bee(*base, "--spec-type", "draft-eagle3")
    assert r.returncode != 0 and "-md" in r.stderr, r.stderr


def test_trained_head_has_no_ceiling(bee, smollm, prompts):
    """The committed SmolLM2 head (drafters/) drafts chains whose depth 2 and 3 are accepted: the head's cache
    follows the target, so deeper drafts are not all wrong (the fork's '1/n_draft ceiling')."""
    head = ROOT / "drafters" / "SmolLM2-135M-Instruct.eagle3.gguf"
    r = bee("bench", "spec", "-m", smollm, "-md", head, "--prompts", prompts, "-n", 64, "--types", "draft-eagle3",
            "--spec-draft-n-max", 4, "--no-spec-dm-adaptive", "-o", "json", "-t", 2, timeout=900)
    assert r.returncode == 0, r.stderr
    res = {c["spec_type"]: c for c in json.loads(r.stdout)}
    c = res["draft-eagle3"]
    assert c["same_tokens"]
    d = c["drafters"][0]
    acc = d["acc_at_pos"]  # [i]: drafts with more than i tokens accepted
    assert d["n_accept"] >= 200, d
    assert acc[0] >= 0.1 * d["n_accept"], d  # depth 1
    assert len(acc) >= 3 and acc[1] >= 5 and acc[2] >= 1, d  # depths 2 and 3 clearly above zero
