#!/usr/bin/env python3
"""Reference data for the qwen35 architecture from llama.cpp, the independent implementation.

The model is `bee gguf synth --shape qwen35-tiny --type f32 --seed 42` (random weights in upstream's layout,
made again at test time by ctest's qwen35_tiny_model fixture, so only the outputs are committed). llama.cpp
(commit 3f545becc, built by hand outside this repository) runs it through a small program written against
libllama (`dump_logits`, not committed: it decodes the prompt as one batch with logits for every row, then
generates greedily one token per decode) with its defaults for the comparison: f16 K/V, 2 threads.

    python3 tests/reference/qwen35_reference.py --bee build/bee --dump /path/to/dump_logits \
        --dump-mtp /path/to/dump_mtp [--out tests/reference/data/qwen35]

Writes tiny.ref.txt (read by tests/unit/model/test_qwen35_reference.cpp):
    fingerprint BYTES SUM        file size and the float sum of blk.0.attn_qkv.weight (the model check)
    prompt N ids...              then per prompt:
    tf R TOP id logit ...        the top-8 logits of teacher-forced row R (R < N)
    gen I TOP id logit ...       the top-8 logits greedy token I was picked from (sequence position N - 1 + I)
    greedy M ids...              the greedy tokens

and tiny.mtp.txt, the model's MTP block as llama.cpp's draft-mtp runs it (`dump_mtp`, also not committed:
a second context of type LLAMA_CONTEXT_TYPE_MTP over the same model; catch-up rows (token k, the target's
post-norm h of row k - 1, zeros for row 0), then a greedy chain from the target's argmax g0 after the prompt,
each step fed the head's own h):
    prompt N ids...              then per prompt:
    chain K+1 g0 d1 .. dK         g0 and the K drafts
    step I TOP id logit ...       the top-8 logits draft I + 1 was picked from
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
VOCAB = os.path.join(ROOT, "..", "shared", "data", "vocab", "ggml-vocab-deepseek-coder.gguf")
TOP = 8
N_GEN = 24
N_MTP = 6


def prompts(n_vocab):
    rng = np.random.default_rng(7)
    out = []
    for n in (9, 40, 3):
        out.append([32013] + [int(t) for t in rng.integers(100, n_vocab, n - 1)])  # BOS, then random ids
    return out


def top(row):
    ids = np.argsort(-row, kind="stable")[:TOP]
    return " ".join(f"{int(i)} {row[i]:.6f}" for i in ids)


def fingerprint(path):
    import gguf

    r = gguf.GGUFReader(path)
    t = next(t for t in r.tensors if t.name == "blk.0.attn_qkv.weight")
    return os.path.getsize(path), float(np.asarray(t.data, dtype=np.float64).sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bee", required=True, help="the bee binary (for gguf synth)")
    ap.add_argument("--dump", required=True, help="llama.cpp dump_logits program")
    ap.add_argument("--dump-mtp", required=True, help="llama.cpp dump_mtp program")
    ap.add_argument("--out", default=os.path.join(HERE, "data", "qwen35"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "tiny.gguf")
        subprocess.run([a.bee, "gguf", "synth", model, "--shape", "qwen35-tiny", "--type", "f32", "--seed", "42",
                        "--vocab", VOCAB], check=True, stdout=subprocess.DEVNULL)
        size, qkv_sum = fingerprint(model)
        n_vocab = 32256
        lines = ["# qwen35-tiny (bee gguf synth, f32, seed 42) through llama.cpp 3f545becc: f16 K/V, 2 threads",
                 f"fingerprint {size} {qkv_sum:.9g}"]
        for p in prompts(n_vocab):
            pre = os.path.join(tmp, "out")
            subprocess.run([a.dump, model, pre, str(N_GEN)] + [str(t) for t in p], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            tf = np.fromfile(pre + ".logits.f32", dtype=np.float32).reshape(len(p), n_vocab)
            gl = np.fromfile(pre + ".greedy_logits.f32", dtype=np.float32).reshape(N_GEN, n_vocab)
            greedy = np.fromfile(pre + ".greedy.i32", dtype=np.int32)
            lines.append("prompt %d %s" % (len(p), " ".join(map(str, p))))
            lines += [f"tf {r} {TOP} {top(tf[r])}" for r in range(len(p))]
            lines += [f"gen {i} {TOP} {top(gl[i])}" for i in range(N_GEN)]
            lines.append("greedy %d %s" % (len(greedy), " ".join(map(str, greedy))))
        with open(os.path.join(a.out, "tiny.ref.txt"), "w") as f:
            f.write("\n".join(lines) + "\n")
        mtp = ["# qwen35-tiny's MTP block through llama.cpp 3f545becc's draft-mtp context: f16 K/V, 2 threads",
               f"fingerprint {size} {qkv_sum:.9g}"]
        for p in prompts(n_vocab):
            pre = os.path.join(tmp, "mtp")
            subprocess.run([a.dump_mtp, model, pre, str(N_MTP)] + [str(t) for t in p], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            ml = np.fromfile(pre + ".mtp_logits.f32", dtype=np.float32).reshape(N_MTP, n_vocab)
            chain = np.fromfile(pre + ".mtp_tokens.i32", dtype=np.int32)
            mtp.append("prompt %d %s" % (len(p), " ".join(map(str, p))))
            mtp.append("chain %d %s" % (len(chain), " ".join(map(str, chain))))
            mtp += [f"step {i} {TOP} {top(ml[i])}" for i in range(N_MTP)]
        with open(os.path.join(a.out, "tiny.mtp.txt"), "w") as f:
            f.write("\n".join(mtp) + "\n")
    print("wrote", os.path.join(a.out, "tiny.ref.txt"), "and tiny.mtp.txt")


if __name__ == "__main__":
    sys.exit(main())
