# tests/server/test_gemma: the server on Gemma 3 270M (gemma3 architecture, SPM tokenizer). Its GGUF has
# no chat template, so the built-in gemma template is chosen from the vocabulary's turn markers.
from conftest import GEMMA, Server


def test_gemma_chat_uses_builtin_template():
    s = Server("-c", "1024", "-np", "1", model=GEMMA)
    try:
        p = s.post("/apply-template", {"messages": [{"role": "user", "content": "Hi"}]})[2]["prompt"]
        assert p == "<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"  # BOS is added by the tokenizer
        r = s.post("/v1/chat/completions", {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 5,
                                            "temperature": 0, "ignore_eos": True})
        assert r[0] == 200 and r[2]["usage"]["completion_tokens"] == 5
        ids = s.post("/tokenize", {"content": "Hello world", "add_special": True})[2]["tokens"]
        assert ids[0] == 2 and s.post("/detokenize", {"tokens": ids[1:]})[2]["content"] == "Hello world"
    finally:
        s.stop()
