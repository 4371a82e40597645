# tests/py/test_llama_cli_flags: `bee run` and `bee bench` take llama-cli / llama-bench command lines: flags
# with a meaning act (--ignore-eos, -e, -sp, --override-kv, --rope-freq-base), the rest are reported once
# with the reason, network flags fail naming -m.
import json


def offload_built(bee):
    """Whether this bee has the Vulkan backend: then -ngl acts (on a real GPU) instead of being reported."""
    r = bee("run", "--help")
    return "layers on the Vulkan device" in r.stdout + r.stderr


def run_json(bee, smollm, *args):
    r = bee("run", "-m", smollm, "--json", "--temp", "0", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def test_run_takes_a_llama_cli_command_line(bee, smollm):
    out, err = run_json(bee, smollm, "-p", "The capital of France is", "-n", "4", "-ngl", "99", "-fa", "on",
                        "--no-mmap", "-tb", "2", "--no-warmup", "--keep", "8", "--numa", "distribute", "-dev", "none",
                        "--log-colors", "off", "--temperature", "0", "--typical-p", "1")
    assert len(out["tokens"]) == 4
    # --json keeps the log at warn level; the same line without --json reports each ignored flag once
    r = bee("run", "-m", smollm, "-p", "Hi", "-n", "1", "-ngl", "99", "-ngl", "98", "-fa", "on", "--temp", "0")
    assert r.returncode == 0, r.stderr
    if offload_built(bee):  # the last -ngl wins; with no GPU (at most llvmpipe, unnamed) the CPU runs every layer
        assert r.stderr.count("every layer runs on the CPU") == 1
    else:
        assert r.stderr.count("-ngl/--gpu-layers/--n-gpu-layers 99: ignored: no GPU backend in this build") == 1
    assert r.stderr.count("-fa/--flash-attn on: ignored: attention is always fused") == 1


def test_run_ignore_eos_escape_and_special(bee, smollm):
    base, _ = run_json(bee, smollm, "-p", "a\\nb", "-n", "2")
    escaped, _ = run_json(bee, smollm, "-p", "a\\nb", "-n", "2", "-e")
    assert 198 in escaped["prompt_tokens"] and 198 not in base["prompt_tokens"]  # "\\n" became a newline (id 198)
    chat = "<|im_start|>user\nWhat is 2+2? Answer with one number.<|im_end|>\n<|im_start|>assistant\n"
    plain, _ = run_json(bee, smollm, "-p", chat, "-n", "64")
    assert len(plain["tokens"]) < 64  # the reply ends with <|im_end|>
    forced, _ = run_json(bee, smollm, "-p", chat, "-n", "64", "--ignore-eos")
    assert len(forced["tokens"]) == 64 and forced["tokens"][:len(plain["tokens"])] == plain["tokens"]
    # a control token (<|im_start|>, id 1, forced by a logit bias) is printed only with -sp
    hidden, _ = run_json(bee, smollm, "-p", chat, "-n", "2", "-l", "1+100")
    shown, _ = run_json(bee, smollm, "-p", chat, "-n", "2", "-l", "1+100", "-sp")
    assert hidden["tokens"] == shown["tokens"] == [1, 1]
    assert hidden["text"] == "" and shown["text"] == "<|im_start|><|im_start|>"


def test_run_rope_and_override_kv(bee, smollm):
    prompt = ["-p", "Once upon a time, in a small village by the sea, there lived", "-n", "12"]
    default, _ = run_json(bee, smollm, *prompt)
    same, _ = run_json(bee, smollm, *prompt, "--override-kv", "llama.rope.freq_base=float:100000")
    other, _ = run_json(bee, smollm, *prompt, "--rope-freq-base", "500")
    assert same["tokens"] == default["tokens"] and other["tokens"] != default["tokens"]


def test_network_flags_name_dash_m(bee, smollm):
    for args in (["-hf", "ggml-org/x"], ["--hf-file", "x.gguf"], ["--fim-qwen-7b-default"]):
        r = bee("run", *args, "-p", "x")
        assert r.returncode != 0 and "-m FILE" in r.stderr, r.stderr


def test_bench_takes_llama_bench_flags(bee, smollm):
    r = bee("bench", "-m", smollm, "-p", "8", "-n", "2", "-r", "1", "-ngl", "99", "-fa", "1", "-mmp", "0",
            "-nkvo", "0", "--numa", "distribute", "-o", "json")
    assert r.returncode == 0, r.stderr
    assert ("every layer runs on the CPU" if offload_built(bee) else "no GPU backend") in r.stderr
    assert len(json.loads(r.stdout)) == 2


def test_a_commands_own_flag_wins_over_a_compat_row(bee, smollm, tmp_path):
    # bench spec's -r is --repetitions; llama-cli's -r (--reverse-prompt) stays a reported no-op for `bee run`
    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"user": "Say hi."}) + "\n")
    r = bee("bench", "spec", "-m", smollm, "--prompts", str(prompts), "-n", "2", "--types", "none", "-r", "2", "-t", "1")
    assert r.returncode == 0, r.stderr
    assert "reverse-prompt" not in r.stderr
    assert "rep 2:" in r.stdout + r.stderr and "rep 3:" not in r.stdout + r.stderr
    run = bee("run", "-m", smollm, "-p", "Hi", "-n", "1", "--temp", "0", "-r", "User:")
    assert run.returncode == 0 and "-r/--reverse-prompt User:: ignored" in run.stderr
