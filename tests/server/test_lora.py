# tests/server/test_lora: LoRA adapters on SmolLM2 as llama-server has them — random adapters written with
# the gguf package in llama.cpp's adapter layout; GET/POST /lora-adapters; per-request "lora" changes the
# output, scale 0 is the plain model's output, requests with different scales batched together give what
# they give alone, the prompt cache (slot and --cache-ram) never reuses K/V computed under other scales;
# adapters that do not fit the model are refused at start-up with a message; in router mode each model has
# its own adapters and scales.
import concurrent.futures
import subprocess

import numpy as np
import pytest

import gguf
from conftest import BEE, SMOLLM, Server

PROMPT = "The three most important inventions of the last century are"
LONG_PROMPT = " ".join(["Tell me a story about a robot who learns to paint the sea at night."] * 6)


def model_shapes():
    """(n_in, n_out) of each adaptable weight of SmolLM2, read from the GGUF."""
    r = gguf.GGUFReader(str(SMOLLM))
    return {t.name: (int(t.shape[0]), int(t.shape[1])) for t in r.tensors
            if t.name.startswith("blk.") and t.name.split(".")[2] in
            ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")}


def write_adapter(path, shapes, seed, rank=4, alpha=8.0, arch="llama", break_shape=False):
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    w.add_type("adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", alpha)
    w.add_string("adapter.lora.task_name", f"random-{seed}")
    for name, (n_in, n_out) in shapes.items():
        if break_shape and name == "blk.3.attn_k.weight":
            n_out += 64
        w.add_tensor(name + ".lora_a", (rng.uniform(-1, 1, (rank, n_in)) / np.sqrt(n_in)).astype(np.float32))
        w.add_tensor(name + ".lora_b", rng.uniform(-0.3, 0.3, (n_out, rank)).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    d = tmp_path_factory.mktemp("lora")
    shapes = model_shapes()
    return write_adapter(d / "a.gguf", shapes, 1), write_adapter(d / "b.gguf", shapes, 2), d, shapes


@pytest.fixture(scope="module")
def lora_server(adapters):
    a, b, d, _ = adapters
    s = Server("-c", "4096", "-np", "4", "--lora-scaled", a, "0.5", "--lora", b, "--slot-save-path", d / "slots")
    yield s
    s.stop()


def complete(server, prompt=PROMPT, n=12, **kw):
    code, _, j = server.post("/completion", {"prompt": prompt, "n_predict": n, "temperature": 0, **kw})
    assert code == 200, j
    return j


def test_adapters_listed_and_scales_set(lora_server, adapters):
    a, b, _, _ = adapters
    code, _, j = lora_server.get("/lora-adapters")
    assert code == 200, j
    assert [(e["id"], e["path"], e["scale"]) for e in j] == [(0, str(a), 0.5), (1, str(b), 1.0)]
    assert j[0]["task_name"] == "random-1"
    try:
        code, _, r = lora_server.post("/lora-adapters", [{"id": 1, "scale": 0.25}])
        assert code == 200 and r == {"success": True}, r
        # as llama-server: adapters not listed go to scale 0
        assert [e["scale"] for e in lora_server.get("/lora-adapters")[2]] == [0.0, 0.25]
        # requests without a "lora" field run under the global scales
        assert complete(lora_server)["tokens"] == complete(lora_server, lora=[{"id": 1, "scale": 0.25}])["tokens"]
        props = lora_server.get("/props")[2]
        assert props["default_generation_settings"]["params"]["lora"] == [{"id": 0, "scale": 0.0},
                                                                           {"id": 1, "scale": 0.25}]
        for bad, words in [([{"id": 2, "scale": 1}], "no LoRA adapter with id 2"),
                           ({"id": 0, "scale": 1}, "must be an array"),
                           ([{"id": 0, "scale": "x"}], "scale")]:
            code, _, r = lora_server.post("/lora-adapters", bad)
            assert code == 400, r
            assert words in r["error"]["message"], r
    finally:
        lora_server.post("/lora-adapters", [{"id": 0, "scale": 0.5}, {"id": 1, "scale": 1.0}])


def test_scale_zero_is_the_plain_model(lora_server, server):
    base = complete(server, cache_prompt=False)
    zero = complete(lora_server, lora=[], cache_prompt=False)
    assert zero["tokens"] == base["tokens"]
    assert zero["generation_settings"]["lora"] == [{"id": 0, "scale": 0.0}, {"id": 1, "scale": 0.0}]
    on = complete(lora_server, lora=[{"id": 0, "scale": 1.0}], cache_prompt=False)
    assert on["tokens"] != base["tokens"]
    assert complete(lora_server, lora=[{"id": 1, "scale": 1.0}], cache_prompt=False)["tokens"] != on["tokens"]


def test_chat_completions_take_lora(lora_server, server):
    msgs = [{"role": "user", "content": "Name a color."}]
    def chat(s, **kw):
        code, _, j = s.post("/v1/chat/completions", {"messages": msgs, "temperature": 0, "max_tokens": 10, **kw})
        assert code == 200, j
        return j["choices"][0]["message"]["content"]
    base = chat(server)
    assert chat(lora_server, lora=[]) == base
    assert chat(lora_server, lora=[{"id": 0, "scale": 1.5}]) != base
    bad = [{"id": 7, "scale": 1}]  # the field reaches the runtime through every chat-shaped route
    for path, body in [("/v1/chat/completions", {"messages": msgs}),
                       ("/v1/messages", {"messages": msgs, "max_tokens": 4}),
                       ("/v1/responses", {"input": "Name a color."})]:
        code, _, j = lora_server.post(path, {**body, "lora": bad})
        assert code == 400 and "no LoRA adapter with id 7" in str(j), (path, j)


def test_mixed_scales_in_one_batch(lora_server):
    configs = [[], [{"id": 0, "scale": 1.0}], [{"id": 1, "scale": 0.7}], [{"id": 0, "scale": 0.0}, {"id": 1, "scale": 2}]]
    alone = [complete(lora_server, n=16, lora=c, cache_prompt=False)["tokens"] for c in configs]
    assert len({tuple(t) for t in alone}) == len(configs), "every config should give its own text"
    with concurrent.futures.ThreadPoolExecutor(len(configs)) as ex:
        together = list(ex.map(lambda c: complete(lora_server, n=16, lora=c, cache_prompt=False)["tokens"], configs))
    assert together == alone


def test_prompt_cache_not_reused_across_scales(lora_server):
    # a short prompt: under --cache-ram's 32-token minimum, so only the slot's own cache is in play
    def run(scales, **kw):
        return complete(lora_server, n=8, id_slot=2, lora=scales, **kw)
    fresh = run([{"id": 0, "scale": 1.0}], cache_prompt=False)
    run([], cache_prompt=True)  # slot 2 now caches the prompt computed at scale 0
    again = run([{"id": 0, "scale": 1.0}], cache_prompt=True)
    assert again["timings"]["cache_n"] == 0
    assert again["tokens"] == fresh["tokens"]
    same = run([{"id": 0, "scale": 1.0}], cache_prompt=True)  # same scales: the prefix is reused
    assert same["timings"]["cache_n"] > 0
    assert same["tokens"] == fresh["tokens"]


def test_ram_cache_not_reused_across_scales(lora_server):
    # slot 3's long prompt at scale 1 goes to the RAM cache when another prompt takes the slot; the long
    # prompt asked again at scale 0 must not get that K/V back, at scale 1 it does
    other = "Something else entirely, about cooking pasta."
    def run(prompt, scales):
        return complete(lora_server, prompt=prompt, n=6, id_slot=3, lora=scales)
    plain = complete(lora_server, prompt=LONG_PROMPT, n=6, id_slot=1, lora=[], cache_prompt=False)["tokens"]
    scaled = run(LONG_PROMPT, [{"id": 0, "scale": 1.0}])["tokens"]
    assert scaled != plain
    run(other, [])
    back = run(LONG_PROMPT, [])
    assert back["timings"]["cache_n"] < 10, back["timings"]
    assert back["tokens"] == plain
    run(other, [])
    restored = run(LONG_PROMPT, [{"id": 0, "scale": 1.0}])
    assert restored["timings"]["cache_n"] > 50, restored["timings"]
    assert restored["tokens"] == scaled


def test_slot_files_keep_the_scales(lora_server):
    on = [{"id": 0, "scale": 1.0}]
    plain = complete(lora_server, prompt=LONG_PROMPT, n=6, id_slot=1, lora=[], cache_prompt=False)["tokens"]
    scaled = complete(lora_server, prompt=LONG_PROMPT, n=6, id_slot=0, lora=on)["tokens"]
    def action(name):
        code, _, j = lora_server.post(f"/slots/0?action={name}", {"filename": "lora.bin"})
        assert code == 200, j
    action("save")
    action("erase")
    action("restore")
    r = complete(lora_server, prompt=LONG_PROMPT, n=6, id_slot=0, lora=on)
    assert r["timings"]["cache_n"] > 50 and r["tokens"] == scaled, r["timings"]
    action("restore")  # K/V computed at scale 1: a request at scale 0 must not read it
    assert complete(lora_server, prompt=LONG_PROMPT, n=6, id_slot=0, lora=[])["tokens"] == plain


def test_server_without_adapters_refuses_lora_ids(server):
    code, _, j = server.post("/completion", {"prompt": PROMPT, "n_predict": 1, "lora": [{"id": 0, "scale": 1.0}]})
    assert code == 400, j
    assert "--lora" in j["error"]["message"]
    assert complete(server, n=1, lora=[])["tokens"]
    assert server.get("/lora-adapters")[2] == []


def start_fails(*args):
    r = subprocess.run([str(BEE), "serve", "-m", str(SMOLLM), "--port", "0", *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0, r.stdout + r.stderr
    return r.stderr


def test_bad_adapters_refused_at_startup(adapters):
    _, _, d, shapes = adapters
    wrong_arch = write_adapter(d / "arch.gguf", shapes, 3, arch="qwen2")
    assert "adapter is for architecture 'qwen2' but the model is 'llama'" in start_fails("--lora", wrong_arch)
    bad_shape = write_adapter(d / "shape.gguf", shapes, 4, break_shape=True)
    err = start_fails("--lora", bad_shape)
    assert "blk.3.attn_k.weight" in err and "another base model" in err, err
    missing = write_adapter(d / "missing.gguf", {"blk.99.attn_q.weight": (576, 576)}, 5)
    assert "'blk.99.attn_q.weight', which the model does not have" in start_fails("--lora", missing)
    assert "not a LoRA adapter" in start_fails("--lora", SMOLLM)
    assert "expected FILE SCALE" in start_fails("--lora-scaled", d / "a.gguf")


def test_init_without_apply_and_gpu_layers(adapters):
    a, _, _, _ = adapters
    s = Server("-c", "1024", "-np", "1", "--lora", a, "--lora-init-without-apply", "-ngl", "99")
    try:
        assert [e["scale"] for e in s.get("/lora-adapters")[2]] == [0.0]
        out = s.output()
        assert "LoRA adapters run on the CPU only" in out or "no GPU backend in this build" in out, out
    finally:
        s.stop()


def test_router_adapters_per_model(adapters, tmp_path):
    """Router mode: each model has its own adapters and scales; /lora-adapters takes the model in ?model=."""
    a, _, _, _ = adapters
    ini = tmp_path / "models.ini"
    ini.write_text(f"[tuned]\nmodel = {SMOLLM}\nlora-scaled = {a}:0.5\n\n[plain]\nmodel = {SMOLLM}\n")
    s = Server("--models-preset", ini, "-c", "512", "-np", "1", model=None)
    try:
        code, _, j = s.get("/lora-adapters?model=tuned")
        assert code == 200, j
        assert [(e["id"], e["path"], e["scale"]) for e in j] == [(0, str(a), 0.5)]
        assert s.get("/lora-adapters?model=plain")[2] == []
        code, _, r = s.post("/lora-adapters?model=tuned", [{"id": 0, "scale": 0.0}])
        assert code == 200 and r == {"success": True}, r
        assert [e["scale"] for e in s.get("/lora-adapters?model=tuned")[2]] == [0.0]
        body = {"prompt": PROMPT, "n_predict": 8, "temperature": 0}
        plain = s.post("/completion", {**body, "model": "plain"})[2]["tokens"]
        assert s.post("/completion", {**body, "model": "tuned"})[2]["tokens"] == plain  # scale 0: the base model
        code, _, r = s.post("/completion", {**body, "model": "tuned", "lora": [{"id": 0, "scale": 1.0}]})
        assert code == 200 and r["tokens"] != plain, r
        assert r["generation_settings"]["lora"] == [{"id": 0, "scale": 1.0}]
        code, _, r = s.post("/completion", {**body, "model": "plain", "lora": [{"id": 0, "scale": 1.0}]})
        assert code == 400 and "this server has none" in r["error"]["message"], r
    finally:
        s.stop()
