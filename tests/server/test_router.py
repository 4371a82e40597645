# tests/server/test_router: router mode as llama-server has it — a --models-dir of SmolLM2 and Gemma (and a
# --models-preset), models listed with their status, loaded on demand by the request's model or by
# POST /models/load, unloaded by POST /models/unload or, beyond --models-max, least recently used first;
# unknown models refused with llama-server's error shape.
import json
import subprocess
import threading
import time
import urllib.request

import pytest

from conftest import BEE, GEMMA, SMOLLM, Server, http

SMOL_ID = SMOLLM.name[: -len(".gguf")]
GEMMA_ID = GEMMA.name[: -len(".gguf")]
HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    for m in (SMOLLM, GEMMA):
        (d / m.name).symlink_to(m)
    (d / "notes.txt").write_text("not a model")
    (d / "broken.gguf").write_text("not a GGUF file either")
    return d


def statuses(server):
    status, _, body = server.get("/models")
    assert status == 200, body
    assert body["object"] == "list"
    return {m["id"]: m["status"]["value"] for m in body["data"]}


def wait_status(server, model, want, timeout=60):
    deadline = time.time() + timeout
    while True:
        now = statuses(server)[model]
        if now == want:
            return
        assert time.time() < deadline, f"{model} is {now}, not {want}"
        time.sleep(0.05)


def chat(server, model, **kw):
    return server.post("/v1/chat/completions", {"model": model, "messages": HELLO, "max_tokens": 4, "temperature": 0, **kw})


@pytest.fixture(scope="module")
def router(models_dir):
    """Both models of the folder, one loaded at a time."""
    s = Server("--models-dir", models_dir, "--models-max", "1", "-c", "512", "-np", "1", model=None)
    yield s
    s.stop()


def test_listing_before_any_load(router):
    for path in ("/models", "/v1/models"):
        status, _, body = router.get(path)
        assert status == 200
        ids = [m["id"] for m in body["data"]]
        assert ids == sorted([SMOL_ID, GEMMA_ID, "broken"])  # the .txt file is not a model
        for m in body["data"]:
            assert m["object"] == "model" and m["source"] == "models_dir"
            assert m["status"]["value"] in ("unloaded", "loaded")
            assert "--alias" in m["status"]["args"] and m["architecture"]["input_modalities"] == ["text"]


def test_router_props(router):
    status, _, props = router.get("/props")
    assert status == 200
    assert props["role"] == "router" and props["max_instances"] == 1 and props["models_autoload"] is True


def test_unknown_and_missing_model_refused(router):
    status, _, body = chat(router, "no-such-model")
    assert status == 400
    assert body["error"] == {"code": 400, "message": "model 'no-such-model' not found", "type": "invalid_request_error"}
    status, _, body = router.post("/v1/chat/completions", {"messages": HELLO})
    assert status == 400 and body["error"]["message"] == "model name is missing from the request"
    status, _, body = router.get("/slots")  # a GET names its model with ?model=
    assert status == 400 and body["error"]["message"] == "model name is missing from the request"
    status, _, body = router.post("/models/load", {"model": "no-such-model"})
    assert status == 404 and body["error"]["type"] == "not_found_error"
    status, _, body = router.post("/models/unload", {"model": "no-such-model"})
    assert status == 400 and body["error"]["message"] == "model is not found"


def test_load_failure_reported(router):
    status, _, body = chat(router, "broken")
    assert status == 500 and body["error"]["type"] == "server_error"
    assert body["error"]["message"].startswith("model name=broken failed to load: ")
    entry = next(m for m in router.get("/models")[2]["data"] if m["id"] == "broken")
    assert entry["status"]["value"] == "unloaded" and entry["status"]["failed"] is True
    assert entry["status"]["exit_code"] == 1 and "GGUF" in entry["status"]["error"]


