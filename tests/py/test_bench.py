# tests/py/test_bench: `bee bench` output shapes (json, md, csv), the bandwidth probe, and clean errors.
import json
import re
import subprocess
import sys

from conftest import ROOT
from test_cli import assert_clean_error

FIELDS = {"model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_batch", "n_ubatch",
          "type_k", "type_v", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
          "samples_ns", "samples_ts"}
SMALL = ("-p", "16", "-n", "4", "-r", "2", "-t", "2")


def test_bench_json(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL, "-o", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 2
    pp, tg = rows
    for row in rows:
        assert set(row) >= FIELDS
        assert row["avg_ts"] > 0 and row["avg_ns"] > 0
        assert len(row["samples_ns"]) == 2 and len(row["samples_ts"]) == 2
        assert row["model_type"] == "llama 135M Q4_1"
        assert row["n_threads"] == 2 and row["type_k"] == "f16"
    assert (pp["n_prompt"], pp["n_gen"]) == (16, 0) and "gbps" not in pp
    assert (tg["n_prompt"], tg["n_gen"], tg["n_depth"]) == (0, 4, 0)
    assert tg["bytes_per_token"] > 0.5 * tg["model_size"] and tg["gbps"] > 0


def test_bench_lists_and_depth(bee, smollm):
    r = bee("bench", "-m", smollm, "-p", "8,16", "-n", "2", "-d", "0,8", "-r", "1", "-t", "2", "-o", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["n_prompt"], x["n_gen"], x["n_depth"]) for x in rows] == [(8, 0, 0), (16, 0, 0), (0, 2, 0), (0, 2, 8)]
    assert rows[3]["bytes_per_token"] > rows[2]["bytes_per_token"]  # KV rows read at depth


def test_bench_md(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL)
    assert r.returncode == 0, r.stderr
    assert "| model" in r.stdout and "pp16" in r.stdout and "tg4" in r.stdout and "±" in r.stdout
    assert "CPU" in r.stdout


def test_bench_csv(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL, "-o", "csv")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3
    header = lines[0].split(",")
    assert header[:4] == ["model_filename", "model_type", "model_size", "model_n_params"]
    assert set(header) >= FIELDS | {"bytes_per_token", "gbps"}


def test_bench_bandwidth(bee):
    r = bee("bench", "--bandwidth", "--bandwidth-mb", "64", "-t", "2")
    assert r.returncode == 0, r.stderr
    assert "GB/s" in r.stdout
    rows = [line for line in r.stdout.splitlines() if line.startswith("|") and line.split("|")[1].strip().isdigit()]
    assert rows and all(float(x.split("|")[2]) > 0 for x in rows)


def test_bench_errors(bee, smollm, tmp_path):
    assert_clean_error(bee("bench", "-m", smollm, "-p", "abc"), "-p")
    assert_clean_error(bee("bench", "-m", smollm, "-o", "xml"), "-o")
    assert_clean_error(bee("bench", "-m", smollm, "-ctk", "q9"), "-ctk")
    assert_clean_error(bee("bench", "-p", "16"), "no model")
    assert_clean_error(bee("bench", "-m", tmp_path / "nope.gguf"), "nope.gguf")
    assert_clean_error(bee("bench", "-m", smollm, "-p", "0", "-n", "0"), "no tests")


VOCAB_GPT2 = ROOT / ".." / "shared" / "data" / "vocab" / "ggml-vocab-gpt-2.gguf"


def test_gguf_synth_writes_qwen2_shape(bee, tmp_path):
    out = tmp_path / "synth.gguf"
    r = bee("gguf", "synth", out, "--vocab", VOCAB_GPT2, "--layers", "1", "--seed", "7")
    assert r.returncode == 0, r.stderr
    info = bee("gguf", "info", out)
    assert info.returncode == 0, info.stderr
    text = info.stdout
    for needle in ("qwen2.embedding_length", "896", "qwen2.attention.head_count_kv", "4864", "1000000",
                   "blk.0.attn_q.bias", "blk.0.ffn_down.weight", "(151936)"):
        assert needle in text, needle
    assert not re.search(r"\soutput\.weight\s", text)  # tied to token_embd, as in Qwen2.5-0.5B
    again = tmp_path / "again.gguf"
    assert bee("gguf", "synth", again, "--vocab", VOCAB_GPT2, "--layers", "1", "--seed", "7").returncode == 0
    assert out.read_bytes() == again.read_bytes()  # seeded: the same file every time


def test_gguf_synth_errors(bee, tmp_path, smollm):
    assert_clean_error(bee("gguf", "synth", tmp_path / "a.gguf"), "--vocab")
    assert_clean_error(bee("gguf", "synth", tmp_path / "a.gguf", "--vocab", VOCAB_GPT2, "--shape", "big"), "big")
    assert_clean_error(bee("gguf", "synth", tmp_path / "a.gguf", "--vocab", VOCAB_GPT2, "--type", "q4_0"), "--type")
    assert_clean_error(bee("gguf", "synth", tmp_path / "a.gguf", "--vocab", tmp_path / "none.gguf"), "none.gguf")


VOCAB_DSC = ROOT / ".." / "shared" / "data" / "vocab" / "ggml-vocab-deepseek-coder.gguf"


