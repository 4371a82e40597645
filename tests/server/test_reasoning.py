# tests/server/test_reasoning: think-span extraction into reasoning_content (whole and streamed), the
# reasoning budget forcing </think>, reasoning_format none, and the loop guard's per-request settings.
# SmolLM2 does not think by itself, so the server gets a ChatML template whose generation prompt opens
# "<think>": everything the model writes is reasoning until the budget forces the close tag.
import openai
import pytest

from conftest import Server

THINK_TEMPLATE = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
                  "'<|im_end|>\\n'}}{% endfor %}{% if add_generation_prompt %}{{'<|im_start|>assistant\\n<think>\\n'}}"
                  "{% endif %}")
MSG = [{"role": "user", "content": "What is the capital of France?"}]
BUDGET = {"thinking_budget_tokens": 6}  # per request, as the server has no --reasoning-budget
# Small loop-guard thresholds so a greedy SmolLM2 that keeps going (ignore_eos) trips it quickly. The
# prompt is itself a loop: a request that only asks for one ("Say 'la' many times.") loops or not
# depending on the last bits of the logits, which kernel changes may move.
LOOPY = {"messages": [{"role": "user", "content": " ".join(["la"] * 16)}], "max_tokens": 400, "temperature": 0,
         "ignore_eos": True, "reasoning_loop_min_tokens": 32, "reasoning_loop_window": 96,
         "reasoning_loop_max_period": 32, "reasoning_loop_min_coverage": 32, "reasoning_loop_check_interval": 8}


@pytest.fixture(scope="module")
def think_server():
    s = Server("-c", "2048", "-np", "2", "--chat-template", THINK_TEMPLATE)
    yield s
    s.stop()


def test_budget_forces_end_of_reasoning(think_server):
    r = think_server.post("/v1/chat/completions", {"messages": MSG, "max_tokens": 30, "temperature": 0, **BUDGET})[2]
    msg = r["choices"][0]["message"]
    assert msg["reasoning_content"].strip() != ""
    assert "<think>" not in msg["content"] and "</think>" not in msg["content"]
    assert r["usage"]["completion_tokens_details"]["reasoning_tokens"] == 6
    assert r["usage"]["completion_tokens_details"]["visible_tokens"] == r["usage"]["completion_tokens"] - 6


def test_streamed_reasoning_matches(think_server):
    full = think_server.post("/v1/chat/completions", {"messages": MSG, "max_tokens": 30, "temperature": 0, **BUDGET})[2]
    client = openai.OpenAI(base_url=think_server.url("/v1"), api_key="x")
    chunks = list(client.chat.completions.create(model="x", messages=MSG, max_tokens=30, temperature=0, stream=True,
                                                 extra_body=BUDGET))
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    content = "".join(d.content or "" for d in deltas)
    assert reasoning == full["choices"][0]["message"]["reasoning_content"]
    assert content == full["choices"][0]["message"]["content"]
    first_content = next(i for i, d in enumerate(deltas) if d.content)
    last_reasoning = max(i for i, d in enumerate(deltas) if getattr(d, "reasoning_content", None))
    assert last_reasoning < first_content


def test_reasoning_format_none_keeps_raw_text(think_server):
    r = think_server.post("/v1/chat/completions", {"messages": MSG, "max_tokens": 10, "temperature": 0,
                                                   "reasoning_format": "none"})[2]
    assert "reasoning_content" not in r["choices"][0]["message"]
    assert "completion_tokens_details" not in r["usage"]


def test_loop_guard_settings_validated(think_server):
    bad = think_server.post("/v1/chat/completions", {"messages": MSG, "reasoning_loop_guard": "sometimes"})
    assert bad[0] == 400 and "reasoning_loop_guard" in bad[2]["error"]["message"]


def test_loop_guard_force_close(think_server):
    r = think_server.post("/v1/chat/completions", LOOPY)[2]
    # The reasoning was force-closed (visible content follows it); when the answer then loops as well, the
    # guard, out of interventions, stops the request and reports that last action.
    assert r["loop_guard"]["triggered"] is True and r["loop_guard"]["action"] in ("force-close", "stop")
    details = r["usage"]["completion_tokens_details"]
    assert details["reasoning_tokens"] < 400 and details["visible_tokens"] > 0
    assert r["choices"][0]["message"]["content"] != ""


def test_loop_guard_stop(think_server):
    r = think_server.post("/v1/chat/completions", {**LOOPY, "reasoning_loop_guard": "stop"})[2]
    assert r["loop_guard"]["action"] == "stop"
    assert r["choices"][0]["finish_reason"] == "length"
    assert r["usage"]["completion_tokens"] < 400


def test_loop_guard_off(think_server):
    r = think_server.post("/v1/chat/completions", {**LOOPY, "reasoning_loop_guard": "off", "max_tokens": 200})[2]
    assert "loop_guard" not in r and r["usage"]["completion_tokens"] == 200
