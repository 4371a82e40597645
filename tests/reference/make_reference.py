#!/usr/bin/env python3
"""tests/reference/make_reference: golden tokenizer ids and greedy top-5 logits from llama.cpp (llama-cpp-python).

The only place Bee touches llama.cpp. Writes tests/reference/data/<model-stem>.json for each model found.
Usage: pip install llama-cpp-python && python3 tests/reference/make_reference.py [--models DIR] [--out DIR]
"""
import argparse
import ctypes
import hashlib
import json
import os
import sys

import numpy as np
import llama_cpp
from llama_cpp import Llama

N_CTX = 512
N_BATCH = 512
N_THREADS = 2
N_GEN = 32
TOP_N = 5

HERE = os.path.dirname(os.path.abspath(__file__))

# Per model: file name, its special-token snippet, and the chat prompt written out by hand from its template.
MODELS = [
    {
        "file": "SmolLM2-135M-Instruct.Q4_1.gguf",
        "special_text": "<|im_start|>user\nhi<|im_end|>",
        "chat": lambda msg: (
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
            f"<|im_start|>user\n{msg}<|im_end|>\n<|im_start|>assistant\n"
        ),
    },
    {
        "file": "gemma-3-270m-q4_k_m.gguf",
        "special_text": "<start_of_turn>user\nhi<end_of_turn>",
        "chat": lambda msg: f"<start_of_turn>user\n{msg}<end_of_turn>\n<start_of_turn>model\n",
    },
]

# Tokenizer inputs: each is tokenized with add_special=False and parse_special=False; the ones in
# BOTH_FLAGS also with add_special=True (and special-token texts with every flag combination).
TEXTS = [
    "",
    " ",
    "Hello world",
    "Hello, world! How are you today?",
    "The quick brown fox jumps over the lazy dog.",
    " leading space",
    "trailing space ",
    "  two leading spaces",
    "multiple    spaces   inside",
    "   ",
    "\t",
    "tab\tseparated\tvalues",
    "\t\t\tthree tabs",
    "\n",
    "line one\nline two",
    "paragraph\n\n\nafter three newlines",
    " \n \n\t \n",
    "mixed\r\nline endings\r\n",
    "café naïve résumé façade",
    "Ångström Ærøskøbing Straße",
    "你好，世界！今天天气很好。",
    "日本語のテキストとカタカナ",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم",
    "😀 grinning face",
    "👨‍👩‍👧‍👦 family ZWJ and 🏳️‍🌈 flag and 👍🏽 skin tone",
    "def add(a, b):\n    return a + b\n",
    "for i in range(10):\n\tprint(f\"{i:03d}\")",
    "#include <vector>\nint main() { std::vector<int> v{1, 2, 3}; return v.size(); }",
    '{"name": "Alice", "age": 30, "tags": ["a", "b"], "nested": {"ok": true}}',
    "pi = 3.14159 and e = 2.71828",
    "1234567 7654321 1000000000 0.000001",
    "2024-01-15T10:30:00Z 192.168.0.1 $1,234.56",
    "CamelCaseIdentifier snake_case_identifier kebab-case",
    "don't won't it's I'm they're we've",
    "HTTP/1.1 200 OK\nContent-Type: application/json",
    "a" * 40,
    "!!!???...,,,;;;:::",
    "<|im_start|>user\nhi<|im_end|>",
    "<start_of_turn>user\nhi<end_of_turn>",
    "<bos>text after a bos string",
    "<|endoftext|>",
]
BOTH_FLAGS = {"", " ", "Hello world", " leading space", "\n", "你好，世界！今天天气很好。", "def add(a, b):\n    return a + b\n"}
SPECIAL_TEXTS = {"<|im_start|>user\nhi<|im_end|>", "<start_of_turn>user\nhi<end_of_turn>", "<bos>text after a bos string",
                 "<|endoftext|>"}

LONG_TEXT = (
    "The history of computing is a story of abstraction. Early machines were programmed by rewiring panels and "
    "setting switches; later, stored programs let the same hardware run different instructions read from memory. "
    "Assembly languages gave names to machine operations, and compilers translated higher-level languages such as "
    "FORTRAN and C into those operations. Operating systems hid the details of devices behind files and processes, "
    "and networks connected machines into systems that span the globe. Each layer lets people think about larger "
    "problems without worrying about the layers below. Today, a programmer writing a web application rarely thinks "
    "about transistors, yet every request still travels through"
)


def prompts(model):
    chat = model["chat"]
    return [
        "The capital of France is",
        "Water boils at a temperature of",
        "List of fruits:\n1. Apple\n2. Banana\n3.",
        "The first ten prime numbers are 2, 3, 5, 7,",
        'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n',
        "#include <stdio.h>\n\nint main(void) {\n",
        '{"name": "Alice", "age": 30, "city": ',
        "Once upon a time, in a small village,",
        "one two three one two three one two three one two three",
        "Translate to French: Hello, how are you?\nFrench:",
        "中国的首都是",
        chat("What is the capital of France?"),
        chat("Write a haiku about the sea."),
        LONG_TEXT,
    ]


