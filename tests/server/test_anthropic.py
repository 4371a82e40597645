# tests/server/test_anthropic: the Anthropic Messages API (/v1/messages, /v1/messages/count_tokens)
# through the official `anthropic` client and raw SSE: replies equal to the same conversation through
# /v1/chat/completions, usage equal to /tokenize of the rendered prompt, stop reasons, forced tool_use,
# tool_result turns, thinking blocks, and errors in Anthropic's shape.
import json
import urllib.request

import anthropic
import pytest

from conftest import Server, chat_greedy, prompt_tokens

TOOLS = [{"name": "get_weather", "description": "Current weather in a city",
          "input_schema": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                           "required": ["city"]}},
         {"name": "get_time", "description": "Current time in a time zone",
          "input_schema": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}]
ASK = [{"role": "user", "content": "What is the capital of France?"}]
GREEDY = {"temperature": 0}  # the current client has no sampling arguments; the API and the server take it


@pytest.fixture(scope="module")
def client(server):
    return anthropic.Anthropic(base_url=server.url(""), api_key="unused", max_retries=0)


def sse_events(server, body):
    """Raw SSE of a streaming request: [(event name, data)]; every data's type equals its event name."""
    req = urllib.request.Request(server.url("/v1/messages"), data=json.dumps({**body, "stream": True}).encode(),
                                 headers={"Content-Type": "application/json"})
    events, name = [], None
    with urllib.request.urlopen(req, timeout=120) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        for line in r.read().decode().splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                assert data["type"] == name, (name, data)
                events.append((name, data))
    return events


def text_of(msg):
    return "".join(b.text for b in msg.content if b.type == "text")


def test_text_reply_equals_chat_completion(server, client):
    m = client.messages.create(model="x", max_tokens=16, messages=ASK, extra_body=GREEDY)
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.content[0].type == "text" and m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None
    c = chat_greedy(server, ASK, max_tokens=16)
    assert text_of(m) == c["choices"][0]["message"]["content"]
    assert m.usage.output_tokens == c["usage"]["completion_tokens"]
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == prompt_tokens(server, ASK)
    assert m.stop_reason == {"stop": "end_turn", "length": "max_tokens"}[c["choices"][0]["finish_reason"]]


def test_system_prompt_string_and_blocks(server, client):
    system = "You are a geography teacher. Answer in one short sentence."
    c = chat_greedy(server, [{"role": "system", "content": system}, *ASK], max_tokens=20)
    expected = c["choices"][0]["message"]["content"]
    m = client.messages.create(model="x", max_tokens=20, system=system, messages=ASK, extra_body=GREEDY)
    assert text_of(m) == expected
    blocks = [{"type": "text", "text": system[:20]}, {"type": "text", "text": system[20:]}]
    m = client.messages.create(model="x", max_tokens=20, system=blocks, messages=ASK, extra_body=GREEDY)
    assert text_of(m) == expected
    n = prompt_tokens(server, [{"role": "system", "content": system}, *ASK])
    assert client.messages.count_tokens(model="x", system=system, messages=ASK).input_tokens == n
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == n


def test_stream_events_and_text(server, client):
    full = client.messages.create(model="x", max_tokens=16, messages=ASK, extra_body=GREEDY)
    events = sse_events(server, {"max_tokens": 16, "messages": ASK, "temperature": 0})
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["output_tokens"] == 0
    assert start["usage"]["input_tokens"] == prompt_tokens(server, ASK)
    assert names[1] == "content_block_start" and events[1][1]["index"] == 0
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    deltas = [d for n, d in events if n == "content_block_delta"]
    assert all(d["index"] == 0 and d["delta"]["type"] == "text_delta" for d in deltas)
    assert "".join(d["delta"]["text"] for d in deltas) == text_of(full)
    assert names[-3] == "content_block_stop" and events[-3][1]["index"] == 0
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == full.stop_reason and delta["usage"]["output_tokens"] == full.usage.output_tokens
    # the client's own stream accumulation gives the same message
    with client.messages.stream(model="x", max_tokens=16, messages=ASK, extra_body=GREEDY) as s:
        final = s.get_final_message()
    assert text_of(final) == text_of(full) and final.stop_reason == full.stop_reason
    assert final.usage.output_tokens == full.usage.output_tokens


