#!/usr/bin/env python3
"""tests/reference/make_perplexity_reference: llama-perplexity's chunked perplexity computed with llama.cpp
(llama-cpp-python) on the start of models/bible-kjv.txt, for tests/py/test_perplexity.py.

Same method as `bee perplexity` and llama-perplexity: tokenize with BOS as the vocab wants, chunks of n_ctx
tokens each decoded from an empty cache with its first token replaced by BOS (if the vocab adds one), the
logits at positions n_ctx/2 .. n_ctx-2 score the next token; log-softmax in float64 here.
Writes tests/reference/data/perplexity.json.
Usage: pip install llama-cpp-python && python3 tests/reference/make_perplexity_reference.py [--models DIR]
"""
import argparse
import hashlib
import json
import math
import os

import numpy as np
from llama_cpp import Llama

from make_reference import build_info, sha256

HERE = os.path.dirname(os.path.abspath(__file__))
TEXT_LINES = 400          # the evaluation text: the first 400 lines of models/bible-kjv.txt (~12K tokens)
CONFIGS = [(128, 4), (512, 8)]  # (n_ctx, chunks)
N_THREADS = 2
MODELS = ["SmolLM2-135M-Instruct.Q4_1.gguf", "gemma-3-270m-q4_k_m.gguf"]


def evaluation_text(models_dir):
    """The first TEXT_LINES lines of the text scripts/setup.sh extracts (test_perplexity.py cuts the same)."""
    with open(os.path.join(models_dir, "bible-kjv.txt"), encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    return "".join(lines[:TEXT_LINES])


def chunk_log_probs(path, tokens, n_ctx, n_chunk, add_bos, bos, type_kv=1):
    """Per chunk: (log-softmax of the scored rows (n_ctx - 1 - first, n_vocab) in float64, their next tokens).
    type_kv: ggml type id of K and V (1: f16, llama.cpp's default; 0: f32)."""
    llm = Llama(path, n_ctx=n_ctx, n_batch=n_ctx, n_threads=N_THREADS, logits_all=True, verbose=False,
                type_k=type_kv, type_v=type_kv)
    first = n_ctx // 2
    for c in range(n_chunk):
        chunk = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        if add_bos:
            chunk[0] = bos
        llm.reset()
        llm.eval(chunk)
        logits = np.asarray(llm.scores[first:n_ctx - 1], dtype=np.float64)   # (n_ctx - 1 - first, n_vocab)
        mx = logits.max(axis=1, keepdims=True)
        log_probs = logits - (mx + np.log(np.exp(logits - mx).sum(axis=1, keepdims=True)))
        targets = np.asarray(tokens[c * n_ctx + first + 1:(c + 1) * n_ctx])   # original tokens, as llama-perplexity
        yield log_probs, targets
    del llm


def chunked_perplexity(path, tokens, n_ctx, n_chunk, add_bos, bos):
    """Per chunk: the sum and the sum of squares of the scored tokens' negative log-likelihoods."""
    out = []
    for log_probs, targets in chunk_log_probs(path, tokens, n_ctx, n_chunk, add_bos, bos):
        nll = -log_probs[np.arange(len(targets)), targets]
        out.append({"nll_sum": float(nll.sum()), "nll2_sum": float((nll * nll).sum()), "count": int(len(nll))})
    return out


def kv_f32_vs_f16(path, tokens, n_ctx, n_chunk, add_bos, bos):
    """KL divergence of llama.cpp's f32-KV distributions from its f16-KV ones, and how often the top token agrees."""
    base = [lp for lp, _ in chunk_log_probs(path, tokens, n_ctx, n_chunk, add_bos, bos, type_kv=1)]
    other = [lp for lp, _ in chunk_log_probs(path, tokens, n_ctx, n_chunk, add_bos, bos, type_kv=0)]
    b, o = np.concatenate(base), np.concatenate(other)
    kld = (np.exp(b) * (b - o)).sum(axis=1)
    return {"n_ctx": n_ctx, "chunks": n_chunk, "mean_kld": float(kld.mean()),
            "same_top_percent": float(100 * (b.argmax(axis=1) == o.argmax(axis=1)).mean())}


def summarize(chunks):
    """Running PPL after each chunk, and the final estimate with llama-perplexity's uncertainty."""
    s = s2 = n = 0
    running = []
    for ch in chunks:
        s += ch["nll_sum"]
        s2 += ch["nll2_sum"]
        n += ch["count"]
        running.append(math.exp(s / n))
    mean = s / n
    err = math.sqrt((s2 / n - mean * mean) / (n - 1))
    return running, math.exp(mean), math.exp(mean) * err


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=os.path.join(HERE, "..", "..", "models"))
    ap.add_argument("--out", default=os.path.join(HERE, "data", "perplexity.json"))
    args = ap.parse_args()
    text = evaluation_text(args.models)
    data = {
        "text": f"first {TEXT_LINES} lines of models/bible-kjv.txt (scripts/setup.sh perplexity-data)",
        "text_lines": TEXT_LINES,
        "text_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
        "build": build_info(),
        "settings": {"n_threads": N_THREADS, "kv": "f16/f16", "n_batch": "n_ctx"},
        "models": {},
    }
    for name in MODELS:
        path = os.path.join(args.models, name)
        vocab = Llama(path, vocab_only=True, verbose=False)
        tokens = vocab.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        bos = vocab.token_bos()
        add_bos = tokens[0] == bos
        runs = []
        for n_ctx, n_chunk in CONFIGS:
            chunks = chunked_perplexity(path, tokens, n_ctx, n_chunk, add_bos, bos)
            running, ppl, err = summarize(chunks)
            runs.append({"n_ctx": n_ctx, "chunks": n_chunk, "running_ppl": running, "ppl": ppl, "ppl_err": err,
                         "per_chunk": chunks})
            print(f"{name} -c {n_ctx} --chunks {n_chunk}: PPL = {ppl:.4f} +/- {err:.5f}")
        data["models"][name] = {"model_sha256": sha256(path), "n_tokens": len(tokens), "add_bos": add_bos,
                                "runs": runs}
        if name == MODELS[0]:  # the f32-vs-f16 KV divergence test_perplexity.py compares with (vocab 49K: small)
            kv = kv_f32_vs_f16(path, tokens, *CONFIGS[0], add_bos, bos)
            data["models"][name]["kv_f32_vs_f16"] = kv
            print(f"{name} f32 vs f16 KV: mean KLD {kv['mean_kld']:.6f}, same top {kv['same_top_percent']:.1f}%")
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
