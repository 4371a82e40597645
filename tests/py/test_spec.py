"""Speculative decoding on the real models (DESIGN.md invariant 1): with greedy sampling, every drafter and
a combined type produce exactly the tokens plain decoding produces, on both models, 8 prompts x 128 tokens
(repetitive and open ones). One `bee bench spec` process per model runs the baseline once and every
configuration over the same prompts; the two models run side by side."""
import json
import pathlib
import re
import subprocess

from conftest import BEE, GEMMA, SMOLLM

PROMPTS = pathlib.Path(__file__).parent / "data" / "spec_prompts.jsonl"
MODEL_FREE = ["ngram-simple", "ngram-map-k", "ngram-map-k4v", "ngram-mod", "ngram-cache", "copyspec", "recycle",
              "suffix"]
COMBINED = "ngram-simple,suffix,recycle"


def bench_cmd(model):
    types = ";".join(MODEL_FREE + ["draft", COMBINED])
    return [str(BEE), "bench", "spec", "-m", str(model), "-md", str(model), "--prompts", str(PROMPTS),
            "--types", types, "-n", "128", "--ignore-eos", "-t", "1", "-c", "1024", "-o", "json",
            # shorter keys than the defaults so that every n-gram drafter fires on these short prompts
            "--spec-ngram-simple-size-n", "3", "--spec-ngram-simple-size-m", "12",
            "--spec-ngram-map-k-size-n", "3", "--spec-ngram-map-k-size-m", "12",
            "--spec-ngram-map-k4v-size-n", "3", "--spec-ngram-map-k4v-size-m", "12",
            "--spec-ngram-mod-n-match", "6", "--spec-ngram-mod-n-min", "2", "--spec-ngram-mod-n-max", "12",
            "--spec-draft-n-max", "6"]


def test_greedy_speculation_is_lossless_on_both_models():
    assert BEE.exists(), f"{BEE} is missing: run `make build`"
    procs = {m.name: subprocess.Popen(bench_cmd(m), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for m in (SMOLLM, GEMMA)}
    for name, p in procs.items():
        out, err = p.communicate(timeout=1500)
        assert p.returncode == 0, f"{name}: {err}"
        results = json.loads(out)
        assert results[0]["spec_type"] == "none"
        base = results[0]["outputs"]
        assert len(base) == 8 and all(len(o) == 128 for o in base), f"{name}: {[len(o) for o in base]} tokens"
        for r in results[1:]:
            for i, (got, want) in enumerate(zip(r["outputs"], base)):
                first = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), None)
                assert got == want, f"{name} {r['spec_type']}: prompt {i} differs at token {first}"
            assert r["draft_n"] > 0, f"{name} {r['spec_type']}: never drafted"
        draft = next(r for r in results if r["spec_type"] == "draft")
        assert draft["draft_n_accepted"] == draft["draft_n"], f"{name}: the model drafting for itself is always right"


def test_run_prints_statistics_and_json_fields(bee, smollm):
    r = bee("run", "-m", smollm, "-p", "one two three one two three one two three one two three", "-n", "24",
            "--temp", "0", "-t", "2", "--spec-type", "suffix,ngram-simple", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["timings"]["draft_n"] >= j["timings"]["draft_n_accepted"] >= 0
    names = [d["name"] for d in j["speculative"]["drafters"]]
    assert names == ["ngram_simple", "suffix"]  # priority order
    plain = json.loads(bee("run", "-m", smollm, "-p", "one two three one two three one two three one two three",
                           "-n", "24", "--temp", "0", "-t", "2", "--json").stdout)
    assert j["tokens"] == plain["tokens"]
    r = bee("run", "-m", smollm, "-p", "a b a b a b a b", "-n", "16", "--temp", "0", "-t", "2",
            "--spec-type", "copyspec", "--no-spec-dm-adaptive")
    assert r.returncode == 0, r.stderr
    assert "statistics copyspec: #calls(b,g,a) = 1 " in r.stderr
    assert "draft acceptance rate = " in r.stderr


def test_bad_spec_flags_are_clear_errors(bee, smollm):
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "--spec-type", "ngram-simple,eagle9")
    assert r.returncode != 0 and "unknown speculative type: 'eagle9'" in r.stderr
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "--spec-type", "draft")
    assert r.returncode != 0 and "-md" in r.stderr
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "--spec-ngram-size-n", "3")
    assert r.returncode != 0 and "removed" in r.stderr
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "--spec-type", "draft", "-md", "/nonexistent.gguf")
    assert r.returncode != 0 and "nonexistent" in r.stderr
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "--spec-type", "ngram-cache", "-lcs", "/nonexistent.bin")
    assert r.returncode != 0 and "lookup cache" in r.stderr


def test_draft_model_with_another_vocabulary_is_refused(bee, smollm, gemma):
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "4", "-md", gemma)
    assert r.returncode != 0 and "vocabulary" in r.stderr, r.stderr


def test_suffix_tree_mode_is_lossless_on_both_models():
    """--spec-suffix-tree drafts best-first trees over the continuations seen; fixed depth so that every
    step drafts (kept short: one configuration, 96 tokens)."""
    def cmd(model):
        return [str(BEE), "bench", "spec", "-m", str(model), "--prompts", str(PROMPTS), "--types",
                "suffix", "-n", "96", "--ignore-eos", "-t", "1", "-c", "1024", "-o", "json",
                "--spec-suffix-tree", "12", "--spec-draft-n-max", "6", "--no-spec-dm-adaptive"]
    procs = {m.name: subprocess.Popen(cmd(m), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for m in (SMOLLM, GEMMA)}
    for name, p in procs.items():
        out, err = p.communicate(timeout=900)
        assert p.returncode == 0, f"{name}: {err}"
        results = json.loads(out)
        base = results[0]["outputs"]
        for r in results[1:]:
            assert r["outputs"] == base, f"{name}: tree drafts changed the greedy output"
            assert r["draft_n_accepted"] > 0, f"{name}: nothing accepted"


def test_verbose_run_logs_each_draft(bee, smollm):
    # -v logs every draft as token ids after the position of the last sampled token (to compare drafts
    # with another engine from the same context)
    args = ("run", "-m", smollm, "-p", "a b a b a b a b", "-n", "16", "--temp", "0", "-t", "2",
            "--spec-type", "copyspec", "--no-spec-dm-adaptive", "--json")
    j = json.loads(bee(*args).stdout)
    r = bee(*args[:-1], "-v")
    assert r.returncode == 0, r.stderr
    drafts = re.findall(r"slot 0: draft after pos (\d+):((?: \d+)+)", r.stderr)
    assert drafts and all(int(p) >= len(j["prompt_tokens"]) for p, _ in drafts)
    assert sum(len(t.split()) for _, t in drafts) == j["timings"]["draft_n"]
