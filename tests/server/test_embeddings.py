# tests/server/test_embeddings: --embedding on a tiny random llama model (F32, SmolLM2's vocabulary):
# /v1/embeddings (OpenAI shape, float and base64), /embedding and /embeddings (llama-server's shapes),
# every --pooling mode against the per-token vectors and against an independent numpy forward pass,
# normalisation modes, determinism and batch invariance, the logits consistency check, and errors.
import base64
import struct

import numpy as np
import pytest

from conftest import Server
from embed_models import N_EMBD, embeddings, write_model


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("embed") / "tiny-llama.gguf"
    return path, write_model(path)


@pytest.fixture(scope="module")
def servers(model):
    """One server per --pooling mode, started on first use (f32 KV so numpy can match closely)."""
    started = {}

    def get(pooling):
        if pooling not in started:
            args = ["-c", "1024", "-np", "2", "-ctk", "f32", "-ctv", "f32"]
            if pooling != "off":
                args += ["--embedding", "--pooling", pooling]
            started[pooling] = Server(*args, model=model[0])
        return started[pooling]

    yield get
    for s in started.values():
        s.stop()


def tokens_of(s, text):
    st, _, body = s.post("/tokenize", {"content": text, "add_special": True})
    assert st == 200
    return body["tokens"]


def native(s, content, **extra):
    st, _, body = s.post("/embedding", {"content": content, **extra})
    assert st == 200, body
    return body


def oai(s, body):
    st, _, out = s.post("/v1/embeddings", body)
    assert st == 200, out
    return out


TEXTS = ["The quick brown fox", "jumps over the lazy dog", "hello"]


def test_without_embedding_flag_501(servers):
    s = servers("off")
    for path in ("/v1/embeddings", "/embedding", "/embeddings"):
        st, _, body = s.post(path, {"input": "hi"})
        assert st == 501, (path, body)
        assert body["error"]["type"] == "not_supported_error"
        assert "--embeddings" in body["error"]["message"]


def test_completions_still_work(servers):
    st, _, body = servers("mean").post("/completion", {"prompt": "Hello", "n_predict": 3})
    assert st == 200 and body["tokens_predicted"] == 3


def test_oai_shapes(servers):
    s = servers("mean")
    one = oai(s, {"input": TEXTS[0], "model": "mine"})
    assert one["object"] == "list" and one["model"] == "mine"
    assert len(one["data"]) == 1
    d = one["data"][0]
    assert d["object"] == "embedding" and d["index"] == 0 and len(d["embedding"]) == N_EMBD
    n = len(tokens_of(s, TEXTS[0]))
    assert one["usage"] == {"prompt_tokens": n, "total_tokens": n}

    many = oai(s, {"input": TEXTS})
    assert [d["index"] for d in many["data"]] == [0, 1, 2]
    assert many["usage"]["prompt_tokens"] == sum(len(tokens_of(s, t)) for t in TEXTS)
    assert many["model"]  # the server's model name when the request gives none

    ids = [tokens_of(s, t) for t in TEXTS]
    by_ids = oai(s, {"input": ids})
    assert len(by_ids["data"]) == 3
    single = oai(s, {"input": ids[0]})  # one array of token ids is one input
    assert len(single["data"]) == 1
    np.testing.assert_array_equal(single["data"][0]["embedding"], many["data"][0]["embedding"])
    np.testing.assert_array_equal(by_ids["data"][1]["embedding"], many["data"][1]["embedding"])


def test_oai_base64(servers):
    s = servers("mean")
    f = oai(s, {"input": TEXTS[1]})["data"][0]["embedding"]
    b = oai(s, {"input": TEXTS[1], "encoding_format": "base64"})["data"][0]
    assert b["encoding_format"] == "base64"
    raw = base64.b64decode(b["embedding"])
    assert len(raw) == 4 * N_EMBD
    np.testing.assert_array_equal(struct.unpack(f"<{N_EMBD}f", raw), np.float32(f))


def test_native_shapes(servers):
    s = servers("mean")
    body = native(s, TEXTS[0])
    assert len(body) == 1 and body[0]["index"] == 0
    assert len(body[0]["embedding"]) == 1 and len(body[0]["embedding"][0]) == N_EMBD
    for path in ("/embeddings", "/v1/embeddings"):  # "content" selects the native shape on every route
        st, _, other = s.post(path, {"content": TEXTS})
        assert st == 200 and [e["index"] for e in other] == [0, 1, 2]
        assert other[0]["embedding"] == body[0]["embedding"]


def test_pooling_none_per_token(servers):
    s = servers("none")
    toks = tokens_of(s, TEXTS[0])
    rows = native(s, TEXTS[0])[0]["embedding"]
    assert len(rows) == len(toks) and all(len(r) == N_EMBD for r in rows)
    st, _, body = s.post("/v1/embeddings", {"input": TEXTS[0]})
    assert st == 400 and "not OAI compatible" in body["error"]["message"]


def test_matches_numpy(servers, model):
    """Per-token vectors (pooling none, unnormalized) against an independent float64 forward pass."""
    s = servers("none")
    for text in TEXTS:
        toks = tokens_of(s, text)
        got = np.array(native(s, text)[0]["embedding"])
        want = embeddings(model[1], toks)
        np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * np.abs(want).max())


