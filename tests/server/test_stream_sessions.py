# tests/server/test_stream_sessions: llama-server's resumable streams — a streamed completion sent with
# X-Conversation-Id is kept as a session that GET /v1/stream?conv_id=&from= replays from a byte offset and
# follows live, that outlives its client, that DELETE /v1/stream stops and forgets, and that
# POST /v1/streams/lookup reports; in router mode the router sends each conversation to its model.
import http.client as httpc
import json
import socket
import threading
import time
import urllib.parse

import pytest

from conftest import GEMMA, SMOLLM, Server, http

SMOL_ID = SMOLLM.name[: -len(".gguf")]
GEMMA_ID = GEMMA.name[: -len(".gguf")]
HELLO = [{"role": "user", "content": "Say hello."}]
COUNT = [{"role": "user", "content": "Count from 1 to 1000."}]


def qs(conv_id, **extra):
    return urllib.parse.urlencode({"conv_id": conv_id, **extra})


def stream_bytes(server, path, body=None, conv_id=None, method="POST"):
    """The whole response of a request (chunked framing removed): (status, bytes)."""
    c = httpc.HTTPConnection("127.0.0.1", server.port, timeout=120)
    headers = {"Content-Type": "application/json"}
    if conv_id:
        headers["X-Conversation-Id"] = conv_id
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def chat_stream(server, conv_id, messages=HELLO, **kw):
    body = {"messages": messages, "stream": True, "temperature": 0, "max_tokens": 8, **kw}
    return stream_bytes(server, "/v1/chat/completions", body, conv_id)


def replay(server, conv_id, **extra):
    return stream_bytes(server, "/v1/stream?" + qs(conv_id, **extra), method="GET")


def lookup(server, ids):
    status, _, body = server.post("/v1/streams/lookup", {"conversation_ids": ids})
    assert status == 200, body
    return body


def wait_done(server, conv_id, timeout=60):
    deadline = time.time() + timeout
    while True:
        found = lookup(server, [conv_id])
        if found and found[0]["is_done"]:
            return found[0]
        assert time.time() < deadline, f"session {conv_id} did not finish: {found}"
        time.sleep(0.05)


def payloads(data):
    """The JSON payloads of SSE bytes ([DONE] left out)."""
    out = []
    for line in data.decode().split("\n"):
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def drop_after_first_chunk(server, conv_id, body, path="/v1/chat/completions"):
    """Sends a streamed request on a raw socket and hangs up once the first bytes of the reply arrive."""
    raw = json.dumps(body)
    s = socket.create_connection(("127.0.0.1", server.port))
    s.sendall((f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"X-Conversation-Id: {conv_id}\r\nContent-Length: {len(raw)}\r\n\r\n{raw}").encode())
    assert s.recv(4096).startswith(b"HTTP/1.1 200")
    s.close()


def idle(server, timeout=30):
    deadline = time.time() + timeout
    while any(s["is_processing"] for s in server.get("/slots")[2]):
        assert time.time() < deadline, "a slot is still generating"
        time.sleep(0.05)


def test_replay_from_zero_and_from_an_offset(server):
    status, sent = chat_stream(server, "replay-1")
    assert status == 200 and sent.endswith(b"data: [DONE]\n\n")
    status, again = replay(server, "replay-1", **{"from": 0})
    assert status == 200 and again == sent
    status, again = replay(server, "replay-1")  # no `from`: from the start
    assert again == sent
    status, tail = replay(server, "replay-1", **{"from": 100})
    assert status == 200 and tail == sent[100:]
    status, rest = replay(server, "replay-1", **{"from": len(sent) + 50})  # past the end of a finished session
    assert status == 200 and rest == b""
    [info] = lookup(server, ["replay-1"])
    assert info["conversation_id"] == "replay-1" and info["is_done"] is True
    assert info["total_bytes"] == len(sent)
    assert info["started_at"] <= info["completed_at"] and info["completed_at"] > 0


def test_every_streaming_endpoint_keeps_a_session(server):
    cases = [("/completion", {"prompt": "Hello", "n_predict": 4, "stream": True}),
             ("/v1/completions", {"prompt": "Hello", "max_tokens": 4, "stream": True}),
             ("/v1/messages", {"messages": HELLO, "max_tokens": 4, "stream": True}),
             ("/v1/responses", {"input": "Hello", "max_output_tokens": 4, "stream": True})]
    for i, (path, body) in enumerate(cases):
        status, sent = stream_bytes(server, path, body, f"endpoint-{i}")
        assert status == 200, (path, sent)
        assert replay(server, f"endpoint-{i}") == (200, sent), path


