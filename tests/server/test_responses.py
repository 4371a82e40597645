# tests/server/test_responses: the OpenAI Responses API (/v1/responses, /v1/responses/input_tokens)
# through the `openai` client's responses.create and raw SSE: output equal to the same conversation
# through /v1/chat/completions, usage equal to /tokenize of the rendered prompt, the event sequence,
# forced function calls, function_call_output turns, text.format, and 400s for bad fields.
import json
import urllib.request

import openai
import pytest

from conftest import chat_greedy, prompt_tokens

TOOLS = [{"type": "function", "name": "get_weather", "description": "Current weather in a city",
          "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                         "required": ["city"]}},
         {"type": "function", "name": "get_time", "description": "Current time in a time zone",
          "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}}, "required": ["zone"]}}]
ASK = "What is the capital of France?"


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url("/v1"), api_key="unused", max_retries=0)


def sse_events(server, body):
    """Raw SSE of a streaming request: [data]; each event name equals its data's type."""
    req = urllib.request.Request(server.url("/v1/responses"), data=json.dumps({**body, "stream": True}).encode(),
                                 headers={"Content-Type": "application/json"})
    events, name = [], None
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
                assert data["type"] == name, (name, data)
                events.append(data)
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    return events


def test_text_equals_chat_completion(server, client):
    r = client.responses.create(model="x", input=ASK, max_output_tokens=16, temperature=0)
    assert r.id.startswith("resp_") and r.object == "response"
    assert r.output[0].type == "message" and r.output[0].id.startswith("msg_")
    msgs = [{"role": "user", "content": ASK}]
    c = chat_greedy(server, msgs, max_tokens=16)
    assert r.output_text == c["choices"][0]["message"]["content"]
    assert r.usage.output_tokens == c["usage"]["completion_tokens"]
    assert r.usage.input_tokens == prompt_tokens(server, msgs)
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    finished = c["choices"][0]["finish_reason"] == "stop"
    assert r.status == ("completed" if finished else "incomplete")


def test_instructions_and_message_items(server, client):
    system = "You are a geography teacher. Answer in one short sentence."
    expected = chat_greedy(server, [{"role": "system", "content": system}, {"role": "user", "content": ASK}],
                    max_tokens=20)["choices"][0]["message"]["content"]
    r = client.responses.create(model="x", instructions=system, input=ASK, max_output_tokens=20, temperature=0)
    assert r.output_text == expected
    items = [{"role": "developer", "content": system},
             {"type": "message", "role": "user", "content": [{"type": "input_text", "text": ASK}]}]
    assert client.responses.create(model="x", input=items, max_output_tokens=20, temperature=0).output_text == expected


def test_max_output_tokens_incomplete(client):
    r = client.responses.create(model="x", input="Write a long story about a dragon.", max_output_tokens=3,
                                temperature=0)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 3


def test_stream_with_client_and_raw(server, client):
    full = client.responses.create(model="x", input=ASK, max_output_tokens=16, temperature=0)
    text, resp_id, msg_id, completed = "", None, None, None
    for ev in client.responses.create(model="x", input=ASK, max_output_tokens=16, temperature=0, stream=True):
        if ev.type == "response.created":
            resp_id = ev.response.id
        elif ev.type == "response.output_item.added":
            msg_id = ev.item.id
        elif ev.type == "response.output_text.delta":
            assert ev.item_id == msg_id and ev.output_index == 0
            text += ev.delta
        elif ev.type == "response.completed":
            completed = ev.response
    assert resp_id.startswith("resp_") and msg_id.startswith("msg_")
    assert text == full.output_text == completed.output_text and completed.id == resp_id
    assert completed.usage.output_tokens == full.usage.output_tokens
    types = [e["type"] for e in sse_events(server, {"input": ASK, "max_output_tokens": 16, "temperature": 0})]
    n = types.count("response.output_text.delta")
    assert types == (["response.created", "response.in_progress", "response.output_item.added",
                      "response.content_part.added"] + ["response.output_text.delta"] * n +
                     ["response.output_text.done", "response.content_part.done", "response.output_item.done",
                      "response.completed"])


def test_progress_and_timings(server):
    events = sse_events(server, {"input": "This is a test. " * 10, "max_output_tokens": 4, "temperature": 0,
                                 "return_progress": True, "timings_per_token": True})
    progress = [e for e in events if "prompt_progress" in e]
    assert progress and all(e["type"] == "response.in_progress" for e in progress)
    assert any("timings" in e for e in events if e["type"] == "response.output_text.delta")
    assert "timings" in events[-1] and events[-1]["type"] == "response.completed"


def test_forced_function_call(client):
    ask = "What time is it in Paris?"
    r = client.responses.create(model="x", input=ask, tools=TOOLS, max_output_tokens=80, temperature=0,
                                tool_choice={"type": "function", "name": "get_time"})
    calls = [o for o in r.output if o.type == "function_call"]
    assert len(calls) == 1 and calls[0].name == "get_time" and calls[0].id.startswith("fc_")
    assert json.loads(calls[0].arguments)["zone"] in ("UTC", "CET") and calls[0].call_id
    # streamed: added → arguments delta → arguments done → item done, and the same call in response.completed
    events = list(client.responses.create(model="x", input=ask, tools=TOOLS, max_output_tokens=80, temperature=0,
                                          tool_choice="required", stream=True))
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    deltas = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert deltas == done.arguments and isinstance(json.loads(done.arguments), dict)
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert [o.name for o in final.output if o.type == "function_call"] == [done.name]


TOOL_TURNS = [
    {"role": "user", "content": "What is the weather in Oslo?"},
    {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Oslo"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "Sunny, 21 C"},
    {"role": "user", "content": "Answer in one sentence."},
]
TOOL_TURNS_OAI = [
    {"role": "user", "content": "What is the weather in Oslo?"},
    {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"},
    {"role": "user", "content": "Answer in one sentence."},
]


def test_function_call_output_turns(server, client):
    oai_tools = [{"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters")}}
                 for t in TOOLS]
    n = prompt_tokens(server, TOOL_TURNS_OAI, tools=oai_tools)
    status, _, r = server.post("/v1/responses/input_tokens", {"input": TOOL_TURNS, "tools": TOOLS})
    assert status == 200 and r == {"object": "response.input_tokens", "input_tokens": n}
    res = client.responses.create(model="x", input=TOOL_TURNS, tools=TOOLS, max_output_tokens=24, temperature=0)
    c = chat_greedy(server, TOOL_TURNS_OAI, tools=oai_tools, max_tokens=24)
    assert res.usage.input_tokens == c["usage"]["prompt_tokens"] == n
    assert res.output_text == (c["choices"][0]["message"]["content"] or "")


def test_text_format_json_schema(client):
    schema = {"type": "object", "properties": {"capital": {"type": "string", "maxLength": 20}},
              "required": ["capital"], "additionalProperties": False}
    r = client.responses.create(model="x", input=ASK, max_output_tokens=40, temperature=0,
                                text={"format": {"type": "json_schema", "name": "answer", "schema": schema}})
    assert set(json.loads(r.output_text)) == {"capital"}


@pytest.mark.parametrize("body, needle", [
    ({}, "'input' is required"),
    ({"input": 5}, "'input' must be a string or an array of items"),
    ({"input": [5]}, "input[0] must be an object"),
    ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type 'item_reference' is not supported"),
    ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "not supported"),
    ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role 'robot'"),
    ({"input": [{"type": "function_call_output", "call_id": "c", "output": 3}]}, "input[0].output must be"),
    ({"input": "hi", "previous_response_id": "resp_1"}, "'previous_response_id' is not supported"),
    ({"input": "hi", "tools": {"a": 1}}, "'tools' must be an array"),
    ({"input": "hi", "tools": [{"type": "function", "name": 3}]}, "tools[0].name must be a string"),
    ({"input": "hi", "tool_choice": "required"}, "needs a non-empty 'tools' list"),
    ({"input": "hi", "max_output_tokens": "many"}, "'max_output_tokens' must be an integer"),
    ({"input": "hi", "text": {"format": {"type": "xml"}}}, "text.format.type 'xml'"),
    ({"input": "hi", "temperature": "hot"}, "'temperature' must be a number"),
])
def test_bad_requests(server, body, needle):
    status, _, r = server.post("/v1/responses", body)
    assert status == 400, r
    assert r["error"]["type"] == "invalid_request_error" and needle in r["error"]["message"], r


def test_client_raises_bad_request(client):
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="x", input="hi", previous_response_id="resp_1")