def l2(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("pooling", ["mean", "cls", "last"])
def test_pooling_from_token_vectors(servers, pooling):
    rows = np.array(native(servers("none"), TEXTS[1])[0]["embedding"], np.float64)
    want = {"mean": rows.mean(0), "cls": rows[0], "last": rows[-1]}[pooling]
    got = oai(servers(pooling), {"input": TEXTS[1]})["data"][0]["embedding"]
    np.testing.assert_allclose(got, l2(want), rtol=0, atol=1e-5)


def test_normalisation(servers):
    s = servers("mean")
    raw = np.array(native(s, TEXTS[2], embd_normalize=-1)[0]["embedding"][0], np.float64)
    rows = np.array(native(servers("none"), TEXTS[2])[0]["embedding"], np.float64)
    np.testing.assert_allclose(raw, rows.mean(0), rtol=0, atol=1e-5)
    default = np.array(native(s, TEXTS[2])[0]["embedding"][0])
    np.testing.assert_allclose(np.linalg.norm(default), 1.0, atol=1e-5)
    taxi = np.array(native(s, TEXTS[2], embd_normalize=1)[0]["embedding"][0])
    np.testing.assert_allclose(np.abs(taxi).sum(), 1.0, atol=1e-5)
    maxabs = np.array(native(s, TEXTS[2], embd_normalize=0)[0]["embedding"][0])
    np.testing.assert_allclose(np.abs(maxabs).max(), 32760.0, rtol=1e-5)
    p3 = np.array(native(s, TEXTS[2], embd_normalize=3)[0]["embedding"][0], np.float64)
    np.testing.assert_allclose((np.abs(p3) ** 3).sum(), 1.0, atol=1e-5)
    oai_raw = oai(s, {"input": TEXTS[2], "embd_normalize": -1})["data"][0]["embedding"]
    np.testing.assert_allclose(oai_raw, raw, rtol=0, atol=1e-7)


def test_deterministic_and_batch_invariant(servers):
    s = servers("mean")
    alone = [oai(s, {"input": t})["data"][0]["embedding"] for t in TEXTS]
    again = [oai(s, {"input": t})["data"][0]["embedding"] for t in TEXTS]
    together = [d["embedding"] for d in oai(s, {"input": TEXTS * 3})["data"]]
    assert alone == again
    assert together == alone * 3  # bit for bit, whichever slot and whatever batch


def test_logits_consistency(servers, model):
    """pooling last, no normalisation: the vector · output.weight gives the next-token distribution that
    /completion reports (top logprobs of the first generated token)."""
    s = servers("last")
    text = TEXTS[0]
    h = np.array(native(s, text, embd_normalize=-1)[0]["embedding"][0], np.float64)
    logits = model[1]["output.weight"] @ h
    logp = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
    st, _, body = s.post("/completion", {"prompt": text, "n_predict": 1, "n_probs": 5, "temperature": 0})
    assert st == 200, body
    top = body["completion_probabilities"][0]["top_logprobs"]
    for t in top:
        assert abs(logp[t["id"]] - t["logprob"]) < 1e-3, t
    assert top[0]["id"] == int(np.argmax(logits))


@pytest.mark.parametrize("body,needle", [
    ({}, '"input" or "content" must be provided'),
    ({"input": 5}, "'input' must be"),
    ({"input": []}, "'input' must be"),
    ({"input": {"text": "x"}}, "'input' must be"),
    ({"input": ["ok", {"a": 1}]}, "'input' must be"),
    ({"input": [[1, 2], [[3]]]}, "'input' must be"),
    ({"input": ["ok", []]}, "cannot be empty"),
    ({"input": "x", "encoding_format": "hex"}, "float or base64"),
    ({"input": "x", "encoding_format": 3}, "float or base64"),
    ({"input": "x", "embd_normalize": "l2"}, "embd_normalize"),
    ({"input": [99999999]}, "out of range"),
])
def test_bad_requests_400(servers, body, needle):
    st, _, out = servers("mean").post("/v1/embeddings", body)
    assert st == 400, out
    assert needle in out["error"]["message"]


def test_input_longer_than_slot(servers):
    st, _, out = servers("mean").post("/v1/embeddings", {"input": [1] * 600})  # slots hold 512 tokens
    assert st == 400 and out["error"]["type"] == "exceed_context_size_error"


def test_real_model_embedding_gives_its_logits():
    """SmolLM2 (quantized, head tied to its Q8_0 token_embd): pooling last without normalisation, times the
    dequantized head, ranks the next token as /completion does (the engine quantizes activations for the
    Q8_0 head, so logprobs agree to within 0.1)."""
    from conftest import SMOLLM
    from embed_models import gguf

    reader = gguf.GGUFReader(str(SMOLLM))
    t = next(t for t in reader.tensors if t.name == "token_embd.weight")
    head = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
    s = Server("-c", "1024", "-np", "1", "--embedding", "--pooling", "last")
    try:
        text = "The capital of France is"
        h = np.array(native(s, text, embd_normalize=-1)[0]["embedding"][0], np.float64)
        logits = head @ h
        logp = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        st, _, body = s.post("/completion", {"prompt": text, "n_predict": 1, "n_probs": 3, "temperature": 0})
        assert st == 200, body
        top = body["completion_probabilities"][0]["top_logprobs"]
        assert top[0]["id"] == int(np.argmax(logits))
        for x in top:
            assert abs(logp[x["id"]] - x["logprob"]) < 0.1, x
    finally:
        s.stop()
