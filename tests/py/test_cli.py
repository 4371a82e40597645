# tests/py/test_cli: `bee` as a user runs it — output shapes, and one clear error (never a crash) on bad input.
import json

import pytest


def assert_clean_error(r, *needles):
    """Non-zero exit by return (not a signal), one 'error:' line naming the problem."""
    assert r.returncode in (1, 2), f"exit {r.returncode}, stderr: {r.stderr}"
    assert "error:" in r.stderr, r.stderr
    for n in needles:
        assert n in r.stderr, f"{n!r} not in {r.stderr!r}"


def test_run_json_shape(bee, smollm):
    r = bee("run", "-m", smollm, "-p", "The capital of France is", "-n", "8", "--temp", "0", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert set(j) >= {"prompt_tokens", "tokens", "text", "timings"}
    assert len(j["tokens"]) == 8
    t = j["timings"]
    for k in ("prompt_n", "prompt_ms", "prompt_per_second", "predicted_n", "predicted_ms", "predicted_per_second"):
        assert k in t
    assert t["prompt_n"] == len(j["prompt_tokens"])
    assert t["predicted_n"] == 8
    assert "Paris" in j["text"]


def test_run_text_and_speed(bee, smollm):
    r = bee("run", "-m", smollm, "-p", "The capital of France is", "-n", "8", "--temp", "0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("The capital of France is")
    assert "tokens/s" in r.stderr


def test_seed_reproducible(bee, smollm):
    args = ("run", "-m", smollm, "-p", "Once upon a time", "-n", "16", "--temp", "1.0", "-s", "42", "--json")
    a, b = bee(*args), bee(*args)
    assert a.returncode == 0 and b.returncode == 0
    assert json.loads(a.stdout)["tokens"] == json.loads(b.stdout)["tokens"]


def test_tokenize(bee, smollm):
    r = bee("tokenize", "-m", smollm, "-p", "Hello world")
    assert r.returncode == 0, r.stderr
    ids = json.loads(r.stdout)
    assert isinstance(ids, list) and all(isinstance(i, int) for i in ids) and ids


def test_gguf_info(bee, gemma):
    r = bee("gguf", "info", gemma)
    assert r.returncode == 0, r.stderr
    assert "gemma3" in r.stdout and "token_embd.weight" in r.stdout


def test_missing_model(bee, tmp_path):
    assert_clean_error(bee("run", "-m", tmp_path / "nope.gguf", "-p", "x"), "nope.gguf")


def test_truncated_model(bee, smollm, tmp_path):
    bad = tmp_path / "trunc.gguf"
    bad.write_bytes(smollm.read_bytes()[: 1 << 20])
    assert_clean_error(bee("run", "-m", bad, "-p", "x", "-n", "1"), "trunc.gguf")


def test_not_a_gguf(bee, tmp_path):
    bad = tmp_path / "text.gguf"
    bad.write_text("hello, I am not a model\n" * 10)
    assert_clean_error(bee("run", "-m", bad, "-p", "x"), "text.gguf")


def test_run_dry_and_sampler_order(bee, smollm):
    def run(*extra):
        r = bee("run", "-m", smollm, "-p", "1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3,", "-n", "8", "--temp", "0", "--json",
                *extra)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)["text"]
    plain = run()
    assert plain.startswith(" 1, 2, 3")
    assert not run("--dry-multiplier", "0.8").startswith(" 1, 2, 3")
    assert run("--dry-multiplier", "0.8", "--dry-sequence-breaker", ",") == plain  # a comma ends every repeat
    assert not run("--dry-multiplier", "0.8", "--dry-sequence-breaker", "none").startswith(" 1, 2, 3")  # no breakers
    # top-k 1 first: sampling at temperature 1 is greedy; --sampling-seq spells the same order
    sampled = ("--temp", "1", "--top-k", "1", "--top-p", "1", "--min-p", "0", "-s", "7")
    assert run(*sampled, "--samplers", "top_k;temperature") == plain
    assert run(*sampled, "--sampling-seq", "kt") == plain
    assert run("--temp", "1", "-s", "7", "--mirostat", "1")  # Mirostat 1 runs
    assert_clean_error(bee("run", "-m", smollm, "-p", "x", "--samplers", "top_k;bogus"), "bogus")
    assert_clean_error(bee("run", "-m", smollm, "-p", "x", "--sampling-seq", "kq"), "q")
    assert_clean_error(bee("run", "-m", smollm, "-p", "x", "--dry-base", "0.5"), "--dry-base")


@pytest.mark.parametrize("flag,value", [("-n", "abc"), ("--temp", "-1"), ("-c", "x"), ("--top-p", "2"),
                                        ("-ctk", "q9_9"), ("-t", "-3"), ("--mirostat", "3")])
def test_invalid_flag_value(bee, smollm, flag, value):
    assert_clean_error(bee("run", "-m", smollm, "-p", "x", flag, value), flag)


def test_unknown_flag(bee, smollm):
    assert_clean_error(bee("run", "-m", smollm, "--frobnicate"), "--frobnicate")


def test_unknown_command(bee):
    r = bee("frobnicate")
    assert r.returncode == 2 and "unknown command" in r.stderr


def test_prompt_longer_than_context(bee, smollm):
    assert_clean_error(bee("run", "-m", smollm, "-c", "16", "-p", "word " * 100, "-n", "4"), "context")


def test_generation_stops_at_context(bee, smollm):
    r = bee("run", "-m", smollm, "-c", "32", "-p", "Count: 1, 2, 3,", "-n", "100", "--temp", "0", "--json")
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert len(j["prompt_tokens"]) + len(j["tokens"]) <= 33


def test_missing_prompt_file(bee, smollm, tmp_path):
    assert_clean_error(bee("run", "-m", smollm, "-f", tmp_path / "prompt.txt", "-n", "1"), "prompt.txt")
    assert_clean_error(bee("tokenize", "-m", smollm, "-f", tmp_path / "prompt.txt"), "prompt.txt")


def test_prompt_file(bee, smollm, tmp_path):
    f = tmp_path / "prompt.txt"
    f.write_text("The capital of France is")
    a = bee("run", "-m", smollm, "-f", f, "-n", "4", "--temp", "0", "--json")
    b = bee("run", "-m", smollm, "-p", "The capital of France is", "-n", "4", "--temp", "0", "--json")
    assert a.returncode == 0 and b.returncode == 0
    assert json.loads(a.stdout)["tokens"] == json.loads(b.stdout)["tokens"]
