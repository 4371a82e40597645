# tests/server/test_rerank: --reranking on tiny random rerankers in llama.cpp's layouts — a qwen3 model with
# cls.output.weight (yes/no, softmaxed) and a rerank prompt template, and a llama model with a dense
# cls.weight + cls.bias head before cls.output — scores checked against an independent numpy forward
# pass; ordering, top_n, return_documents, the TEI shape, errors, and the start-up refusal of a model
# without a head.
import subprocess

import numpy as np
import pytest

from conftest import BEE, Server, free_port
from embed_models import BOS, EOS, SEP, rank_score, write_model

TEMPLATE = "<|im_start|>query: {query}\ndocument: {document}<|im_end|>"
QUERY = "What is a panda?"
DOCS = ["hi", "it is a bear", "The giant panda is a bear species endemic to China.", "pandas are bears", "no"]


@pytest.fixture(scope="module")
def rerankers(tmp_path_factory):
    d = tmp_path_factory.mktemp("rerank")
    q_path, l_path, plain = d / "qwen3-rerank.gguf", d / "llama-rerank.gguf", d / "plain.gguf"
    q_w = write_model(q_path, arch="qwen3", head="out", seed=5, rerank_template=TEMPLATE)
    l_w = write_model(l_path, arch="llama", head="dense", seed=6)
    write_model(plain, seed=7)
    args = ["-c", "2048", "-np", "2", "-ctk", "f32", "-ctv", "f32", "--reranking"]
    q, l = Server(*args, model=q_path), Server(*args, model=l_path)
    yield {"qwen3": (q, q_w), "llama": (l, l_w), "plain": plain}
    q.stop()
    l.stop()


def tokenize(s, text, parse_special):
    st, _, body = s.post("/tokenize", {"content": text, "add_special": False, "parse_special": parse_special})
    assert st == 200
    return body["tokens"]


def prompt_tokens(arch, s, doc):
    if arch == "qwen3":  # the model's rerank template, special tokens parsed, nothing added
        return tokenize(s, TEMPLATE.replace("{query}", QUERY).replace("{document}", doc), True)
    # [BOS] query [EOS] [SEP] doc [EOS]: the file says add_bos, add_sep, not add_eos (so no EOS)
    assert EOS
    return [BOS] + tokenize(s, QUERY, False) + [SEP] + tokenize(s, doc, False)


@pytest.mark.parametrize("arch", ["qwen3", "llama"])
def test_scores_match_numpy(rerankers, arch):
    s, W = rerankers[arch]
    st, _, body = s.post("/v1/rerank", {"query": QUERY, "documents": DOCS, "model": "rr"})
    assert st == 200, body
    assert body["object"] == "list" and body["model"] == "rr"
    toks = [prompt_tokens(arch, s, d) for d in DOCS]
    assert body["usage"] == {"prompt_tokens": sum(map(len, toks)), "total_tokens": sum(map(len, toks))}
    want = [rank_score(W, t, arch) for t in toks]
    results = body["results"]
    assert sorted(r["index"] for r in results) == list(range(len(DOCS)))
    for r in results:
        assert abs(r["relevance_score"] - want[r["index"]]) < 1e-4, (r, want)
    scores = [r["relevance_score"] for r in results]
    assert scores == sorted(scores, reverse=True)
    assert len(set(np.round(want, 6))) == len(DOCS)  # the random head does tell the documents apart
    if arch == "qwen3":
        assert all(0 < x < 1 for x in scores)  # softmax probabilities


def test_top_n_and_documents(rerankers):
    s, _ = rerankers["llama"]
    full = s.post("/rerank", {"query": QUERY, "documents": DOCS})[2]["results"]
    st, _, body = s.post("/reranking", {"query": QUERY, "documents": DOCS, "top_n": 2, "return_documents": True})
    assert st == 200
    assert [r["index"] for r in body["results"]] == [r["index"] for r in full[:2]]
    for r in body["results"]:
        assert r["document"] == {"text": DOCS[r["index"]]}
    assert "document" not in full[0]
    zero = s.post("/v1/reranking", {"query": QUERY, "documents": DOCS, "top_n": 0})[2]
    assert zero["results"] == []


def test_tei_shape(rerankers):
    s, _ = rerankers["llama"]
    st, _, body = s.post("/rerank", {"query": QUERY, "texts": DOCS[:3], "return_text": True})
    assert st == 200 and isinstance(body, list) and len(body) == 3
    for r in body:
        assert set(r) == {"index", "score", "text"} and r["text"] == DOCS[r["index"]]


def test_scores_do_not_depend_on_the_batch(rerankers):
    """Each document alone scores exactly as in the whole request (shared query prefix reused or not)."""
    s, _ = rerankers["qwen3"]
    together = {r["index"]: r["relevance_score"] for r in s.post("/rerank", {"query": QUERY, "documents": DOCS})[2]["results"]}
    for i, d in enumerate(DOCS):
        alone = s.post("/rerank", {"query": QUERY, "documents": [d]})[2]["results"][0]["relevance_score"]
        assert alone == together[i]


def test_embeddings_on_a_reranker(rerankers):
    s, _ = rerankers["qwen3"]
    st, _, body = s.post("/v1/embeddings", {"input": "hello", "embd_normalize": -1})
    assert st == 200
    v = body["data"][0]["embedding"]
    assert len(v) == 2 and abs(sum(v) - 1) < 1e-5  # the head's two softmaxed outputs


@pytest.mark.parametrize("body,needle", [
    ({"documents": ["a"]}, '"query" must be provided'),
    ({"query": 1, "documents": ["a"]}, '"query" must be a string'),
    ({"query": "q"}, '"documents" must be a non-empty string array'),
    ({"query": "q", "documents": []}, '"documents" must be a non-empty string array'),
    ({"query": "q", "documents": ["a", 2]}, '"documents" must be a non-empty string array'),
    ({"query": "q", "documents": ["a"], "top_n": -1}, "top_n"),
])
def test_bad_requests_400(rerankers, body, needle):
    st, _, out = rerankers["llama"][0].post("/rerank", body)
    assert st == 400, out
    assert needle in out["error"]["message"]


def test_rerank_needs_the_flag(rerankers):
    s = Server("-c", "512", "-np", "1", "--embedding", model=rerankers["plain"])
    try:
        st, _, body = s.post("/v1/rerank", {"query": "q", "documents": ["a"]})
        assert st == 501 and "--reranking" in body["error"]["message"]
    finally:
        s.stop()


def test_embedding_with_rank_pooling_serves_rerank(rerankers):
    s = Server("-c", "512", "-np", "1", "--embedding", "--pooling", "rank", model=rerankers["plain"].parent / "llama-rerank.gguf")
    try:
        st, _, body = s.post("/rerank", {"query": "q", "documents": ["a", "b"]})
        assert st == 200 and len(body["results"]) == 2
    finally:
        s.stop()


def test_model_without_head_refused_at_start(rerankers):
    r = subprocess.run([str(BEE), "serve", "-m", str(rerankers["plain"]), "--port", str(free_port()), "--reranking"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "classification head" in r.stderr and "--reranking" in r.stderr


def test_head_of_the_wrong_shape_refused_at_load(tmp_path):
    path = tmp_path / "bad-head.gguf"
    write_model(path, head="bad")
    r = subprocess.run([str(BEE), "serve", "-m", str(path), "--port", str(free_port())],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "cls.output.weight" in r.stderr and "expected 64" in r.stderr, r.stderr
