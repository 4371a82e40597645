# tests/server/test_mistral_tools: Mistral's [TOOL_CALLS]name[ARGS]{...} calls end to end, on a vocabulary
# where the markers are control tokens (as in real Mistral GGUFs). Control tokens are dropped from reply
# text, so the server must decode these markers as text for the parser to see the call. No Mistral model
# is available here: the fixture writes a tiny llama model with seeded random weights whose vocabulary is
# SmolLM2's plus [TOOL_CALLS] and [ARGS] as control tokens. tool_choice "required" makes the grammar
# force the call, so the output is deterministic in shape whatever the weights say.
import json

import numpy as np
import openai
import pytest

from conftest import SMOLLM, Server

gguf = pytest.importorskip("gguf", reason="the gguf package is installed by scripts/setup.sh")

TEMPLATE = (
    "{%- for m in messages %}"
    "{%- if m.role == 'assistant' and m.tool_calls %}"
    "{%- for c in m.tool_calls %}[TOOL_CALLS]{{ c.function.name }}[ARGS]{{ c.function.arguments }}{%- endfor %}"
    "{%- else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "enum": ["Paris", "Oslo"]}},
                   "required": ["city"]}}}]


def string_field(reader, key):
    f = reader.fields[key]
    return bytes(f.parts[f.data[0]]).decode()


def write_tiny_mistral(path, extra=("[TOOL_CALLS]", "[ARGS]")):
    """A 2-layer llama (n_embd 64) with SmolLM2's BPE vocabulary plus `extra` as control tokens."""
    src = gguf.GGUFReader(str(SMOLLM))
    tokens = [bytes(src.fields["tokenizer.ggml.tokens"].parts[i]).decode()
              for i in src.fields["tokenizer.ggml.tokens"].data]
    types = [int(src.fields["tokenizer.ggml.token_type"].parts[i][0]) for i in src.fields["tokenizer.ggml.token_type"].data]
    merges = [bytes(src.fields["tokenizer.ggml.merges"].parts[i]).decode() for i in src.fields["tokenizer.ggml.merges"].data]
    tokens += list(extra)
    types += [gguf.TokenType.CONTROL] * len(extra)
    n_embd, n_ff, n_head, n_head_kv, n_layer, n_vocab = 64, 128, 4, 2, 2, len(tokens)
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(2048)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_rope_freq_base(10000.0)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(string_field(src, "tokenizer.ggml.pre"))
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
    w.add_chat_template(TEMPLATE)
    rng = np.random.default_rng(7)

    def t(name, *shape):  # numpy shape is (rows, cols) = (n_out, n_in)
        w.add_tensor(name, (rng.standard_normal(shape) * 0.05).astype(np.float32))

    t("token_embd.weight", n_vocab, n_embd)
    w.add_tensor("output_norm.weight", np.ones(n_embd, dtype=np.float32))
    hd = n_embd // n_head
    for i in range(n_layer):
        w.add_tensor(f"blk.{i}.attn_norm.weight", np.ones(n_embd, dtype=np.float32))
        w.add_tensor(f"blk.{i}.ffn_norm.weight", np.ones(n_embd, dtype=np.float32))
        t(f"blk.{i}.attn_q.weight", n_embd, n_embd)
        t(f"blk.{i}.attn_k.weight", n_head_kv * hd, n_embd)
        t(f"blk.{i}.attn_v.weight", n_head_kv * hd, n_embd)
        t(f"blk.{i}.attn_output.weight", n_embd, n_embd)
        t(f"blk.{i}.ffn_gate.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_up.weight", n_ff, n_embd)
        t(f"blk.{i}.ffn_down.weight", n_embd, n_ff)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


@pytest.fixture(scope="module")
def mistral(tmp_path_factory):
    path = tmp_path_factory.mktemp("mistral") / "tiny-mistral.gguf"
    write_tiny_mistral(path)
    s = Server("-c", "1024", "-np", "1", model=path)
    yield s, openai.OpenAI(base_url=s.url("/v1"), api_key="unused")
    s.stop()


def ask(**kw):
    return dict(model="tiny", messages=[{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS,
                tool_choice="required", parallel_tool_calls=False, max_tokens=64, temperature=0, **kw)


def test_markers_are_control_tokens(mistral):
    s, _ = mistral
    status, _, j = s.post("/tokenize", {"content": "[TOOL_CALLS]get_weather[ARGS]", "with_pieces": True})
    assert status == 200
    ids = [t["id"] if isinstance(t, dict) else t for t in j["tokens"]]
    assert ids[0] == 49152 and 49153 in ids  # whole tokens, not spelled out


def test_forced_call_is_parsed(mistral):
    _, client = mistral
    r = client.chat.completions.create(**ask())
    msg = r.choices[0].message
    assert r.choices[0].finish_reason == "tool_calls", msg
    assert len(msg.tool_calls) == 1
    assert msg.tool_calls[0].function.name == "get_weather"
    assert json.loads(msg.tool_calls[0].function.arguments)["city"] in ("Paris", "Oslo")
    assert not msg.content  # the markers went to the parser, not into the content


def test_forced_call_streams(mistral):
    _, client = mistral
    name, args, content, reasons = "", "", "", []
    for chunk in client.chat.completions.create(**ask(), stream=True):
        if not chunk.choices:
            continue
        d = chunk.choices[0].delta
        content += d.content or ""
        for c in d.tool_calls or []:
            name += c.function.name or ""
            args += c.function.arguments or ""
        reasons.append(chunk.choices[0].finish_reason)
    assert name == "get_weather"
    assert json.loads(args)["city"] in ("Paris", "Oslo")
    assert "[TOOL_CALLS]" not in content and "[ARGS]" not in content
    assert reasons[-1] == "tool_calls"
