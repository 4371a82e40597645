# tests/server/test_errors: raw HTTP — the OpenAI error envelope and status for bad JSON, bad fields,
# unknown routes, auth, body size limit and context overflow; the server keeps serving afterwards.
import json

import pytest

from conftest import http

CHAT = "/v1/chat/completions"
MSG = [{"role": "user", "content": "Hi"}]


def assert_error(resp, status, type_):
    code, _, body = resp
    assert code == status, body
    assert set(body["error"]) >= {"code", "message", "type"}, body
    assert body["error"]["code"] == status and body["error"]["type"] == type_
    return body["error"]


def test_invalid_json(server):
    e = assert_error(http("POST", server.url(CHAT), raw=b"{not json"), 400, "invalid_request_error")
    assert "JSON" in e["message"]
    assert_error(http("POST", server.url(CHAT), raw=b"[1, 2]"), 400, "invalid_request_error")


@pytest.mark.parametrize("body, words", [
    ({"messages": MSG, "temperature": "hot"}, "temperature"),
    ({"messages": MSG, "max_tokens": 1.5}, "max_tokens"),
    ({"messages": MSG, "stop": 7}, "stop"),
    ({"messages": MSG, "top_logprobs": 2}, "logprobs"),
    ({"messages": []}, "messages"),
    ({"messages": [{"content": "no role"}]}, "role"),
    ({"messages": MSG, "chat_template_kwargs": {"enable_thinking": "yes"}}, "enable_thinking"),
    ({"messages": MSG, "n": 17}, "'n'"),  # n > 1 is supported up to 16
    ({"messages": MSG, "reasoning_loop_window": 10}, "window"),
    ({"messages": MSG, "id_slot": 99}, "id_slot"),
])
def test_invalid_fields(server, body, words):
    e = assert_error(server.post(CHAT, body), 400, "invalid_request_error")
    assert words in e["message"]


def test_completion_field_errors(server):
    assert_error(server.post("/completion", {"n_predict": 3}), 400, "invalid_request_error")
    assert_error(server.post("/v1/completions", {"prompt": "x", "echo": True}), 400, "invalid_request_error")
    assert_error(server.post("/completion", {"prompt": [1, 99999999]}), 400, "invalid_request_error")
    assert_error(server.post("/detokenize", {"tokens": [-1]}), 400, "invalid_request_error")


def test_unknown_route(server):
    assert_error(server.get("/v1/nothing"), 404, "not_found_error")
    assert_error(server.post("/v2/chat", {}), 404, "not_found_error")


def test_context_overflow(server):
    prompt = "hello " * 1100  # slots hold 1024 tokens
    e = assert_error(server.post("/completion", {"prompt": prompt, "n_predict": 1}), 400, "exceed_context_size_error")
    assert e["n_ctx"] == 1024 and e["n_prompt_tokens"] > 1024
    assert "exceeds the available context size" in e["message"]


def test_generation_hitting_context_end_is_truncated(server):
    prompt = "hello " * 1000
    r = server.post("/completion", {"prompt": prompt, "n_predict": 100, "ignore_eos": True, "temperature": 0})[2]
    assert r["truncated"] is True and r["stop_type"] == "limit"
    assert r["tokens_evaluated"] + r["tokens_predicted"] == 1024  # as llama-server: n_ctx - n_prompt generated


def test_auth(keyed_server):
    s = keyed_server
    url = s.url(CHAT)
    body = {"messages": MSG, "max_tokens": 2}
    assert_error(http("POST", url, body), 401, "authentication_error")
    assert_error(http("POST", url, body, headers={"Authorization": "Bearer wrong"}), 401, "authentication_error")
    assert http("POST", url, body, headers={"Authorization": "Bearer sekrit"})[0] == 200
    assert http("POST", url, body, headers={"X-Api-Key": "sekrit"})[0] == 200
    assert_error(http("POST", s.url("/tokenize"), {"content": "x"}), 401, "authentication_error")
    # public routes
    assert http("GET", s.url("/health"))[0] == 200
    assert http("GET", s.url("/v1/models"))[0] == 200
    assert http("GET", s.url("/"))[0] == 200


def test_body_limit(keyed_server):
    s = keyed_server
    big = json.dumps({"prompt": "x" * 100000}).encode()
    code, _, body = http("POST", s.url("/completion"), raw=big, headers=s.auth())
    assert code == 413 and body["error"]["code"] == 413
    assert http("POST", s.url("/completion"), {"prompt": "Hi", "n_predict": 1}, headers=s.auth())[0] == 200


def test_cors_preflight(server):
    code, headers, _ = http("OPTIONS", server.url(CHAT), headers={"Origin": "http://example.com"})
    assert code in (200, 204)
    assert headers.get("Access-Control-Allow-Origin") == "http://example.com"


def test_metrics_disabled_is_501(keyed_server):
    assert_error(http("GET", keyed_server.url("/metrics"), headers=keyed_server.auth()), 501, "not_supported_error")


def test_still_serving_after_errors(server):
    r = server.post("/completion", {"prompt": "The capital of France is", "n_predict": 3, "temperature": 0})
    assert r[0] == 200 and r[2]["tokens_predicted"] >= 1
