# tests/server/test_grammar: constrained output (GBNF `grammar`, `json_schema`, `response_format`),
# forced tool calls (tool_choice "required" / a named function) and n > 1 choices, on SmolLM2 through the
# openai client and raw HTTP. The outputs are real model outputs: the grammar only masks tokens, so every
# check below would fail if the mask were not applied (SmolLM2 does not answer in these shapes unasked).
import json
import re

import openai
import pytest

from conftest import http

ASK = [{"role": "user", "content": "Describe a cat called Tom, aged 3, in a few words."}]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key="none")


def test_grammar_forces_a_pattern_native(server):
    grammar = 'root ::= ("yes" | "no") "." '
    status, _, r = server.post("/completion", {"prompt": "Is the sky green? Answer:", "grammar": grammar,
                                               "n_predict": 16, "temperature": 0})
    assert status == 200, r
    assert r["content"] in ("yes.", "no."), r["content"]
    assert r["stop_type"] == "eos"  # the grammar was complete, so only end-of-generation was allowed


def test_grammar_on_oai_completions_with_sampling(client):
    grammar = 'root ::= "(" [0-9]{3} ") " [0-9]{3} "-" [0-9]{4}'
    for seed in (1, 2, 3):
        r = client.completions.create(model="m", prompt="My phone number is", max_tokens=32, temperature=1.0,
                                      seed=seed, extra_body={"grammar": grammar})
        assert re.fullmatch(r"\(\d{3}\) \d{3}-\d{4}", r.choices[0].text), r.choices[0].text
        assert r.choices[0].finish_reason == "stop"


def test_json_object_output_parses(client):
    r = client.chat.completions.create(model="m", messages=ASK, max_tokens=200, temperature=0,
                                       response_format={"type": "json_object"})
    assert r.choices[0].finish_reason == "stop", r.choices[0].message.content
    assert isinstance(json.loads(r.choices[0].message.content), dict)


SCHEMA = {"type": "object",
          "properties": {"name": {"type": "string", "maxLength": 12},
                         "age": {"type": "integer"},
                         "mood": {"enum": ["happy", "sleepy", "grumpy"]},
                         "toys": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 2}},
          "required": ["name", "age", "mood"], "additionalProperties": False}


def check_schema(v):
    """SCHEMA validated by hand (the jsonschema package is not a test dependency)."""
    assert isinstance(v, dict) and set(v) <= {"name", "age", "mood", "toys"} and {"name", "age", "mood"} <= set(v), v
    assert isinstance(v["name"], str) and len(v["name"]) <= 12
    assert isinstance(v["age"], int) and not isinstance(v["age"], bool)
    assert v["mood"] in ("happy", "sleepy", "grumpy")
    if "toys" in v:
        assert isinstance(v["toys"], list) and len(v["toys"]) <= 2
        assert all(isinstance(t, str) and len(t) <= 10 for t in v["toys"])


def test_json_schema_output_validates(client, server):
    r = client.chat.completions.create(
        model="m", messages=ASK, max_tokens=120, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "cat", "schema": SCHEMA, "strict": True}})
    check_schema(json.loads(r.choices[0].message.content))
    # llama-server's own field, with sampling
    status, _, body = server.post("/completion", {"prompt": "A cat as JSON:", "json_schema": SCHEMA, "n_predict": 120,
                                                  "temperature": 0.8, "seed": 7})
    assert status == 200, body
    check_schema(json.loads(body["content"]))


KEYWORDS = {"allOf": [
    {"type": "object", "properties": {"name": {"type": "string", "pattern": "^[A-Z][a-z]{1,9}$"},
                                      "age": {"type": "integer", "minimum": 1, "exclusiveMaximum": 30}},
     "required": ["name", "age"]},
    {"properties": {"born": {"type": "string", "format": "date"}, "id": {"type": "string", "format": "uuid"}},
     "required": ["born", "id"]}]}


def test_json_schema_pattern_range_format_allof(server):
    """pattern, integer bounds, format and allOf hold on real SmolLM2 output, greedy and sampled."""
    for temperature, seed in ((0, 0), (1.0, 3)):
        status, _, r = server.post("/v1/chat/completions", {"messages": ASK, "max_tokens": 120, "seed": seed,
                                                            "temperature": temperature, "json_schema": KEYWORDS})
        assert status == 200, r
        v = json.loads(r["choices"][0]["message"]["content"])
        assert set(v) == {"name", "age", "born", "id"}, v
        assert re.fullmatch(r"[A-Z][a-z]{1,9}", v["name"]) and 1 <= v["age"] < 30, v
        assert re.fullmatch(r"\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])", v["born"]), v
        assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", v["id"]), v


TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "get_time", "description": "Current time in a time zone",
        "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}}]


