# tests/server/test_llama_flags: a llama-server command line starts `bee serve` unchanged. Flags with a
# meaning act (--override-kv, --rope-*, --keep, --ignore-eos, --no-webui, ...), the others are reported
# once at start-up with the reason, -hf and friends fail naming -m; SIGTERM with idle keep-alive
# connections exits at once; a full slot without context shift generates n_ctx - n_prompt tokens.
import http.client
import re
import subprocess
import time

import pytest

import os

from conftest import BEE, SMOLLM, Server, free_port

# A real llama-server command line (minus --cors-origins, which is issue 23's).
LLAMA_SERVER_FLAGS = [
    "-ngl", "99", "-fa", "on", "--no-mmap", "--mlock", "-v", "--offline", "--slots", "--no-jinja", "-tb", "2",
    "--no-warmup", "--keep", "8", "--numa", "distribute", "--prio", "2", "-dev", "none", "-sm", "none", "-ts", "1",
    "-mg", "0", "-kvo", "--check-tensors", "--no-perf", "-sp", "-e", "--props", "--no-cache-idle-slots",
    "--reasoning", "auto", "--no-webui", "--sleep-idle-seconds", "3600", "--log-timestamps", "--log-colors", "off",
    "-ot", "token_embd=CPU", "--cpu-moe", "--n-cpu-moe", "0", "--swa-full", "--jinja", "-cb", "--spec-type", "none",
    "--draft-max", "16", "--draft-min", "0", "--draft-p-min", "0.75", "--yarn-orig-ctx", "0", "-dt", "0.1",
]
IGNORED = ["-ngl", "-fa", "--no-mmap", "--offline", "--no-jinja", "-tb", "--no-warmup", "--numa", "--prio", "-dev",
           "-sm", "-ts", "-mg", "-kvo", "--no-perf", "-e", "--props", "--no-cache-idle-slots",
           "--log-colors", "-ot", "--cpu-moe", "--n-cpu-moe", "--swa-full",
           "-dt"]


def offload_built():
    """Whether this bee has the Vulkan backend: then -ngl and -dev act instead of being reported."""
    r = subprocess.run([str(BEE), "serve", "--help"], capture_output=True, text=True)
    return "layers on the Vulkan device" in r.stdout + r.stderr


def completion(server, **body):
    code, _, j = server.post("/completion", {"temperature": 0, "cache_prompt": False, **body})
    assert code == 200, j
    return j


def test_a_llama_server_command_line_starts_and_serves():
    s = Server("-c", "1024", "-np", "1", *LLAMA_SERVER_FLAGS)
    try:
        r = completion(s, prompt="The capital of France is", n_predict=4)
        assert r["tokens_predicted"] == 4
        assert s.get("/slots")[0] == 200
        assert s.get("/")[0] == 404  # --no-webui
        log = s.output()
        vulkan = offload_built()
        acted = ("-ngl", "-dev", "-ot", "-kvo")  # flags a Vulkan build acts on
        for flag in [f for f in IGNORED if not (vulkan and f in acted)]:  # each reported once, with its reason
            lines = [l for l in log.splitlines() if re.search(r"bee info: (\S+/)?" + re.escape(flag) + r"(/\S+)?( \S+)?: ignored: ", l)]
            assert len(lines) == 1, (flag, lines)
        if vulkan:  # llama.cpp's -dev none: no offload
            assert "-ngl 99 with --device none: every layer runs on the CPU" in log
        else:
            assert "no GPU backend in this build: all layers run on the CPU" in log
        assert "--check-tensors:" in log and "every value finite" in log
        assert re.search(r"^\d\d:\d\d:\d\d\.\d\d\d bee ", log, re.M)  # --log-timestamps
        assert "bee debug:" in log or "bee info:" in log
    finally:
        s.stop()


@pytest.mark.parametrize("args, words", [
    (["-hf", "ggml-org/models:Q4_0"], ["-hf", "-m FILE", "no network"]),
    (["--hf-repo", "ggml-org/models", "--hf-file", "x.gguf"], ["--hf-repo", "-m FILE"]),
    (["-mu", "https://example.com/m.gguf"], ["-mu", "-m FILE"]),
    (["-m", str(SMOLLM), "--spm-infill"], ["--spm-infill", "prefix-suffix-middle"]),
    (["-m", str(SMOLLM), "--rope-scaling", "ntk"], ["'ntk'", "none, linear or yarn"]),
    (["-m", str(SMOLLM), "--override-kv", "llama.context_length=integer:5"], ["unknown TYPE 'integer'"]),
    (["-m", str(SMOLLM), "--override-kv", "llama.context_length"], ["KEY=TYPE:VALUE"]),
    (["-m", str(SMOLLM), "--override-kv", "llama.context_length=int:12x"], ["'12x' is not an integer"]),
    (["-m", str(SMOLLM), "--override-kv", "a=bool:yes"], ["true or false"]),
])
def test_refused_flags_say_why(args, words):
    r = subprocess.run([str(BEE), "serve", *args], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2, r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)