def test_stop_sequence_and_max_tokens(client):
    full = text_of(client.messages.create(model="x", max_tokens=16, messages=ASK, extra_body=GREEDY))
    word = full.split()[2]
    m = client.messages.create(model="x", max_tokens=16, messages=ASK, extra_body=GREEDY, stop_sequences=[word])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == word
    assert text_of(m) == full[:full.index(word)]
    story = [{"role": "user", "content": "Write a long story about a dragon."}]
    m = client.messages.create(model="x", max_tokens=3, messages=story, extra_body=GREEDY)
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 3


def test_forced_tool_use(client):
    ask = [{"role": "user", "content": "What time is it in Paris?"}]
    m = client.messages.create(model="x", max_tokens=80, messages=ask, tools=TOOLS, extra_body=GREEDY,
                               tool_choice={"type": "tool", "name": "get_time"})
    assert m.stop_reason == "tool_use"
    uses = [b for b in m.content if b.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "get_time" and uses[0].input["zone"] in ("UTC", "CET")
    assert uses[0].id
    m = client.messages.create(model="x", max_tokens=80, messages=ask, tools=TOOLS, extra_body=GREEDY,
                               tool_choice={"type": "any"})
    use = next(b for b in m.content if b.type == "tool_use")
    assert m.stop_reason == "tool_use" and use.name in ("get_weather", "get_time") and isinstance(use.input, dict)
    # streamed: a tool_use block whose input_json_delta pieces join into the same JSON input
    with client.messages.stream(model="x", max_tokens=80, messages=ask, tools=TOOLS, extra_body=GREEDY,
                                tool_choice={"type": "tool", "name": "get_time"}) as s:
        final = s.get_final_message()
    streamed = next(b for b in final.content if b.type == "tool_use")
    assert final.stop_reason == "tool_use" and streamed.name == "get_time" and streamed.input == uses[0].input


def test_forced_tool_stream_block_indices(server):
    body = {"max_tokens": 80, "messages": [{"role": "user", "content": "Weather in Oslo?"}], "tools": TOOLS,
            "tool_choice": {"type": "tool", "name": "get_weather"}, "temperature": 0}
    events = sse_events(server, body)
    starts = [d for n, d in events if n == "content_block_start"]
    stops = [d["index"] for n, d in events if n == "content_block_stop"]
    assert [d["index"] for d in starts] == list(range(len(starts))) == stops
    tool = next(d for d in starts if d["content_block"]["type"] == "tool_use")
    assert tool["content_block"]["name"] == "get_weather" and tool["content_block"]["input"] == {}
    parts = [d["delta"]["partial_json"] for n, d in events
             if n == "content_block_delta" and d["index"] == tool["index"]]
    assert isinstance(json.loads("".join(parts))["city"], str)
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"


TOOL_TURNS = [
    {"role": "user", "content": "What is the weather in Oslo?"},
    {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
                                      {"type": "tool_use", "id": "toolu_1", "name": "get_weather",
                                       "input": {"city": "Oslo"}}]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                  "content": [{"type": "text", "text": "Sunny, 21 C"}]},
                                 {"type": "text", "text": "Answer in one sentence."}]},
]
TOOL_TURNS_OAI = [
    {"role": "user", "content": "What is the weather in Oslo?"},
    {"role": "assistant", "content": "Let me check.", "tool_calls": [
        {"id": "toolu_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]},
    {"role": "tool", "tool_call_id": "toolu_1", "content": "Sunny, 21 C"},
    {"role": "user", "content": "Answer in one sentence."},
]


def test_tool_result_turns_render_as_chat(server, client):
    oai_tools = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                   "parameters": t["input_schema"]}} for t in TOOLS]
    n = prompt_tokens(server, TOOL_TURNS_OAI, tools=oai_tools)
    assert client.messages.count_tokens(model="x", messages=TOOL_TURNS, tools=TOOLS).input_tokens == n
    m = client.messages.create(model="x", max_tokens=24, messages=TOOL_TURNS, tools=TOOLS, extra_body=GREEDY)
    c = chat_greedy(server, TOOL_TURNS_OAI, tools=oai_tools, max_tokens=24)
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == c["usage"]["prompt_tokens"] == n
    assert m.usage.output_tokens == c["usage"]["completion_tokens"]
    assert text_of(m) == (c["choices"][0]["message"]["content"] or "")