def test_tool_choice_required_yields_tool_calls(client):
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                       max_tokens=80, temperature=0)
    c = r.choices[0]
    assert c.finish_reason == "tool_calls", c.message.content
    call = c.message.tool_calls[0]
    assert call.function.name in ("get_weather", "get_time")
    args = json.loads(call.function.arguments)
    assert set(args) == ({"city"} if call.function.name == "get_weather" else {"zone"})
    # a named function: that one, with its own argument schema
    r = client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=80, temperature=0,
                                       tool_choice={"type": "function", "function": {"name": "get_time"}})
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "get_time"
    assert json.loads(call.function.arguments)["zone"] in ("UTC", "CET")
    # streaming: the forced call arrives as a tool_calls delta
    deltas, finish = [], None
    for chunk in client.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                                max_tokens=80, temperature=0, stream=True):
        for c in chunk.choices:
            deltas += c.delta.tool_calls or []
            finish = c.finish_reason or finish
    assert finish == "tool_calls" and deltas[0].function.name in ("get_weather", "get_time")
    json.loads(deltas[0].function.arguments)


def test_n_choices_chat_and_stream(client):
    msgs = [{"role": "user", "content": "Say hello."}]
    r = client.chat.completions.create(model="m", messages=msgs, max_tokens=8, temperature=0, n=2)
    assert [c.index for c in r.choices] == [0, 1]
    assert r.choices[0].message.content == r.choices[1].message.content  # greedy: the same text twice
    one = client.chat.completions.create(model="m", messages=msgs, max_tokens=8, temperature=0)
    assert r.usage.completion_tokens == 2 * one.usage.completion_tokens  # summed over the choices
    assert r.usage.prompt_tokens == one.usage.prompt_tokens              # the prompt counted once
    sampled = client.chat.completions.create(model="m", messages=msgs, max_tokens=12, temperature=1.5, n=3, seed=5)
    assert len({c.message.content for c in sampled.choices}) > 1  # seed + i: the choices differ
    again = client.chat.completions.create(model="m", messages=msgs, max_tokens=12, temperature=1.5, n=3, seed=5)
    assert [c.message.content for c in again.choices] == [c.message.content for c in sampled.choices]
    text, finish = {0: "", 1: ""}, {}
    for chunk in client.chat.completions.create(model="m", messages=msgs, max_tokens=8, temperature=0, n=2, stream=True,
                                                stream_options={"include_usage": True}):
        for c in chunk.choices:
            text[c.index] += c.delta.content or ""
            if c.finish_reason:
                finish[c.index] = c.finish_reason
        if chunk.usage:
            assert chunk.usage.completion_tokens == r.usage.completion_tokens
    assert text == {0: r.choices[0].message.content, 1: r.choices[1].message.content}
    assert set(finish) == {0, 1}


def test_n_choices_completions(client, server):
    r = client.completions.create(model="m", prompt="Once upon a time", max_tokens=6, temperature=0, n=2)
    assert [c.index for c in r.choices] == [0, 1] and r.choices[0].text == r.choices[1].text
    assert r.usage.completion_tokens == 12
    status, _, body = server.post("/completion", {"prompt": "Once upon a time", "n_predict": 6, "temperature": 0, "n": 2})
    assert status == 200 and [b["index"] for b in body] == [0, 1] and body[0]["content"] == r.choices[0].text


def test_several_prompts(client, server):
    """An array of prompts (strings, token arrays or mixed) is answered prompt by prompt, as llama-server does;
    each result is what the prompt alone gives."""
    def alone(prompt):
        return server.post("/completion", {"prompt": prompt, "n_predict": 5, "temperature": 0})[2]["content"]
    ids = server.post("/tokenize", {"content": "The sky is"})[2]["tokens"]
    prompts = ["Once upon a time", ids, [ids[0], " cat"]]
    status, _, body = server.post("/completion", {"prompt": prompts, "n_predict": 5, "temperature": 0})
    assert status == 200 and [b["index"] for b in body] == [0, 1, 2]
    assert [b["content"] for b in body] == [alone(p) for p in prompts]
    r = client.completions.create(model="m", prompt=["Once upon a time", "The sky is"], max_tokens=4, temperature=0, n=2)
    assert [c.index for c in r.choices] == [0, 1, 2, 3]
    assert r.choices[0].text == r.choices[1].text and r.choices[2].text == r.choices[3].text != r.choices[0].text
    n1 = len(server.post("/tokenize", {"content": "Once upon a time"})[2]["tokens"])
    assert r.usage.prompt_tokens == n1 + len(ids) and r.usage.completion_tokens == 16  # each prompt counted once
    stream = client.completions.create(model="m", prompt=["Once upon a time", "The sky is"], max_tokens=4,
                                       temperature=0, stream=True, stream_options={"include_usage": True})
    text, usage = {}, None
    for chunk in stream:
        for c in chunk.choices:
            text[c.index] = text.get(c.index, "") + c.text
        usage = chunk.usage or usage
    assert text == {0: r.choices[0].text, 1: r.choices[2].text} and usage.prompt_tokens == n1 + len(ids)
    for bad, needle in ((["a", 3, ["b"]], "mixes"), ([["a", ["b"]]], "deeper"), (["x"] * 17, "at most 16")):
        status, _, j = server.post("/completion", {"prompt": bad, "n_predict": 1})
        assert status == 400 and needle in j["error"]["message"], (bad, j)


