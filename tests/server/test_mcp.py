# tests/server/test_mcp: MCP servers' tools (--mcp-servers-config / --mcp-servers-json) behind GET/POST /tools,
# and the chat page's CORS proxy (--ui-mcp-proxy). The MCP server is tests/server/mcp_echo_server.py; the
# Bee server runs in router mode on an empty models folder (no model load: tools need none).
import json
import pathlib
import subprocess
import sys
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from conftest import BEE, SMOLLM, Server, http

ECHO = str(pathlib.Path(__file__).with_name("mcp_echo_server.py"))


def models_dir(d):
    """A router-mode models folder (one model, never loaded by these tests)."""
    (d / SMOLLM.name).symlink_to(SMOLLM)
    return d


def mcp_json(servers):
    return json.dumps({"mcpServers": servers})


def names(server):
    status, _, body = server.get("/tools")
    assert status == 200, body
    return {t["tool"]: t for t in body}


def call(server, tool, **params):
    status, _, body = server.post("/tools", {"tool": tool, "params": params})
    assert status == 200, body
    return body


@pytest.fixture(scope="module")
def mcp(tmp_path_factory):
    """Servers from a config file: `echo` (with an env override), `slow` (timeout 300 ms), `bad` (no such
    command); the CORS proxy on."""
    d = tmp_path_factory.mktemp("mcp")
    cfg = d / "mcp.json"
    cfg.write_text(mcp_json({
        "echo": {"command": sys.executable, "args": [ECHO], "env": {"BEE_MCP_TEST": "from-config"}},
        "slow": {"command": sys.executable, "args": [ECHO], "timeout_ms": 300},
        "bad": {"command": "bee-no-such-command-12345", "args": []},
    }))
    s = Server("--models-dir", models_dir(d), "--mcp-servers-config", cfg, "--ui-mcp-proxy", model=None)
    yield s
    s.stop()


def test_tools_listed_with_definitions(mcp):
    tools = names(mcp)
    want = {f"{srv}_{t}" for srv in ("echo", "slow") for t in ("echo", "add", "env", "pid", "sleep", "fail", "crash")}
    assert set(tools) == want  # both tools/list pages, the bad server left out
    t = tools["echo_echo"]
    assert t["type"] == "mcp"
    fn = t["definition"]["function"]
    assert t["definition"]["type"] == "function" and fn["name"] == "echo_echo"
    assert fn["description"] == "Echo a message"
    assert fn["parameters"]["type"] == "object" and "message" in fn["parameters"]["properties"]
    assert "bee-no-such-command-12345" in mcp.output()  # the failed start is logged


def test_call_skips_notifications_and_junk(mcp):
    assert call(mcp, "echo_echo", message="hello") == {"plain_text_response": "echo: hello"}
    assert call(mcp, "echo_add", a=3, b=5) == {"plain_text_response": "8"}
    assert call(mcp, "echo_env", name="BEE_MCP_TEST") == {"plain_text_response": "from-config"}
    assert call(mcp, "echo_env", name="PATH")["plain_text_response"] != "<unset>"  # the rest is inherited


def test_large_reply(mcp):
    big = "x" * 3_000_000
    assert call(mcp, "echo_echo", message=big) == {"plain_text_response": "echo: " + big}


def test_tool_errors(mcp):
    assert call(mcp, "echo_fail") == {"error": "it failed on purpose"}
    status, _, body = mcp.post("/tools", {"tool": "bad_echo", "params": {}})
    assert status == 404, body
    status, _, body = mcp.post("/tools", {"tool": "echo_echo", "params": "x"})
    assert status == 400, body


def test_streamed_call(mcp):
    status, _, body = mcp.post("/tools", {"tool": "echo_echo", "params": {"message": "s"}, "stream": True})
    assert status == 200
    events = [json.loads(line[len("data: "):]) for line in body.splitlines() if line.startswith("data: ")]
    assert events == [{"chunk": "echo: s"}, {"done": True}], body


def test_concurrent_calls_get_their_own_replies(mcp):
    with ThreadPoolExecutor(max_workers=12) as ex:
        got = list(ex.map(lambda i: call(mcp, "echo_echo", message=f"m{i}"), range(24)))
    assert got == [{"plain_text_response": f"echo: m{i}"} for i in range(24)]


def test_crash_then_respawn(mcp):
    pid = call(mcp, "echo_pid")["plain_text_response"]
    assert call(mcp, "echo_crash") == {"plain_text_response": "crashing"}
    time.sleep(0.2)
    assert call(mcp, "echo_echo", message="again") == {"plain_text_response": "echo: again"}
    assert call(mcp, "echo_pid")["plain_text_response"] != pid


def test_timeout(mcp):
    t0 = time.time()
    body = call(mcp, "slow_sleep", seconds=3)
    assert "error" in body and "timeout_ms 300" in body["error"], body
    assert time.time() - t0 < 2.5


def test_cors_limited_to_localhost(mcp):
    _, h, _ = mcp.get("/health", headers={"Origin": "http://evil.example"})
    assert "Access-Control-Allow-Origin" not in h
    _, h, _ = mcp.get("/health", headers={"Origin": "http://localhost:5173"})
    assert h.get("Access-Control-Allow-Origin") == "http://localhost:5173"