def test_count_tokens_and_empty_messages(server):
    status, _, r = server.post("/v1/messages/count_tokens", {"model": "x", "messages": ASK})
    assert status == 200 and r == {"input_tokens": prompt_tokens(server, ASK)}
    # llama-server accepts an empty conversation (the template renders only its own preamble)
    status, _, r = server.post("/v1/messages", {"max_tokens": 4, "messages": [], "temperature": 0})
    assert status == 200 and r["type"] == "message"


@pytest.mark.parametrize("body, needle", [
    ({"max_tokens": 8}, "'messages' is required"),
    ({"max_tokens": 8, "messages": "hi"}, "'messages' must be an array"),
    ({"max_tokens": "ten", "messages": ASK}, "'max_tokens' must be an integer"),
    ({"max_tokens": 0, "messages": ASK}, "'max_tokens' is 0"),
    ({"messages": [{"role": "user", "content": 5}]}, "messages[0].content must be"),
    ({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}, "messages[0].content[0].type must be a string"),
    ({"messages": [{"role": "user", "content": [{"type": "text", "text": 1}]}]}, "content[0].text must be a string"),
    ({"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "not supported"),
    ({"messages": ASK, "system": 7}, "'system' must be"),
    ({"messages": ASK, "stop_sequences": "x"}, "'stop_sequences' must be an array of strings"),
    ({"messages": ASK, "tools": TOOLS, "tool_choice": {"type": "sometimes"}}, "tool_choice.type 'sometimes'"),
    ({"messages": ASK, "tools": [{"name": "f", "input_schema": "x"}]}, "tools[0].input_schema must be an object"),
    ({"messages": ASK, "tool_choice": {"type": "any"}}, "needs a non-empty 'tools' list"),
    ({"messages": ASK, "temperature": "hot"}, "'temperature' must be a number"),
])
def test_bad_requests_in_anthropic_shape(server, body, needle):
    status, _, r = server.post("/v1/messages", body)
    assert status == 400, r
    assert r["type"] == "error" and r["error"]["type"] == "invalid_request_error"
    assert needle in r["error"]["message"], r


def test_client_errors_and_api_key(client, keyed_server):
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(model="x", max_tokens=8, messages=[{"role": "user", "content": 5}])
    assert "messages[0].content" in str(e.value)
    keyed = anthropic.Anthropic(base_url=keyed_server.url(""), api_key="sekrit", max_retries=0)  # sent as x-api-key
    assert keyed.messages.count_tokens(model="x", messages=ASK).input_tokens > 0
    with pytest.raises(anthropic.AuthenticationError):
        anthropic.Anthropic(base_url=keyed_server.url(""), api_key="wrong", max_retries=0).messages.count_tokens(
            model="x", messages=ASK)


# ChatML whose generation prompt opens a think block: every generated token is reasoning.
THINK_TEMPLATE = ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                  "{%- if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}")


@pytest.fixture(scope="module")
def think_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("tmpl") / "think.jinja"
    path.write_text(THINK_TEMPLATE)
    s = Server("-c", "1024", "-np", "1", "--chat-template-file", path)
    yield s
    s.stop()


def test_thinking_blocks(think_server):
    body = {"max_tokens": 6, "messages": ASK, "temperature": 0}
    status, _, m = think_server.post("/v1/messages", body)
    assert status == 200 and m["content"][0]["type"] == "thinking" and m["content"][0]["signature"] == ""
    events = sse_events(think_server, body)
    assert events[1][1]["content_block"]["type"] == "thinking"
    thinking = "".join(d["delta"]["thinking"] for n, d in events
                       if n == "content_block_delta" and d["delta"]["type"] == "thinking_delta")
    assert thinking == m["content"][0]["thinking"]
    kinds = [d["delta"]["type"] for n, d in events if n == "content_block_delta"]
    assert kinds[-1] == "signature_delta" and events[-3][0] == "content_block_stop"
