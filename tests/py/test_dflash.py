# tests/py/test_dflash: --spec-type dflash through `bee bench spec` and `bee run` on both real models, with
# random-weight DFlash drafters written for each target (tests/reference/random_dflash_drafter.py; llama.cpp's
# dialect for SmolLM2, the fork's with a compact vocabulary for Gemma): greedy output equals output without
# speculation on 8 prompts x 128 tokens, flat alone and combined with a model-free type, and as DDTree trees;
# -md picks the kind by the file; the --tree-budget conversion; what cannot apply is refused.
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MAKE_DRAFTER = ROOT / "tests" / "reference" / "random_dflash_drafter.py"


def make_drafter(target, out, **kw):
    args = [sys.executable, str(MAKE_DRAFTER), "--target", str(target), "--out", str(out)]
    for k, v in kw.items():
        args += [f"--{k.replace('_', '-')}", str(v)]
    subprocess.run(args, check=True, capture_output=True)
    return out


@pytest.fixture(scope="module")
def drafters(tmp_path_factory, smollm, gemma):
    d = tmp_path_factory.mktemp("dflash")
    return {"smollm": make_drafter(smollm, d / "smollm.gguf"),
            "gemma": make_drafter(gemma, d / "gemma.gguf", dialect="dflash-draft", draft_vocab=512)}


@pytest.fixture(scope="module")
def prompts(tmp_path_factory):
    lines = (ROOT / "bench" / "prompts" / "open.jsonl").read_text().splitlines()[:8]
    assert len(lines) == 8
    p = tmp_path_factory.mktemp("prompts") / "open8.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p


def bench(bee, model, drafter, prompts, types, *extra):
    r = bee("bench", "spec", "-m", model, "-md", drafter, "--prompts", prompts, "-n", 128, "--ignore-eos",
            "--types", types, "--spec-draft-n-max", 3, "--no-spec-dm-adaptive", "-o", "json", "-t", 2, *extra,
            timeout=900)
    assert r.returncode == 0, r.stderr
    return {c["spec_type"]: c for c in json.loads(r.stdout)}


def check_same(res, configs):
    assert set(res) == {"none", *configs}, res.keys()
    for cfg, c in res.items():
        assert c["same_tokens"], f"{cfg}: output differs from no speculation"
        assert all(len(o) == 128 for o in c["outputs"]), cfg


@pytest.mark.parametrize("name", ["smollm", "gemma"])
def test_greedy_output_is_unchanged_flat(bee, smollm, gemma, drafters, prompts, name):
    model = smollm if name == "smollm" else gemma
    res = bench(bee, model, drafters[name], prompts, "dflash;ngram-mod,dflash")
    check_same(res, ["dflash", "ngram-mod,dflash"])
    assert res["dflash"]["draft_n"] >= 8 * 100, "the drafter drafted at (almost) every step"


def test_greedy_output_is_unchanged_ddtree(bee, smollm, drafters, prompts):
    res = bench(bee, smollm, drafters["smollm"], prompts, "dflash", "--spec-branch-budget", 4, "--spec-draft-top-k", 3)
    check_same(res, ["dflash"])
    assert res["dflash"]["draft_n"] >= 8 * 100 * 2, "trees: more nodes than the chain's"


def test_md_alone_picks_dflash_by_the_file(bee, smollm, drafters):
    base = ["run", "-m", smollm, "-p", "The capital of France is", "-n", 24, "--temp", 0, "-t", 2]
    plain = bee(*base)
    assert plain.returncode == 0, plain.stderr
    r = bee(*base, "-md", drafters["smollm"], "-v")
    assert r.returncode == 0, r.stderr
    assert r.stdout == plain.stdout
    assert "DFlash drafter" in r.stderr and "flat" in r.stderr, r.stderr


def test_tree_budget_conversion(bee, smollm, drafters):
    base = ["run", "-m", smollm, "-p", "hi", "-n", 2, "--temp", 0, "-t", 2, "-md", drafters["smollm"], "-v",
            "--spec-draft-n-max", 4]
    r = bee(*base, "--tree-budget", 20)  # legacy total: branches = 20 - 4
    assert r.returncode == 0 and "DDTree, branch budget 16, top-k 4" in r.stderr, r.stderr
    r = bee(*base, "--tree-budget", 3)  # smaller than the main path: flat
    assert r.returncode == 0 and ", flat" in r.stderr, r.stderr
    r = bee(*base, "--tree-budget", 20, "--spec-branch-budget", 5, "--spec-draft-top-k", 2)
    assert r.returncode == 0 and "DDTree, branch budget 5, top-k 2" in r.stderr, r.stderr
    assert "--tree-budget 20 is ignored: --spec-branch-budget 5 is given" in r.stderr, r.stderr


def test_what_cannot_apply_is_refused(bee, smollm, gemma, drafters):
    base = ["run", "-m", smollm, "-p", "hi", "-n", 4]
    r = bee(*base, "-md", drafters["smollm"], "--spec-type", "draft")
    assert r.returncode != 0 and "use --spec-type dflash" in r.stderr, r.stderr
    r = bee(*base, "-md", drafters["gemma"], "--spec-type", "draft-eagle3")
    assert r.returncode != 0 and "is a 'dflash-draft' file" in r.stderr, r.stderr
    r = bee(*base, "-md", smollm, "--spec-type", "draft-dflash")
    assert r.returncode != 0 and "use --spec-type draft" in r.stderr, r.stderr
    r = bee(*base, "-md", drafters["gemma"])
    assert r.returncode != 0 and "use the drafter trained for this target" in r.stderr, r.stderr
    r = bee(*base, "--spec-type", "dflash")
    assert r.returncode != 0 and "-md" in r.stderr, r.stderr
    r = bee(*base, "-md", drafters["smollm"], "--spec-draft-temp", 0.7, "--spec-branch-budget", 4)
    assert r.returncode != 0 and "samples chains, which cannot be DDTree trees" in r.stderr, r.stderr


def test_sampled_drafting_runs(bee, smollm, drafters):
    """--spec-draft-temp auto at --temp 0.8: chains sampled from the block's marginals, verified by exact
    rejection sampling (the distribution itself is checked by test_dflash_drafter's chi-square)."""
    r = bee("run", "-m", smollm, "-md", drafters["smollm"], "-p", "Once upon a time", "-n", 48, "--temp", 0.8,
            "--seed", 7, "--spec-draft-temp", "auto", "--no-spec-dm-adaptive", "--spec-draft-n-max", 4, "--json",
            "-t", 2)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["timings"]["draft_n"] >= 40, j["timings"]
