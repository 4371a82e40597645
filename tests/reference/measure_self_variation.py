#!/usr/bin/env python3
"""Measures how much llama.cpp's logits vary between its own attention paths (flash attention on vs
off) on the reference prompts, restricted to the reference top-5 entries of every step. Bee's real-model
test allows Bee to differ from the reference by a small multiple of this: a difference inside
llama.cpp's own noise is not evidence of a bug.

Writes tests/reference/data/<stem>.selfvar.json. Needs llama-cpp-python (pip); run from the repo root
after make_reference.py."""
import json
import pathlib
import sys

import numpy as np
from llama_cpp import Llama

ROOT = pathlib.Path(__file__).resolve().parents[2]


def measure(stem):
    ref = json.loads((ROOT / f"tests/reference/data/{stem}.json").read_text())
    s = ref["settings"]
    other = {"flash_attn": not s.get("flash_attn", False)}
    llm = Llama(model_path=str(ROOT / f"models/{stem}.gguf"), n_ctx=s["n_ctx"], n_batch=s["n_batch"],
                n_threads=s["n_threads"], logits_all=True, verbose=False, **other)
    diffs, gaps = [], []
    for g in ref["generate"]:
        ids = g["prompt_ids"] + g["tokens"][:-1]
        llm.reset()
        llm.eval(ids)
        scores = np.array(llm.scores[: len(ids)])
        n0 = len(g["prompt_ids"])
        steps = [g["prompt_top5"]] + [st["top5"] for st in g["steps"][1:]]
        for k, top5 in enumerate(steps):
            row = scores[n0 - 1 + k]
            diffs += [abs(float(row[tid]) - lg) for tid, lg in top5]
            # the other path's greedy choice differs from the reference at a step: record the gap
            if int(np.argmax(row)) != top5[0][0]:
                gaps.append(top5[0][1] - top5[1][1])
    d = np.array(diffs)
    return {"compared": f"llama.cpp {other} vs the reference run", "n": len(diffs),
            "max": float(d.max()), "p99": float(np.percentile(d, 99)), "median": float(np.median(d)),
            "greedy_flip_max_gap": float(max(gaps)) if gaps else 0.0, "greedy_flips": len(gaps)}


def main():
    stems = sys.argv[1:] or ["SmolLM2-135M-Instruct.Q4_1", "gemma-3-270m-q4_k_m"]
    for stem in stems:
        r = measure(stem)
        (ROOT / f"tests/reference/data/{stem}.selfvar.json").write_text(json.dumps(r, indent=1) + "\n")
        print(stem, r)


if __name__ == "__main__":
    main()
