# tests/server/test_infill: POST /infill builds llama-server's fill-in-the-middle prompt — the repository
# form ([FIM_REP] project, [FIM_SEP] file per extra chunk, then the current file) when the vocabulary has
# those tokens, [FIM_PRE] prefix + typed prompt [FIM_SUF] suffix [FIM_MID] — and generates like
# /completion (stream too); a model without FIM tokens gets a 501. The model is a tiny llama with random
# weights whose vocabulary is SmolLM2's plus the FIM tokens of Qwen2.5-Coder's naming, as control tokens
# (SmolLM2's own StarCoder-style <reponame> comes first in id order, so it is the repository token, as
# llama.cpp's detection would pick it too).
import json

import pytest

from conftest import Server
from test_mistral_tools import write_tiny_mistral

FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>", "<|repo_name|>", "<|file_sep|>")


@pytest.fixture(scope="module")
def coder(tmp_path_factory):
    path = tmp_path_factory.mktemp("fim") / "tiny-fim.gguf"
    write_tiny_mistral(path, extra=FIM)
    s = Server("-c", "4096", "-np", "1", "-b", "1024", model=path)  # room for extra context: n_ctx - n_batch
    yield s
    s.stop()


BODY = {"input_prefix": "def add(a, b):\n", "input_suffix": "\n\nprint(add(1, 2))\n", "prompt": "    return",
        "n_predict": 4, "temperature": 0}


def test_prompt_layout(coder):
    code, _, j = coder.post("/infill", BODY)
    assert code == 200, j
    assert j["prompt"] == ("<reponame>myproject\n<|file_sep|>filename\n<|fim_prefix|>def add(a, b):\n    return"
                           "<|fim_suffix|>\n\nprint(add(1, 2))\n<|fim_middle|>")
    assert j["tokens_predicted"] <= 4  # random weights: an end-of-generation token may come first
    code, _, j = coder.post("/infill", {**BODY, "input_extra": [{"filename": "util.py", "text": "X = 1\n"}]})
    assert code == 200, j
    assert j["prompt"].startswith("<reponame>myproject\n<|file_sep|>util.py\nX = 1\n<|file_sep|>filename\n"
                                  "<|fim_prefix|>")


def test_stream_matches(coder):
    code, _, whole = coder.post("/infill", BODY)
    status, _, text = coder.post("/infill", {**BODY, "stream": True})
    chunks = [json.loads(e[6:]) for e in text.split("\n\n") if e.startswith("data: {")]
    assert "".join(c["content"] for c in chunks) == whole["content"]
    assert chunks[-1]["stop"] is True


def test_truncation(coder):
    # the prefix keeps its last 3/4 of -b (768) tokens, the suffix its first -b/4 minus the typed prompt and 2
    long = {"input_prefix": "x = 1\n" * 400, "input_suffix": "y = 2\n" * 400, "prompt": "", "n_predict": 1}
    code, _, j = coder.post("/infill", long)
    assert code == 200, j
    pre = j["prompt"].split("<|fim_prefix|>")[1].split("<|fim_suffix|>")[0]
    suf = j["prompt"].split("<|fim_suffix|>")[1].split("<|fim_middle|>")[0]
    assert len(coder.post("/tokenize", {"content": pre})[2]["tokens"]) == 768
    assert len(coder.post("/tokenize", {"content": suf})[2]["tokens"]) == 254
    assert pre.endswith("x = 1\n") and suf.startswith("y = 2\n")


def test_errors(coder, server):
    code, _, j = server.post("/infill", BODY)  # SmolLM2 has no FIM tokens
    assert code == 501 and j["error"]["type"] == "not_supported_error" and "Infill" in j["error"]["message"]
    for bad, key in (({"input_prefix": 3}, "input_prefix"), ({"input_extra": "x"}, "input_extra"),
                     ({"input_extra": [{"text": 1}]}, "text"), ({"input_extra": [{}]}, "text"),
                     ({"input_extra": [{"filename": "ok"}]}, "text"),  # as llama-server: text is required
                     ({"input_extra": [{"filename": 1, "text": "x"}]}, "filename")):
        code, _, j = coder.post("/infill", {**BODY, **bad})
        assert code == 400 and key in j["error"]["message"], (bad, j)