def test_override_kv_changes_what_is_loaded():
    s = Server("-c", "0", "-np", "1", "--override-kv", "llama.context_length=int:384,general.name=str:renamed")
    try:
        assert s.get("/props")[2]["default_generation_settings"]["n_ctx"] == 384
    finally:
        s.stop()
    r = subprocess.run([str(BEE), "serve", "-m", str(SMOLLM), "--port", str(free_port()), "--override-kv",
                        "llama.context_length=str:long"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "the file stores uint32, the override gives string" in r.stderr, r.stderr


def probs(server, prompt):
    r = completion(server, prompt=prompt, n_predict=6, n_probs=3)
    return [(p["id"], [round(t["logprob"], 4) for t in p["top_logprobs"]]) for p in r["completion_probabilities"]]


def test_rope_flags_change_the_logits_and_the_default_is_the_models():
    prompt = "Once upon a time, in a small village by the sea, there lived"
    runs = {}
    for name, args in {"default": [], "model-base": ["--rope-freq-base", "100000"],
                       "kv-base": ["--override-kv", "llama.rope.freq_base=float:100000"],
                       "base-10k": ["--rope-freq-base", "10000"],
                       "linear-2": ["--rope-scaling", "linear", "--rope-scale", "2"],
                       "freq-scale-half": ["--rope-freq-scale", "0.5"],
                       "yarn-4": ["--rope-scaling", "yarn", "--rope-scale", "4"],
                       "yarn-kv": ["--override-kv", "llama.rope.scaling.type=str:yarn,llama.rope.scaling.factor=float:4"],
                       "yarn-4-interp": ["--rope-scaling", "yarn", "--rope-scale", "4", "--yarn-ext-factor", "0",
                                         "--yarn-attn-factor", "1"],
                       "linear-4": ["--rope-scaling", "linear", "--rope-scale", "4"]}.items():
        s = Server("-c", "512", "-np", "1", *args)
        try:
            runs[name] = probs(s, prompt)
        finally:
            s.stop()
    assert runs["model-base"] == runs["default"] == runs["kv-base"]  # SmolLM2's rope base is 100000
    assert runs["base-10k"] != runs["default"]
    assert runs["linear-2"] != runs["default"]
    assert runs["freq-scale-half"] == runs["linear-2"]  # --rope-freq-scale 0.5 is --rope-scale 2
    assert runs["yarn-4"] == runs["yarn-kv"]  # the flags and the file's keys mean the same
    assert runs["yarn-4"] != runs["linear-4"] and runs["yarn-4"] != runs["default"]
    assert runs["yarn-4-interp"] == runs["linear-4"]  # YaRN with no extrapolation mix is linear scaling


def test_request_defaults_from_the_command_line():
    s = Server("-c", "256", "-np", "1", "--ignore-eos", "--keep", "-1", "-n", "3")
    try:
        r = completion(s, prompt="Hi")
        settings = r["generation_settings"]
        assert r["tokens_predicted"] == 3 and settings["ignore_eos"] is True and settings["n_keep"] == -1
        settings = completion(s, prompt="Hi", ignore_eos=False, n_keep=0)["generation_settings"]
        assert settings["ignore_eos"] is False and settings["n_keep"] == 0
    finally:
        s.stop()


def test_sigterm_with_idle_keep_alive_connections_exits_at_once():
    s = Server("-c", "256", "-np", "1")
    conns = []
    for _ in range(10):
        c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=10)
        c.request("GET", "/health")
        assert c.getresponse().read()  # the connection stays open (HTTP/1.1 keep-alive)
        conns.append(c)
    t0 = time.monotonic()
    s.proc.terminate()
    s.proc.wait(timeout=30)
    elapsed = time.monotonic() - t0
    for c in conns:
        c.close()
    assert s.proc.returncode == 0
    assert elapsed < 1.0, f"SIGTERM took {elapsed:.2f} s with 10 idle keep-alive connections"
    s.log.close()
    os.unlink(s.log.name)


@pytest.mark.parametrize("spec", [[], ["--spec-type", "suffix"]])
def test_a_full_slot_generates_n_ctx_minus_n_prompt_tokens(spec):
    n_ctx = 128
    s = Server("-c", str(n_ctx), "-np", "1", *spec)
    try:
        for prompt in ("1, 2, 3, 1, 2, 3, 1, 2, 3,", "Write a long story about a lighthouse keeper."):
            n_prompt = len(s.post("/tokenize", {"content": prompt, "add_special": True})[2]["tokens"])
            r = completion(s, prompt=prompt, n_predict=400, ignore_eos=True)
            assert r["truncated"] and r["stop_type"] == "limit"
            assert r["tokens_predicted"] == n_ctx - n_prompt, (prompt, n_prompt)
    finally:
        s.stop()
