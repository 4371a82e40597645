#!/usr/bin/env python3
"""pp512 and tg64 of llama.cpp through llama-cpp-python (pip install llama-cpp-python; never committed),
for side-by-side numbers with `bee bench`. Usage: bench/llamacpp_pp_tg.py MODEL.gguf THREADS [REPS]
pp: one eval of 512 fixed token ids on an empty cache; tg: 64 single-token evals after one token.
Prints the best of REPS (default 3) for each."""
import sys
import time

from llama_cpp import Llama


def main():
    path, threads = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    llm = Llama(model_path=path, n_ctx=1024, n_batch=512, n_threads=threads, verbose=False)
    bos = llm.token_bos()
    toks = [bos if bos >= 0 else 1] + [100 + i % 1000 for i in range(511)]
    best_pp = best_tg = 0.0
    for _ in range(reps):
        llm.reset()
        t0 = time.time()
        llm.eval(toks)
        best_pp = max(best_pp, 512 / (time.time() - t0))
        llm.reset()
        llm.eval(toks[:1])
        t0 = time.time()
        for i in range(64):
            llm.eval([toks[i + 1]])
        best_tg = max(best_tg, 64 / (time.time() - t0))
    print(f"llama.cpp {path.split('/')[-1]} t={threads}: pp512 {best_pp:.1f} tok/s, tg64 {best_tg:.1f} tok/s")


if __name__ == "__main__":
    main()
