# tests/server/test_spec: speculative decoding inside the server's continuous batch. Greedy output with
# each drafter (4 slots drafting in the same steps) equals the output of the same server without
# speculation, token for token; stop strings and n_predict cut an accepted draft exactly; per-request
# speculative.* overrides work and bad ones are refused; streaming, sampling, metrics, /props, /slots.
import concurrent.futures
import json
import time

import openai
import pytest

from conftest import GEMMA, Server, http

PROMPTS = [
    "the cat sat on the mat. " * 6,
    "def add(a, b):\n    return a + b\n\n" * 3 + "def add(a, b):\n",
    "Monday, Tuesday, Wednesday, Thursday, Friday, Saturday, Sunday, Monday, Tuesday, Wednesday,",
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
]
N = 64
ARGS = ["-c", "4096", "-np", "4", "--metrics"]
# The n-gram drafters' default key (12 tokens) and draft (48) are long for 64-token answers: shorter ones.
SHORT_NGRAMS = ["--spec-ngram-simple-size-n", "4", "--spec-ngram-simple-size-m", "16",
                "--spec-ngram-map-k-size-n", "4", "--spec-ngram-map-k-size-m", "16"]


def complete(server, prompt, n=N, **extra):
    status, _, body = server.post("/completion", {"prompt": prompt, "n_predict": n, "temperature": 0, **extra})
    assert status == 200, body
    return body


def run_all(server, prompts=PROMPTS, **extra):
    """The prompts at once: the 4 slots generate (and draft) in the same batches."""
    with concurrent.futures.ThreadPoolExecutor(len(prompts)) as ex:
        return list(ex.map(lambda p: complete(server, p, **extra), prompts))


@pytest.fixture(scope="module")
def plain():
    s = Server(*ARGS)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def reference(plain):
    return run_all(plain)


@pytest.fixture(scope="module")
def suffix_server():
    s = Server(*ARGS, "--spec-type", "suffix,ngram-simple", *SHORT_NGRAMS)
    yield s
    s.stop()


@pytest.mark.parametrize("types", ["ngram-simple", "suffix", "copyspec", "recycle", "ngram-mod", "ngram-map-k,copyspec"])
def test_greedy_equals_no_speculation(types, reference):
    s = Server(*ARGS, "--spec-type", types, *SHORT_NGRAMS)
    try:
        got = run_all(s)
    finally:
        s.stop()
    for g, r in zip(got, reference):
        assert g["tokens"] == r["tokens"] and g["content"] == r["content"]
        assert g["stop_type"] == r["stop_type"] and g["tokens_predicted"] == r["tokens_predicted"]
    # some prompt drafted (with 4 busy slots the depth controller drafts only where drafts pay for the rows
    # they add to the shared step, so not necessarily the first prompt)
    drafted = sum(g["timings"].get("draft_n", 0) for g in got)
    accepted = sum(g["timings"].get("draft_n_accepted", 0) for g in got)
    assert drafted > 0 and 0 < accepted <= drafted, [g["timings"] for g in got]


def test_stop_string_and_n_predict_inside_a_draft(suffix_server, plain, reference):
    prompt = PROMPTS[0]
    ref_text = reference[0]["content"]
    stop = "mat. The cat sat on the mat. The cat"  # ends inside the 3rd copy, drafted from the first two
    assert ref_text.count("The cat") >= 4
    for extra in ({"stop": [stop]}, {"n_predict": 21}, {"n_predict": 38}):
        want = complete(plain, prompt, **extra)
        got = complete(suffix_server, prompt, **extra)
        assert got["content"] == want["content"] and got["tokens"] == want["tokens"], extra
        assert got["stop_type"] == want["stop_type"] and got["stopping_word"] == want["stopping_word"]
        assert got["timings"]["draft_n_accepted"] > 0
        # Cells of accepted draft tokens after the cut were removed: the slot holds the prompt and every
        # generated token but the last (never decoded), as without speculation.
        for _ in range(100):  # /slots is published after the step that answered: wait for it
            slot = next(x for x in suffix_server.get("/slots")[2] if x["id"] == got["id_slot"])
            if not slot["is_processing"]:
                break
            time.sleep(0.02)
        assert slot["n_cached_tokens"] == got["tokens_evaluated"] + got["tokens_predicted"] - 1
        # The slot's prompt cache must match its KV cache after the cut: continuing from the same slot
        # with the cached prefix gives the reference output again.
        again = complete(suffix_server, prompt, id_slot=got["id_slot"])
        assert again["tokens"] == reference[0]["tokens"] and again["timings"]["cache_n"] > 0