def test_gguf_synth_qwen35_quantize_and_run(bee, tmp_path):
    """The hybrid qwen35 shapes: upstream's key and tensor names with one MTP block, seeded; `bee quantize` keeps
    the conv taps in f32; the quantized model runs, and greedy speculation gives the plain greedy tokens."""
    out = tmp_path / "q35.gguf"
    r = bee("gguf", "synth", out, "--shape", "qwen35-tiny", "--type", "f32", "--vocab", VOCAB_DSC, "--seed", "3")
    assert r.returncode == 0, r.stderr
    info = bee("gguf", "info", out)
    assert info.returncode == 0, info.stderr
    for needle in ("qwen35.ssm.conv_kernel", "qwen35.ssm.time_step_rank", "qwen35.rope.dimension_sections",
                   "qwen35.nextn_predict_layers", "qwen35.full_attention_interval", "blk.0.attn_qkv.weight",
                   "blk.0.ssm_conv1d.weight", "blk.0.ssm_a", "blk.0.ssm_dt.bias", "blk.3.attn_q_norm.weight",
                   "blk.4.nextn.eh_proj.weight", "blk.4.nextn.shared_head_norm.weight"):
        assert needle in info.stdout, needle
    again = tmp_path / "again.gguf"
    assert bee("gguf", "synth", again, "--shape", "qwen35-tiny", "--type", "f32", "--vocab", VOCAB_DSC,
               "--seed", "3").returncode == 0
    assert out.read_bytes() == again.read_bytes()
    q = tmp_path / "q35-q8_0.gguf"
    r = bee("quantize", out, q, "q8_0", "-t", "2")
    assert r.returncode == 0, r.stderr
    conv = [line for line in bee("gguf", "info", q).stdout.splitlines() if "blk.0.ssm_conv1d.weight" in line]
    assert conv and "f32" in conv[0].lower(), conv
    args = ["run", "-m", q, "-p", "one two three one two three one two", "-n", "24", "--temp", "0", "--json",
            "-t", "2", "-ctk", "q8_0", "-ctv", "q4_0"]
    plain = bee(*args)
    assert plain.returncode == 0, plain.stderr
    spec = bee(*args, "--spec-type", "ngram-mod,suffix,recycle")
    assert spec.returncode == 0, spec.stderr
    assert json.loads(spec.stdout)["tokens"] == json.loads(plain.stdout)["tokens"]


def test_compare_llamacpp_refuses_missing_bee(tmp_path, smollm):
    script = ROOT / "bench" / "compare-llamacpp"
    r = subprocess.run([sys.executable, str(script), "-m", str(smollm), "--bee", str(tmp_path / "no-bee")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "no-bee" in r.stderr


def test_bench_spec_cost_curve(bee, smollm):
    """--cost-curve K prints one row per k = 0..K: wall and CPU ms of a decode of 1 + k rows (each timed after
    untimed decodes of the same rows) and the ratio to k = 0."""
    r = bee("bench", "spec", "-m", smollm, "--types", "none", "-n", "1", "-r", "1", "-t", "2", "--cost-curve", "2",
            "--cost-reps", "1")
    assert r.returncode == 0, r.stderr
    rows = [line.split("|")[1:-1] for line in r.stdout.splitlines() if re.match(r"^\| \d+ \| [\d.]+ \|", line)]
    assert [int(c[0]) for c in rows] == [0, 1, 2], r.stdout
    ms = [float(c[1]) for c in rows]
    assert all(m > 0 for m in ms)
    assert float(rows[0][2]) == 1.0
    assert abs(float(rows[2][2]) - ms[2] / ms[0]) < 0.01


def test_bench_spec_configurations_with_their_own_flags(bee, smollm, tmp_path):
    """--types "TYPES FLAGS..." gives one configuration its own spec flags: drafters of different files and a DDTree
    next to a flat chain, side by side in one run, each greedy-identical to no speculation."""
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"user": "Why is the sky blue? Explain it simply."}) + "\n")
    dflash = ROOT / "drafters" / "SmolLM2-135M-Instruct.dflash.gguf"
    eagle3 = ROOT / "drafters" / "SmolLM2-135M-Instruct.eagle3.gguf"
    configs = [f"dflash -md {dflash}", f"dflash -md {dflash} --spec-branch-budget 4", f"draft-eagle3 -md {eagle3}"]
    r = bee("bench", "spec", "-m", smollm, "--prompts", prompts, "-n", "12", "-r", "1", "-t", "2", "-o", "json",
            "--types", ";".join(configs), "--no-spec-dm-adaptive", "--spec-draft-n-max", "3")
    assert r.returncode == 0, r.stderr
    res = {c["spec_type"]: c for c in json.loads(r.stdout)}
    assert list(res) == ["none"] + configs
    for c in configs:
        assert res[c]["same_tokens"] and res[c]["drafters"][0]["n_draft"] > 0, res[c]
    flat, tree = res[configs[0]]["drafters"][0], res[configs[1]]["drafters"][0]
    assert tree["gen_tokens"] > flat["gen_tokens"], (flat, tree)  # the branch budget adds tree nodes
    assert_clean_error(bee("bench", "spec", "-m", smollm, "--prompts", prompts, "-n", "2", "--types", "dflash --bogus 1"),
                       "dflash --bogus 1", "--bogus")
    assert_clean_error(bee("bench", "spec", "-m", smollm, "--prompts", prompts, "-n", "2", "--types", "dflash -t 2"),
                       "unknown option '-t'")  # only speculative-decoding flags belong to a configuration
    assert_clean_error(bee("bench", "spec", "-m", smollm, "--prompts", prompts, "-n", "2", "--types",
                           "dflash --spec-draft-n-max 2"), "-md")