def test_load_on_demand_and_lru_eviction(router):
    status, _, r = chat(router, SMOL_ID)
    assert status == 200, r
    assert r["model"] == SMOL_ID and r["usage"]["completion_tokens"] > 0
    assert statuses(router)[SMOL_ID] == "loaded"
    entry = next(m for m in router.get("/models")[2]["data"] if m["id"] == SMOL_ID)
    assert entry["meta"]["n_vocab"] == 49152  # what the loaded model reports of itself
    # --models-max 1: Gemma's first request unloads SmolLM2, the least recently used idle model.
    status, _, r = chat(router, GEMMA_ID)
    assert status == 200, r
    assert r["model"] == GEMMA_ID
    assert statuses(router) == {SMOL_ID: "unloaded", GEMMA_ID: "loaded", "broken": "unloaded"}
    # GET endpoints are routed by ?model=, each model answering with its own slots and vocabulary.
    status, _, slots = router.get(f"/slots?model={GEMMA_ID}")
    assert status == 200 and len(slots) == 1 and slots[0]["n_ctx"] == 512
    status, _, props = router.get(f"/props?model={GEMMA_ID}")
    assert status == 200 and props["model_alias"] == GEMMA_ID
    toks = {m: router.post("/tokenize", {"model": m, "content": "hello world"})[2]["tokens"] for m in (GEMMA_ID, SMOL_ID)}
    assert toks[GEMMA_ID] != toks[SMOL_ID]


def test_explicit_load_and_unload(router):
    status, _, r = router.post("/models/load", {"model": SMOL_ID})
    if status == 400:  # already loaded by an earlier test
        assert r["error"]["message"] == "model is already running"
    else:
        assert status == 200 and r == {"success": True}
    wait_status(router, SMOL_ID, "loaded")
    assert statuses(router)[GEMMA_ID] == "unloaded"
    status, _, r = router.post("/models/load", {"model": SMOL_ID})
    assert status == 400 and r["error"]["message"] == "model is already running"
    status, _, r = router.post("/models/unload", {"model": SMOL_ID})
    assert status == 200 and r == {"success": True}
    assert statuses(router)[SMOL_ID] == "unloaded"
    status, _, r = router.post("/models/unload", {"model": SMOL_ID})
    assert status == 400 and r["error"]["message"] == "model is not running"
    # ?autoload=false: a request does not load the model.
    status, _, r = router.post("/tokenize?autoload=false", {"model": SMOL_ID, "content": "hi"})
    assert status == 400 and r["error"]["message"] == "model is not loaded"


def test_stream_and_busy_model_kept(router):
    """A streamed request holds its model: a request for the other model waits for it, then evicts it."""
    status, _, _ = chat(router, SMOL_ID)
    assert status == 200
    req = urllib.request.Request(
        router.url("/v1/chat/completions"),
        data=json.dumps({"model": SMOL_ID, "messages": HELLO, "max_tokens": 40, "ignore_eos": True, "stream": True}).encode(),
        headers={"Content-Type": "application/json"},
    )
    chunks, other = [], {}
    with urllib.request.urlopen(req, timeout=120) as stream:
        first = stream.readline()  # the stream is running: SmolLM2 is busy
        assert first.startswith(b"data: ")
        t = threading.Thread(target=lambda: other.update(r=chat(router, GEMMA_ID)))
        t.start()
        for line in stream:
            if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
                chunks.append(json.loads(line[6:]))
    t.join(120)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    assert sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")) > 1
    assert other["r"][0] == 200, other
    assert statuses(router) == {SMOL_ID: "unloaded", GEMMA_ID: "loaded", "broken": "unloaded"}


PRESET = """\
version = 1
; every model
[*]
c = 512
np = 1
LLAMA_ARG_N_PREDICT = 9   # the router's own --n-predict wins over this

[{gemma}]
c = 256                   ; the section wins over [*]
load-on-startup = true

[smol]
model = {smol}
alias = tiny, smollm
tags = small
no-slots = true
"""


@pytest.fixture(scope="module")
def preset_router(models_dir, tmp_path_factory):
    ini = tmp_path_factory.mktemp("preset") / "models.ini"
    ini.write_text(PRESET.format(gemma=GEMMA_ID, smol=SMOLLM))
    s = Server("--models-dir", models_dir, "--models-preset", ini, "--no-models-autoload", "--n-predict", "3",
               model=None, api_key="sekrit")
    yield s
    s.stop()


def test_preset_listing_and_startup_load(preset_router):
    status, _, body = preset_router.get("/models")
    assert status == 200
    by_id = {m["id"]: m for m in body["data"]}
    assert set(by_id) == {SMOL_ID, GEMMA_ID, "smol", "broken"}
    assert by_id["smol"]["source"] == "preset" and by_id["smol"]["aliases"] == ["tiny", "smollm"]
    assert by_id["smol"]["tags"] == ["small"] and by_id["smol"]["status"]["preset"].startswith("[smol]\n")
    assert by_id[GEMMA_ID]["source"] == "preset" and by_id[SMOL_ID]["source"] == "models_dir"
    wait_status(preset_router, GEMMA_ID, "loaded")  # load-on-startup
    status, _, props = preset_router.get(f"/props?model={GEMMA_ID}")
    assert status == 200
    assert props["default_generation_settings"]["n_ctx"] == 256  # its section over [*]
    assert props["default_generation_settings"]["params"]["n_predict"] == 3  # the command line over the preset