class Target(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/sse":  # a body that comes in pieces, ended by closing the connection
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.end_headers()
            for i in range(3):
                self.wfile.write(f"data: {i}\n\n".encode())
                self.wfile.flush()
                time.sleep(0.15)
            return
        body = json.dumps({"path": self.path, "token": self.headers.get("X-Token"), "ua": self.headers.get("X-Llama-Server-Proxy-Header-X-Token")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-From-Target", "yes")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/empty":
            self.send_response(204)
            self.end_headers()
            return
        self.send_response(201)
        self.send_header("Content-Type", self.headers.get("Content-Type", "none"))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def target():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Target)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()
    srv.server_close()


def test_proxy_forwards(mcp, target):
    url = urllib.parse.quote(f"{target}/a/b?q=1&r=2", safe="")
    status, h, body = mcp.get(f"/cors-proxy?url={url}", headers={"X-Llama-Server-Proxy-Header-X-Token": "t0k"})
    assert status == 200, body
    assert body == {"path": "/a/b?q=1&r=2", "token": "t0k", "ua": None}
    assert h.get("X-From-Target") == "yes" and h.get("Access-Control-Allow-Origin") is None
    status, h, body = mcp.post(f"/cors-proxy?url={target}/post", {"k": [1, 2]})
    assert status == 201 and body == {"k": [1, 2]}
    assert h["Content-Type"].startswith("application/json")
    status, _, body = mcp.post(f"/cors-proxy?url={target}/empty", {})
    assert status == 204 and body == ""


def test_proxy_streams(mcp, target):
    status, h, body = mcp.get(f"/cors-proxy?url={target}/sse")
    assert status == 200 and h["Content-Type"] == "text/event-stream"
    assert body == "data: 0\n\ndata: 1\n\ndata: 2\n\n"


def test_proxy_refusals(mcp, server):
    status, _, body = mcp.get("/cors-proxy?url=https://example.com/")
    assert status == 400 and "https" in body["error"]["message"], body
    status, _, body = mcp.get("/cors-proxy?url=ftp://example.com/")
    assert status == 400, body
    status, _, body = mcp.get("/cors-proxy?url=http://127.0.0.1:1/")  # nothing listens on port 1
    assert status == 502, body
    # off by default
    assert server.get("/props")[2]["cors_proxy_enabled"] is False
    assert server.get("/cors-proxy?url=http://127.0.0.1:1/")[0] == 403
    assert server.post("/cors-proxy?url=http://127.0.0.1:1/", {})[0] == 403


def run_bee(tmp_path, *args):
    return subprocess.run([str(BEE), "serve", "--models-dir", str(models_dir(tmp_path)), "--port", "1", *map(str, args)],
                          capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("args, expect", [
    (["--mcp-servers-json", "not json"], "--mcp-servers-json: not valid JSON"),
    (["--mcp-servers-json", '{"mcpServers": []}'], '"mcpServers" must be an object'),
    (["--mcp-servers-json", '{"mcpServers": {"x": {"command": "y", "args": "z"}}}'], "mcpServers.x.args must be"),
    (["--mcp-servers-config", "/nonexistent/mcp.json"], "--mcp-servers-config: cannot read /nonexistent/mcp.json"),
])
def test_config_errors(tmp_path, args, expect):
    r = run_bee(tmp_path, *args)
    assert r.returncode == 2, r.stderr
    assert expect in r.stderr, r.stderr


def test_slow_tool_holds_no_slot():
    """One model, one slot: a completion runs while a tool call waits on its MCP server."""
    s = Server("-c", "512", "-np", "1", "--ui-mcp-proxy",
               "--mcp-servers-json", mcp_json({"e": {"command": sys.executable, "args": [ECHO]}}))
    try:
        assert s.get("/props")[2]["cors_proxy_enabled"] is True
        with ThreadPoolExecutor(max_workers=1) as ex:
            slow = ex.submit(call, s, "e_sleep", seconds=3)
            time.sleep(0.3)
            t0 = time.time()
            status, _, body = s.post("/completion", {"prompt": "Hello", "n_predict": 4, "temperature": 0})
            assert status == 200 and body["tokens_predicted"] == 4, body
            assert time.time() - t0 < 2.5 and not slow.done()
            assert slow.result() == {"plain_text_response": "slept"}
    finally:
        s.stop()


def test_shutdown_during_a_slow_call_with_a_grandchild(tmp_path):
    s = Server("--models-dir", models_dir(tmp_path), "--mcp-servers-json",
               mcp_json({"gc": {"command": sys.executable, "args": [ECHO, "--grandchild"]}}), model=None)
    try:
        assert call(s, "gc_echo", message="x") == {"plain_text_response": "echo: x"}
        def slow_call():
            try:  # an error reply or a closed connection: either is fine while the server stops
                http("POST", s.url("/tools"), {"tool": "gc_sleep", "params": {"seconds": 20}})
            except OSError:
                pass

        slow = threading.Thread(target=slow_call, daemon=True)
        slow.start()
        time.sleep(0.5)
    finally:
        t0 = time.time()
        s.stop()  # asserts exit code 0
    assert time.time() - t0 < 3