@pytest.mark.parametrize("body,needle", [
    ({"grammar": 'root ::= "a'}, "line 1, column 10: unterminated string literal"),
    ({"grammar": "root ::= item"}, "undefined rule 'item'"),
    ({"grammar": "root ::= \"a\"", "json_schema": {"type": "string"}}, "Cannot use both json_schema and grammar"),
    ({"json_schema": {"type": "string", "pattern": "^(a)\\1$"}}, "the escape '\\1'"),
    ({"json_schema": {"type": "string", "format": "email"}}, "unsupported 'format' \"email\""),
    ({"json_schema": {"type": "number", "maximum": 3}}, "'maximum' on type 'number'"),
    ({"json_schema": {"allOf": [{"type": "string"}, {"type": "integer"}]}}, "'allOf' with 'type'"),
    ({"response_format": {"type": "xml"}}, "'response_format' must be"),
    ({"n": 17}, "'n' is 17 but must be in [1, 16]"),
    ({"tools": TOOLS, "tool_choice": {"type": "function", "function": {"name": "nope"}}}, "'nope', which is not in 'tools'"),
    ({"tool_choice": "required"}, "needs a non-empty 'tools' list"),
])
def test_bad_constraints_are_400(server, body, needle):
    status, _, r = server.post("/v1/chat/completions", {"messages": ASK, "max_tokens": 4, **body})
    assert status == 400, r
    assert needle in r["error"]["message"], r["error"]["message"]
    assert r["error"]["type"] == "invalid_request_error"


def test_tool_choice_required_hermes_parallel():
    """In the Hermes format the grammar allows several <tool_call> blocks; SmolLM2, asked about two
    cities, writes two calls that the parser returns."""
    from conftest import Server
    from test_tools import HERMES_TEMPLATE
    s = Server("-c", "1024", "-np", "1", "--chat-template", HERMES_TEMPLATE)
    try:
        c = openai.OpenAI(base_url=s.url("/v1"), api_key="none")
        r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "What is the weather in Paris and in Rome?"}],
                                      tools=TOOLS, tool_choice="required", max_tokens=120, temperature=0)
        calls = r.choices[0].message.tool_calls
        assert r.choices[0].finish_reason == "tool_calls"
        assert [(x.function.name, json.loads(x.function.arguments)) for x in calls] == [
            ("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Rome"})]
    finally:
        s.stop()


def test_tool_choice_required_mistral_args():
    """Mistral Small 3.2's template teaches [TOOL_CALLS]name[ARGS]{json}: the forcing grammar writes that
    shape (SmolLM2 has no [TOOL_CALLS] control token, so the markers are text here; the whole-token path
    for vocabularies that have them is tested in tests/unit/sample/grammar_token_test.cpp)."""
    from conftest import ROOT, Server
    tmpl = ROOT / "tests" / "data" / "chat_templates" / "Mistral-Small-3.2-24B-Instruct-2506.jinja"
    s = Server("-c", "2048", "-np", "1", "--chat-template-file", str(tmpl))
    try:
        c = openai.OpenAI(base_url=s.url("/v1"), api_key="none")
        msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
        # one call (with parallel calls on, SmolLM2 keeps writing [TOOL_CALLS] segments until max_tokens)
        r = c.chat.completions.create(model="m", messages=msgs, tools=TOOLS, tool_choice="required",
                                      parallel_tool_calls=False, max_tokens=80, temperature=0)
        ch = r.choices[0]
        assert ch.finish_reason == "tool_calls" and ch.message.content in (None, ""), ch
        call = ch.message.tool_calls[0]
        assert call.function.name in ("get_weather", "get_time")
        assert set(json.loads(call.function.arguments)) == ({"city"} if call.function.name == "get_weather" else {"zone"})
        r = c.chat.completions.create(model="m", messages=msgs, tools=TOOLS, max_tokens=80, temperature=0,
                                      tool_choice={"type": "function", "function": {"name": "get_time"}})
        call = r.choices[0].message.tool_calls[0]
        assert call.function.name == "get_time" and json.loads(call.function.arguments)["zone"] in ("UTC", "CET")
        # the raw text really is the [ARGS] form (native endpoint, parsing off)
        status, _, raw = s.post("/v1/chat/completions", {"messages": msgs, "tools": TOOLS, "tool_choice": "required",
                                                          "parallel_tool_calls": False, "parse_tool_calls": False, "max_tokens": 80, "temperature": 0})
        assert status == 200, raw
        assert re.fullmatch(r"\[TOOL_CALLS\](get_weather|get_time)\[ARGS\]\{.*\}", raw["choices"][0]["message"]["content"], re.S), raw
    finally:
        s.stop()