def test_preset_no_autoload_alias_and_key(preset_router):
    status, _, r = preset_router.post("/models/load", {"model": "tiny"}, headers={"Authorization": "Bearer wrong"})
    assert status == 401 and r["error"]["type"] == "authentication_error"
    status, _, r = chat(preset_router, "tiny")  # --no-models-autoload
    assert status == 400 and r["error"]["message"] == "model is not loaded"
    status, _, r = preset_router.post("/v1/chat/completions?autoload=true",
                                      {"model": "smollm", "messages": HELLO, "temperature": 0})
    assert status == 200, r
    assert r["model"] == "smol" and r["usage"]["completion_tokens"] <= 3
    status, _, props = preset_router.get("/props?model=tiny")
    assert props["default_generation_settings"]["n_ctx"] == 512
    status, _, r = preset_router.get("/slots?model=smol")  # no-slots = true in its section
    assert status == 501


def test_bad_preset_refused_at_start(tmp_path):
    ini = tmp_path / "bad.ini"
    for text, want in [
        (f"[m]\nmodel = {SMOLLM}\nbogus-flag = 1\n", "option 'bogus-flag' not recognized in preset 'm'"),
        ("[m]\nc = 512\n", "preset 'm' has no model file"),
        ("[m\n", "bad.ini:1:"),
        (f"[m]\nmodel = {SMOLLM}\nc = lots\n", "model 'm' (preset): invalid value 'lots'"),
    ]:
        ini.write_text(text)
        r = subprocess.run([str(BEE), "serve", "--models-preset", str(ini), "--port", "0"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode != 0 and want in r.stderr, (text, r.stderr)


def test_a_queued_client_that_leaves_does_not_evict_the_running_model(models_dir):
    """--models-max 1: a request for another model waits while a stream holds the loaded one; when that
    client gives up, nothing is waiting any more, so the streamed model stays loaded after its stream."""
    s = Server("--models-dir", models_dir, "--models-max", "1", "-c", "1024", "-np", "1", model=None)
    try:
        # 600 tokens: the stream outlasts the queued client's timeout on a fast host too (~4 s at 150 t/s)
        body = {"model": SMOL_ID, "messages": HELLO, "max_tokens": 600, "ignore_eos": True, "stream": True}
        req = urllib.request.Request(s.url("/v1/chat/completions"), data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as stream:
            assert stream.readline().startswith(b"data: ")  # SmolLM2 is loaded and busy
            with pytest.raises(OSError):  # queued behind the stream, it leaves after 0.5 s
                http("POST", s.url("/v1/chat/completions"), {"model": GEMMA_ID, "messages": HELLO}, timeout=0.5)
            for line in stream:
                pass
        time.sleep(1)
        assert statuses(s) == {SMOL_ID: "loaded", GEMMA_ID: "unloaded", "broken": "unloaded"}
    finally:
        s.stop()


def test_preset_reload_rereads_the_file(tmp_path):
    """GET /models?reload=1 reads the preset again: a removed section goes (unloaded first), a new one appears,
    an unchanged one keeps its loaded model."""
    ini = tmp_path / "models.ini"
    ini.write_text(f"[a]\nmodel = {SMOLLM}\nc = 256\n\n[b]\nmodel = {SMOLLM}\nc = 256\n")
    s = Server("--models-preset", ini, "-np", "1", model=None)
    try:
        assert set(statuses(s)) == {"a", "b"}
        for m in ("a", "b"):
            assert chat(s, m)[0] == 200
        ini.write_text(f"[b]\nmodel = {SMOLLM}\nc = 256\n\n[c]\nmodel = {GEMMA}\nc = 256\n")
        assert statuses(s) == {"a": "loaded", "b": "loaded"}  # no reload asked: the list is as it was
        status, _, body = s.get("/models?reload=1")
        assert status == 200
        assert {m["id"]: m["status"]["value"] for m in body["data"]} == {"b": "loaded", "c": "unloaded"}
        assert chat(s, "a")[0] == 400
        assert chat(s, "c")[0] == 200
    finally:
        s.stop()