def test_no_session_without_the_header_or_without_streaming(server):
    status, _ = chat_stream(server, None)
    assert status == 200
    status, _, r = server.post("/v1/chat/completions", {"messages": HELLO, "max_tokens": 4},
                               headers={"X-Conversation-Id": "not-streamed"})
    assert status == 200 and r["choices"][0]["message"]["content"] is not None
    assert lookup(server, ["not-streamed"]) == []
    assert replay(server, "not-streamed")[0] == 404


def test_live_tail_while_generating(server):
    out = {}
    t = threading.Thread(target=lambda: out.update(sent=chat_stream(server, "tail-1", COUNT, max_tokens=200, ignore_eos=True)[1]))
    t.start()
    deadline = time.time() + 30
    while not lookup(server, ["tail-1"]):
        assert time.time() < deadline
        time.sleep(0.01)
    assert lookup(server, ["tail-1"])[0]["is_done"] is False
    status, followed = replay(server, "tail-1", **{"from": 0})  # returns when the generation ends
    t.join()
    assert status == 200 and followed == out["sent"]
    assert followed.endswith(b"data: [DONE]\n\n")
    assert payloads(followed)[-1]["timings"]["predicted_n"] == 200


def test_generation_outlives_its_client_and_resumes(server):
    drop_after_first_chunk(server, "gone-1", {"messages": COUNT, "stream": True, "max_tokens": 120,
                                              "ignore_eos": True, "temperature": 0})
    info = wait_done(server, "gone-1")
    status, data = replay(server, "gone-1", **{"from": 0})
    assert status == 200 and len(data) == info["total_bytes"]
    assert data.endswith(b"data: [DONE]\n\n")
    chunks = payloads(data)
    assert chunks[-1]["timings"]["predicted_n"] == 120  # ran to the end with nobody reading
    # the same request streamed to a client that stays: the same text
    _, ref = chat_stream(server, "gone-ref", COUNT, max_tokens=120, ignore_eos=True)
    text = lambda cs: "".join((c["choices"][0]["delta"].get("content") or "") for c in cs if c["choices"])
    assert text(chunks) == text(payloads(ref))


def test_delete_stops_the_generation_and_forgets_it(server):
    out = {}
    t = threading.Thread(target=lambda: out.update(sent=chat_stream(server, "stop-1", COUNT, max_tokens=900, ignore_eos=True)[1]))
    t.start()
    deadline = time.time() + 30
    while not lookup(server, ["stop-1"]) or lookup(server, ["stop-1"])[0]["total_bytes"] < 2000:
        assert time.time() < deadline
        time.sleep(0.01)
    reader = {}
    r = threading.Thread(target=lambda: reader.update(data=replay(server, "stop-1")[1]))
    r.start()
    status, _, _ = http("DELETE", server.url("/v1/stream?" + qs("stop-1")))
    assert status == 204
    t.join(30)
    r.join(30)
    assert not t.is_alive() and not r.is_alive()
    assert not out["sent"].endswith(b"data: [DONE]\n\n")  # cut short
    assert len(payloads(out["sent"])) < 900
    assert reader["data"] and not reader["data"].endswith(b"data: [DONE]\n\n")
    assert replay(server, "stop-1")[0] == 404
    assert lookup(server, ["stop-1"]) == []
    idle(server)
    # a stop is idempotent
    assert http("DELETE", server.url("/v1/stream?" + qs("stop-1")))[0] == 204


def test_a_new_request_replaces_the_conversations_session(server):
    out = {}
    t = threading.Thread(target=lambda: out.update(sent=chat_stream(server, "again-1", COUNT, max_tokens=900, ignore_eos=True)[1]))
    t.start()
    deadline = time.time() + 30
    while not lookup(server, ["again-1"]):
        assert time.time() < deadline
        time.sleep(0.01)
    status, second = chat_stream(server, "again-1")
    t.join(30)
    assert not t.is_alive() and not out["sent"].endswith(b"data: [DONE]\n\n")  # the first one was stopped
    assert replay(server, "again-1") == (200, second)


def test_lookup_matches_per_model_ids_and_nothing_else(server):
    chat_stream(server, "conv-7::some/model:Q4")
    chat_stream(server, "conv-77")
    found = lookup(server, ["conv-7", "unknown", "", 5, None])
    assert [e["conversation_id"] for e in found] == ["conv-7::some/model:Q4"]
    assert set(found[0]) == {"conversation_id", "is_done", "total_bytes", "started_at", "completed_at"}
    assert lookup(server, []) == []
    assert server.post("/v1/streams/lookup", {"other": 1})[2] == []
    assert server.post("/v1/streams/lookup", None, raw=b"{nope")[0] == 400
    # the slash and colons of a model name travel in the query string
    assert replay(server, "conv-7::some/model:Q4")[0] == 200