def test_request_overrides(suffix_server, reference):
    prompt = PROMPTS[0]
    for spec in ({"speculative.n_max": 0}, {"speculative": {"n_max": 0}}, {"speculative.type": "none"}):
        r = complete(suffix_server, prompt, **spec)
        assert r["tokens"] == reference[0]["tokens"] and "draft_n" not in r["timings"], spec
    for spec in ({"speculative.n_max": 2}, {"speculative": {"type": "ngram-simple", "n_min": 1}},
                 {"speculative.type": ["suffix"], "speculative.n_min": 3, "speculative.p_min": 0.5}):
        r = complete(suffix_server, prompt, **spec)
        assert r["tokens"] == reference[0]["tokens"] and r["timings"]["draft_n_accepted"] > 0, spec
    # n_max 2: at most 2 draft tokens per step
    r = complete(suffix_server, prompt, **{"speculative.n_max": 2})
    assert r["timings"]["draft_n"] <= 2 * r["tokens_predicted"]


@pytest.mark.parametrize("spec,msg", [
    ({"speculative.n_max": -1}, "speculative.n_max"),
    ({"speculative.n_min": "x"}, "speculative.n_min"),
    ({"speculative.p_min": 1.5}, "speculative.p_min"),
    ({"speculative": 3}, "'speculative' must be an object"),
    ({"speculative.type": "bogus"}, "unknown speculative type"),
    ({"speculative.type": 7}, "speculative.type"),
    ({"speculative": {"type": "recycle"}}, "not enabled on this server"),
])
def test_bad_override_is_400(suffix_server, spec, msg):
    status, _, body = suffix_server.post("/completion", {"prompt": "hi", "n_predict": 2, **spec})
    assert status == 400 and msg in body["error"]["message"], body


