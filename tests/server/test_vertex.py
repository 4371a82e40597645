# tests/server/test_vertex: Vertex AI's custom-container protocol with AIP_MODE=PREDICTION — AIP_HTTP_PORT
# replaces --port, AIP_HEALTH_ROUTE answers as /health, and AIP_PREDICT_ROUTE takes {"instances": [...]}
# whose "@requestFormat" names the endpoint (camelCase or path); each prediction is that endpoint's own reply.
import pytest

from conftest import Server, free_port

HELLO = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def vertex():
    port = free_port()
    env = {"AIP_MODE": "PREDICTION", "AIP_HTTP_PORT": str(port), "AIP_HEALTH_ROUTE": "ping",
           "AIP_PREDICT_ROUTE": "/v1/endpoints/x:predict"}
    s = Server("-c", "1024", "-np", "2", env=env, port=port)  # --port is another free port: AIP_HTTP_PORT wins
    yield s
    s.stop()


def test_port_and_health_route(vertex):
    assert vertex.get("/ping") == vertex.get("/health")
    assert vertex.get("/ping")[0] == 200
    assert "instead of port" in vertex.output()


def test_predictions_are_the_endpoints_replies(vertex):
    chat = {"messages": HELLO, "max_tokens": 8, "temperature": 0}
    status, _, direct = vertex.post("/v1/chat/completions", chat)
    assert status == 200
    status, _, tok = vertex.post("/tokenize", {"content": "Hello world"})
    instances = [
        {"@requestFormat": "chatCompletions", **chat},
        {"@requestFormat": "/v1/chat/completions", **chat, "stream": True},  # streaming is turned off
        {"@requestFormat": "tokenize", "content": "Hello world"},
        {"@requestFormat": "completion", "prompt": "Hi", "n_predict": 2},
        {"@requestFormat": "noSuchThing"},
        {"max_tokens": 2},
        "not an object",
    ]
    status, _, r = vertex.post("/v1/endpoints/x:predict", {"instances": instances})
    assert status == 200, r
    p = r["predictions"]
    assert len(p) == len(instances)
    for k in (0, 1):
        assert p[k]["object"] == "chat.completion"
        assert p[k]["choices"][0]["message"] == direct["choices"][0]["message"]
    assert p[2] == tok
    assert p[3]["tokens_predicted"] == 2
    assert "no handler registered for @requestFormat: noSuchThing" in p[4]["error"]["message"]
    assert "@requestFormat" in p[5]["error"]["message"]
    assert "JSON object" in p[6]["error"]["message"]


def test_an_endpoint_error_is_its_prediction(vertex):
    status, _, r = vertex.post("/v1/endpoints/x:predict", {"instances": [{"@requestFormat": "chatCompletions"}]})
    assert status == 200
    assert r["predictions"][0]["error"]["code"] == 400  # no messages: the endpoint's own 400 envelope


@pytest.mark.parametrize("body", [{"instances": {}}, {}, [], {"instances": [{}] * 129}])
def test_bad_bodies_refused(vertex, body):
    status, _, r = vertex.post("/v1/endpoints/x:predict", body)
    assert status == 400 and r["error"]["type"] == "invalid_request_error"


def test_off_without_aip_mode(server):
    assert server.post("/predict", {"instances": []})[0] == 404