@pytest.mark.parametrize("query, status", [("", 400), ("conv_id=", 400), ("conv_id=nobody", 404),
                                           ("conv_id=replay-err&from=-1", 400), ("conv_id=replay-err&from=x", 400),
                                           ("conv_id=replay-err&from=99999999999999999999999", 400)])
def test_bad_stream_requests(server, query, status):
    chat_stream(server, "replay-err")
    got, _, body = http("GET", server.url("/v1/stream?" + query))
    assert got == status, body
    assert body["error"]["code"] == status and body["error"]["message"]
    if not query.startswith("conv_id=replay"):
        assert http("DELETE", server.url("/v1/stream?" + query))[0] == (204 if status == 404 else 400)


@pytest.fixture(scope="module")
def router(tmp_path_factory):
    d = tmp_path_factory.mktemp("models")
    for m in (SMOLLM, GEMMA):
        (d / m.name).symlink_to(m)
    s = Server("--models-dir", d, "--models-max", "1", "-c", "1024", "-np", "1", model=None)
    yield s
    s.stop()


def test_router_sends_each_conversation_to_its_model(router):
    conv = f"r-1::{SMOL_ID}"
    status, sent = chat_stream(router, conv, model=SMOL_ID)
    assert status == 200 and sent.endswith(b"data: [DONE]\n\n")
    assert replay(router, conv, **{"from": 0}) == (200, sent)
    assert replay(router, conv, **{"from": 10}) == (200, sent[10:])
    assert [e["conversation_id"] for e in lookup(router, [conv, "r-unknown"])] == [conv]
    assert replay(router, "r-unknown")[0] == 404
    assert http("DELETE", router.url("/v1/stream?" + qs(conv)))[0] == 204
    assert replay(router, conv)[0] == 404
    assert lookup(router, [conv]) == []


def test_router_stop_cancels_a_request_waiting_for_its_model(router):
    # the one model slot is busy with a long SmolLM2 generation: a Gemma request waits for its turn
    busy = threading.Thread(target=lambda: chat_stream(router, "r-busy", COUNT, model=SMOL_ID, max_tokens=600, ignore_eos=True))
    busy.start()
    deadline = time.time() + 30
    while not lookup(router, ["r-busy"]):
        assert time.time() < deadline
        time.sleep(0.01)
    out = {}
    waiting = threading.Thread(target=lambda: out.update(r=router.post(
        "/v1/chat/completions", {"model": GEMMA_ID, "messages": HELLO, "stream": True, "max_tokens": 4},
        headers={"X-Conversation-Id": "r-wait"})))
    waiting.start()
    time.sleep(0.3)
    assert waiting.is_alive()
    assert replay(router, "r-wait")[0] == 404  # its model is not loading yet: nothing to resume
    assert http("DELETE", router.url("/v1/stream?" + qs("r-wait")))[0] == 204
    waiting.join(30)
    assert not waiting.is_alive()
    status, _, body = out["r"]
    assert status == 400 and "cancelled" in json.dumps(body)
    assert http("DELETE", router.url("/v1/stream?" + qs("r-busy")))[0] == 204
    busy.join(30)
    assert not busy.is_alive()


def test_sessions_are_capped_oldest_finished_first(server):
    ids = [f"cap-{i}" for i in range(40)]  # more than the 32 sessions a server keeps
    for i in ids:
        assert chat_stream(server, i, max_tokens=1)[0] == 200
    kept = {e["conversation_id"] for e in lookup(server, ids)}
    assert len(kept) <= 32
    assert set(ids[-8:]) <= kept and "cap-0" not in kept
    assert replay(server, "cap-0")[0] == 404 and replay(server, ids[-1])[0] == 200


def test_an_oversized_conversation_id_streams_without_a_session(server):
    long_id = "x" * 600
    status, sent = chat_stream(server, long_id)
    assert status == 200 and sent.endswith(b"data: [DONE]\n\n")
    assert lookup(server, [long_id]) == []


def test_router_resume_answers_retry_later_while_the_model_loads(router):
    http("POST", router.url("/models/unload"), {"model": GEMMA_ID})  # whichever is loaded: Gemma must load now
    drop = threading.Thread(target=drop_after_first_chunk, args=(router, "r-load", {
        "model": GEMMA_ID, "messages": HELLO, "stream": True, "max_tokens": 4}))
    drop.start()
    seen, deadline = [], time.time() + 60
    while not seen or seen[-1] != 200:
        assert time.time() < deadline, seen
        status, data = replay(router, "r-load")
        seen.append(status)
    drop.join()
    assert 503 in seen
    assert data.endswith(b"data: [DONE]\n\n")