def test_streaming_chat_same_text(suffix_server, plain):
    msgs = [{"role": "user", "content": "Repeat exactly, three times: red, green, blue, yellow, purple."}]
    want = plain.post("/v1/chat/completions", {"messages": msgs, "max_tokens": 48, "temperature": 0})[2]
    client = openai.OpenAI(base_url=suffix_server.base + "/v1", api_key="unused", max_retries=0)
    chunks = list(client.chat.completions.create(model="x", messages=msgs, max_tokens=48, temperature=0, stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == want["choices"][0]["message"]["content"]
    timings = chunks[-1].model_extra["timings"]
    assert timings["draft_n"] > 0 and timings["predicted_n"] == want["usage"]["completion_tokens"]


def test_sampled_request_completes(suffix_server):
    body = {"prompt": PROMPTS[0], "n_predict": 48, "temperature": 0.8, "seed": 42, "ignore_eos": True}
    a = suffix_server.post("/completion", body)[2]
    b = suffix_server.post("/completion", body)[2]
    assert a["tokens_predicted"] == 48 and len(a["tokens"]) == 48 and a["stop_type"] == "limit"
    assert a["timings"]["draft_n"] > 0
    assert a["tokens"] == b["tokens"]  # same seed, same drafts from a warm slot: same sample


def test_metrics_props_slots(suffix_server):
    complete(suffix_server, PROMPTS[2])
    text = http("GET", suffix_server.url("/metrics"))[2]
    values = {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l.startswith("llamacpp:n_drafted")}
    assert values["llamacpp:n_drafted_total"] >= values["llamacpp:n_drafted_accepted_total"] > 0
    params = suffix_server.get("/props")[2]["default_generation_settings"]["params"]
    assert params["speculative.type"] == "ngram-simple,suffix" and params["speculative.n_max"] == 16
    # note: the response reaches the client before the scheduler releases the slot, so poll briefly
    deadline = time.time() + 5
    while True:
        slots = suffix_server.get("/slots")[2]
        if all(not s["is_processing"] for s in slots) or time.time() > deadline:
            break
        time.sleep(0.05)
    assert all(s["speculative.type"] == "none" and not s["speculative"] for s in slots)  # idle slots


def test_gemma_greedy_equals_no_speculation():
    prompts = PROMPTS[:2]
    outs = []
    for extra in ([], ["--spec-type", "suffix,copyspec"]):
        s = Server("-c", "2048", "-np", "2", *extra, model=GEMMA)
        try:
            outs.append(run_all(s, prompts, n=48))
        finally:
            s.stop()
    for g, r in zip(outs[1], outs[0]):
        assert g["tokens"] == r["tokens"] and g["content"] == r["content"]
    assert sum(o["timings"]["draft_n_accepted"] for o in outs[1]) > 0


def test_context_overflow_and_unified_kv():
    """Generation that fills the slot's context stops at the same token (truncated) with speculation, with
    split and unified KV caches."""
    body = {"prompt": PROMPTS[0], "n_predict": 400, "temperature": 0, "ignore_eos": True}
    for cache in (["-c", "192", "-np", "2"], ["-c", "128", "-np", "2", "-kvu"]):
        outs = []
        for extra in ([], ["--spec-type", "suffix,recycle"]):
            s = Server(*cache, *extra)
            try:
                outs.append([s.post("/completion", body)[2] for _ in range(2)])
            finally:
                s.stop()
        for g, r in zip(outs[1], outs[0]):
            assert r["truncated"] and g["truncated"] and g["tokens"] == r["tokens"], cache
        assert outs[1][0]["timings"]["draft_n_accepted"] > 0


def test_disconnect_frees_a_drafting_slot(suffix_server, reference):
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", suffix_server.port, timeout=60)
    conn.request("POST", "/completion", json.dumps({"prompt": PROMPTS[0], "n_predict": 2000, "ignore_eos": True,
                                                    "temperature": 0, "stream": True, "id_slot": 0}))
    r = conn.getresponse()
    assert r.status == 200 and r.read1(4096).startswith(b"data: ")
    conn.close()  # the client goes away mid-generation
    after = complete(suffix_server, PROMPTS[0], id_slot=0)  # waits for slot 0 to be freed
    assert after["tokens"] == reference[0]["tokens"] and after["timings"]["cache_n"] > 0


def test_draft_model_per_slot(reference):
    """-md: every slot drafts with its own engine on the draft model (here the target itself, so every
    greedy draft token is accepted)."""
    from conftest import SMOLLM
    s = Server(*ARGS, "-md", SMOLLM, "--spec-draft-n-max", "8")
    try:
        got = run_all(s, PROMPTS[:2])
        # speculative.p_min is the draft model's confidence floor for one request: no top probability
        # of the open-ended story prompt reaches 1.0 (a 49152-token softmax), so nothing is drafted.
        floor = complete(s, PROMPTS[3], **{"speculative.p_min": 1.0})
    finally:
        s.stop()
    for g, r in zip(got, reference[:2]):
        assert g["tokens"] == r["tokens"]
    t = got[0]["timings"]
    assert t["draft_n"] > 0 and t["draft_n_accepted"] == t["draft_n"]
    assert floor["tokens"] == reference[3]["tokens"]
    assert floor["timings"].get("draft_n", 0) == 0


def test_reasoning_budget_inside_a_draft():
    """The reasoning budget forcing </think> after an accepted draft token drops the rest of the draft
    (its cells too: the forced tokens are decoded right after) and the output is that without drafts."""
    from test_reasoning import THINK_TEMPLATE
    cases = [(PROMPTS[0], 30), (PROMPTS[1], 30), (PROMPTS[2], 24)]  # copied text: drafts straddle the budget
    body = lambda p, n: {"messages": [{"role": "user", "content": p}], "max_tokens": n + 10, "temperature": 0,
                         "thinking_budget_tokens": n, "cache_prompt": False}
    outs = []
    for extra in ([], ["--spec-type", "suffix", "--no-spec-dm-adaptive"]):
        s = Server("-c", "1024", "-np", "1", "--chat-template", THINK_TEMPLATE, *extra)
        try:
            outs.append([s.post("/v1/chat/completions", body(p, n)) for p, n in cases])
        finally:
            s.stop()
    for (_, n), want, got in zip(cases, *outs):
        assert got[0] == 200, got  # a stale draft cell would make the forced token's decode fail
        assert got[2]["choices"][0]["message"] == want[2]["choices"][0]["message"]
        assert got[2]["usage"]["completion_tokens_details"]["reasoning_tokens"] == n
    assert sum(g[2]["timings"].get("draft_n_accepted", 0) for g in outs[1]) > 0


@pytest.fixture(scope="module")
def eagle3_head(tmp_path_factory):
    """A random-weight EAGLE-3 head for SmolLM2 (it exercises drafting and rollback, not acceptance)."""
    import subprocess
    import sys
    from conftest import ROOT, SMOLLM
    out = tmp_path_factory.mktemp("eagle3") / "head.gguf"
    subprocess.run([sys.executable, str(ROOT / "tests" / "reference" / "random_eagle3_head.py"), "--target",
                    str(SMOLLM), "--out", str(out)], check=True)
    return out


@pytest.mark.parametrize("types", ["draft-eagle3", "ngram-mod,draft-eagle3"])
def test_eagle3_four_slots_greedy_equals_no_speculation(types, plain, eagle3_head):
    want = run_all(plain, n=128)
    s = Server(*ARGS, "-md", eagle3_head, "--spec-type", types, "--spec-draft-n-max", "3", "--no-spec-dm-adaptive")
    try:
        got = run_all(s, n=128)
    finally:
        s.stop()
    for g, r in zip(got, want):
        assert g["tokens"] == r["tokens"] and g["content"] == r["content"]
    long = [g for g in got if g["tokens_predicted"] >= 64]  # (the story prompt ends at once)
    assert len(long) >= 3
    for g in long:  # every slot drafted with the head, each from its own features
        assert g["timings"]["draft_n"] >= 60, g["timings"]


@pytest.fixture(scope="module")
def dflash_drafter(tmp_path_factory):
    """A random-weight DFlash drafter for SmolLM2 (it exercises drafting and rollback, not acceptance)."""
    import subprocess
    import sys
    from conftest import ROOT, SMOLLM
    out = tmp_path_factory.mktemp("dflash") / "drafter.gguf"
    subprocess.run([sys.executable, str(ROOT / "tests" / "reference" / "random_dflash_drafter.py"), "--target",
                    str(SMOLLM), "--out", str(out)], check=True)
    return out


@pytest.mark.parametrize("types,extra", [("ngram-mod,dflash", []),
                                         ("dflash", ["--spec-branch-budget", "4", "--spec-draft-top-k", "3"])],
                         ids=["flat", "ddtree"])
def test_dflash_four_slots_greedy_equals_no_speculation(types, extra, plain, dflash_drafter):
    want = run_all(plain, n=128)
    s = Server(*ARGS, "-md", dflash_drafter, "--spec-type", types, "--spec-draft-n-max", "3",
               "--no-spec-dm-adaptive", *extra)
    try:
        got = run_all(s, n=128)
    finally:
        s.stop()
    for g, r in zip(got, want):
        assert g["tokens"] == r["tokens"] and g["content"] == r["content"]
    long = [g for g in got if g["tokens_predicted"] >= 64]  # (the story prompt ends at once)
    assert len(long) >= 3
    for g in long:  # every slot drafted, each from its own context
        assert g["timings"]["draft_n"] >= 60, g["timings"]


def test_dflash_max_slots(plain, dflash_drafter):
    """--spec-dflash-max-slots 2: slots 0 and 1 draft with DFlash, slots 2 and 3 generate without it."""
    prompts = PROMPTS[:3] + ["Once upon a time, in a small village by the sea,"]  # each generates 32 tokens
    want = run_all(plain, prompts, n=32)
    s = Server(*ARGS, "-md", dflash_drafter, "--spec-dflash-max-slots", "2", "--spec-draft-n-max", "3",
               "--no-spec-dm-adaptive")
    try:
        got = run_all(s, prompts, n=32)
    finally:
        s.stop()
    for g, r in zip(got, want):
        assert g["tokens"] == r["tokens"]
    drafted = sorted(g["id_slot"] for g in got if g["timings"].get("draft_n", 0) > 0)
    assert drafted == [0, 1], [(g["id_slot"], g["timings"]) for g in got]