def top_n(logits):
    """The TOP_N largest (id, logit) pairs, by logit descending then id ascending."""
    idx = np.argpartition(-logits, TOP_N)[: TOP_N * 4]
    order = sorted(idx.tolist(), key=lambda i: (-float(logits[i]), i))[:TOP_N]
    return [[int(i), round(float(logits[i]), 5)] for i in order]


def tokenize_cases(llm, model):
    cases = []
    for text in TEXTS:
        flags = [(False, False)]
        if text in BOTH_FLAGS:
            flags.append((True, False))
        if text in SPECIAL_TEXTS:
            flags = [(False, False), (False, True), (True, False), (True, True)]
            if text != model["special_text"]:
                flags = [(False, False), (False, True)]
        for add_special, parse_special in flags:
            ids = llm.tokenize(text.encode("utf-8"), add_bos=add_special, special=parse_special)
            cases.append({"text": text, "add_special": add_special, "parse_special": parse_special, "ids": ids})
    return cases


def generate_cases(llm, model):
    cases = []
    for prompt in prompts(model):
        ids = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        assert len(ids) + N_GEN <= N_CTX, prompt
        llm.reset()
        llm.eval(ids)
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        prompt_top = top_n(logits)
        steps = []
        for _ in range(N_GEN):
            tok = int(np.argmax(logits))  # ties: lowest id, as Bee's greedy
            steps.append({"token": tok, "top5": top_n(logits)})
            llm.eval([tok])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        tokens = [s["token"] for s in steps]
        cases.append({
            "prompt": prompt,
            "prompt_ids": ids,
            "prompt_top5": prompt_top,
            "tokens": tokens,
            "text": llm.detokenize(tokens).decode("utf-8", errors="replace"),
            "steps": steps,
        })
    return cases


def build_info():
    """Versions of the binding and of the llama.cpp/ggml libraries it loaded."""
    info = {"llama_cpp_python": llama_cpp.__version__}
    lib_dir = os.path.join(os.path.dirname(llama_cpp.__file__), "lib")
    for so, name in (("libggml-base.so", "ggml_version"), ("libggml-base.so", "ggml_commit"),
                     ("libllama.so", "llama_version")):
        try:
            fn = getattr(ctypes.CDLL(os.path.join(lib_dir, so)), name)
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        fn.argtypes = []
        info[name] = fn().decode()
    info["system_info"] = llama_cpp.llama_print_system_info().decode().strip()
    return info


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def dump_compact(data):
    """JSON with one line per top-level key, and one line per element of top-level lists (a few hundred
    lines per file instead of thousands; still diffable per case)."""
    lines = []
    items = list(data.items())
    for k, (key, value) in enumerate(items):
        sep = "," if k + 1 < len(items) else ""
        if isinstance(value, list):
            inner = [json.dumps(v, ensure_ascii=False) for v in value]
            body = ",\n  ".join(inner)
            lines.append(f" {json.dumps(key)}: [\n  {body}\n ]{sep}")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{sep}")
    return "{\n" + "\n".join(lines) + "\n}\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--models", default=os.path.join(HERE, "..", "..", "models"))
    ap.add_argument("--out", default=os.path.join(HERE, "data"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    info = build_info()
    for model in MODELS:
        path = os.path.join(args.models, model["file"])
        if not os.path.exists(path):
            print(f"skip {model['file']}: not found in {args.models}", file=sys.stderr)
            continue
        llm = Llama(path, n_ctx=N_CTX, n_batch=N_BATCH, n_threads=N_THREADS, logits_all=True, verbose=False)
        data = {
            "model": model["file"],
            "model_sha256": sha256(path),
            "build": info,
            "settings": {"n_ctx": N_CTX, "n_batch": N_BATCH, "n_threads": N_THREADS, "n_gen": N_GEN,
                         "sampling": "greedy argmax over raw logits", "top_n": TOP_N},
            "n_vocab": llm.n_vocab(),
            "bos_id": llm.token_bos(),
            "eos_id": llm.token_eos(),
            "tokenize": tokenize_cases(llm, model),
            "generate": generate_cases(llm, model),
        }
        stem = os.path.splitext(model["file"])[0]
        out = os.path.join(args.out, stem + ".json")
        with open(out, "w", encoding="utf-8") as f:
            f.write(dump_compact(data))
        print(f"{out}: {len(data['tokenize'])} tokenize cases, {len(data['generate'])} prompts, "
              f"{os.path.getsize(out)} bytes")
        del llm


if __name__ == "__main__":
    main()
