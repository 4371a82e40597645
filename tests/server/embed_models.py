# tests/server/embed_models: tiny seeded-random GGUF models (SmolLM2's BPE vocabulary, F32 weights) for the
# embeddings and rerank tests, with optional classification heads in llama.cpp's tensor layout, and an
# independent numpy forward pass of the same models (float64) to check Bee's numbers against.
import numpy as np
import pytest

from conftest import SMOLLM

gguf = pytest.importorskip("gguf", reason="the gguf package is installed by scripts/setup.sh")

N_EMBD, N_FF, N_HEAD, N_HEAD_KV, N_LAYER = 64, 128, 4, 2, 2
EPS = 1e-5
BOS, EOS, SEP = 1, 2, 3


def _vocab():
    src = gguf.GGUFReader(str(SMOLLM))
    f = src.fields
    tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode() for i in f["tokenizer.ggml.tokens"].data]
    types = [int(f["tokenizer.ggml.token_type"].parts[i][0]) for i in f["tokenizer.ggml.token_type"].data]
    merges = [bytes(f["tokenizer.ggml.merges"].parts[i]).decode() for i in f["tokenizer.ggml.merges"].data]
    pre = bytes(f["tokenizer.ggml.pre"].parts[f["tokenizer.ggml.pre"].data[0]]).decode()
    return tokens, types, merges, pre


def write_model(path, arch="llama", head=None, seed=3, rerank_template=None):
    """Writes the model and returns its weights as numpy arrays (name -> array, (rows, cols) = (out, in)).
    head: None; "out" (cls.output.weight (2, n_embd), Qwen3 rerankers' shape); or "dense" (cls.weight
    (32, n_embd) + cls.bias, cls.output.weight (1, 32) + cls.output.bias); or "bad" (cls.output.weight
    (2, 32): rows that do not fit the hidden state)."""
    tokens, types, merges, pre = _vocab()
    n_vocab, hd = len(tokens), N_EMBD // N_HEAD
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(2048)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(BOS)
    w.add_eos_token_id(EOS)
    w.add_sep_token_id(SEP)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_sep_token(True)
    if rerank_template is not None:
        w.add_string("tokenizer.chat_template.rerank", rerank_template)
    rng = np.random.default_rng(seed)
    weights = {}

    def t(name, *shape, scale=0.1, ones=False):
        a = np.ones(shape, np.float32) if ones else (rng.standard_normal(shape) * scale).astype(np.float32)
        if ones:
            a += (rng.standard_normal(shape) * 0.1).astype(np.float32)
        weights[name] = a
        w.add_tensor(name, a)

    t("token_embd.weight", n_vocab, N_EMBD, scale=0.5)
    t("output_norm.weight", N_EMBD, ones=True)
    t("output.weight", n_vocab, N_EMBD, scale=0.2)
    for i in range(N_LAYER):
        p = f"blk.{i}."
        t(p + "attn_norm.weight", N_EMBD, ones=True)
        t(p + "ffn_norm.weight", N_EMBD, ones=True)
        t(p + "attn_q.weight", N_HEAD * hd, N_EMBD)
        t(p + "attn_k.weight", N_HEAD_KV * hd, N_EMBD)
        t(p + "attn_v.weight", N_HEAD_KV * hd, N_EMBD)
        t(p + "attn_output.weight", N_EMBD, N_HEAD * hd)
        if arch == "qwen3":
            t(p + "attn_q_norm.weight", hd, ones=True)
            t(p + "attn_k_norm.weight", hd, ones=True)
        t(p + "ffn_gate.weight", N_FF, N_EMBD)
        t(p + "ffn_up.weight", N_FF, N_EMBD)
        t(p + "ffn_down.weight", N_EMBD, N_FF)
    if head == "out":
        w.add_array(f"{arch}.classifier.output_labels", ["yes", "no"])
        t("cls.output.weight", 2, N_EMBD, scale=0.5)
    elif head == "bad":
        t("cls.output.weight", 2, 32)
    elif head == "dense":
        t("cls.weight", 32, N_EMBD, scale=0.3)
        t("cls.bias", 32)
        t("cls.output.weight", 1, 32, scale=0.5)
        t("cls.output.bias", 1)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {k: v.astype(np.float64) for k, v in weights.items()}


def rms(x, g):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + EPS) * g


def rope(x, neox):
    """x (T, heads, hd) at positions 0..T-1 (base 10000). neox: pairs (i, i + hd/2); else (2i, 2i+1)."""
    n, d = x.shape[0], x.shape[-1]
    ang = np.arange(n)[:, None] * 10000.0 ** (-np.arange(0, d, 2) / d)[None, :]
    cos, sin = np.cos(ang)[:, None, :], np.sin(ang)[:, None, :]
    a, b = (x[..., : d // 2], x[..., d // 2:]) if neox else (x[..., 0::2], x[..., 1::2])
    ra, rb = a * cos - b * sin, a * sin + b * cos
    if neox:
        return np.concatenate([ra, rb], -1)
    out = np.empty_like(x)
    out[..., 0::2], out[..., 1::2] = ra, rb
    return out


def hidden_states(W, tokens, arch="llama"):
    """The residual stream after the last layer (before the output norm), (T, n_embd)."""
    hd, group = N_EMBD // N_HEAD, N_HEAD // N_HEAD_KV
    x = W["token_embd.weight"][np.array(tokens)]
    n = len(tokens)
    mask = np.triu(np.full((n, n), -np.inf), 1)
    for i in range(N_LAYER):
        p = f"blk.{i}."
        h = rms(x, W[p + "attn_norm.weight"])
        q = (h @ W[p + "attn_q.weight"].T).reshape(n, N_HEAD, hd)
        k = (h @ W[p + "attn_k.weight"].T).reshape(n, N_HEAD_KV, hd)
        v = (h @ W[p + "attn_v.weight"].T).reshape(n, N_HEAD_KV, hd)
        if arch == "qwen3":
            q, k = rms(q, W[p + "attn_q_norm.weight"]), rms(k, W[p + "attn_k_norm.weight"])
        q, k = rope(q, arch == "qwen3"), rope(k, arch == "qwen3")
        att = np.empty((n, N_HEAD, hd))
        for hh in range(N_HEAD):
            s = q[:, hh] @ k[:, hh // group].T / np.sqrt(hd) + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            att[:, hh] = (s / s.sum(-1, keepdims=True)) @ v[:, hh // group]
        x = x + att.reshape(n, -1) @ W[p + "attn_output.weight"].T
        h = rms(x, W[p + "ffn_norm.weight"])
        g = h @ W[p + "ffn_gate.weight"].T
        x = x + ((g / (1 + np.exp(-g))) * (h @ W[p + "ffn_up.weight"].T)) @ W[p + "ffn_down.weight"].T
    return x


def embeddings(W, tokens, arch="llama"):
    """llama.cpp's per-token embeddings: the final hidden states after the output norm."""
    return rms(hidden_states(W, tokens, arch), W["output_norm.weight"])


def rank_score(W, tokens, arch):
    """The classification head on the last token's normed hidden state; softmax for qwen3 (llama.cpp's rule)."""
    x = embeddings(W, tokens, arch)[-1]
    if "cls.weight" in W:
        x = np.tanh(W["cls.weight"] @ x + W["cls.bias"])
    x = W["cls.output.weight"] @ x + W.get("cls.output.bias", 0)
    if arch == "qwen3":
        x = np.exp(x - x.max())
        x = x / x.sum()
    return float(x[0])
