# tests/server/conftest: starts the real `bee serve` on SmolLM2 on a free port and waits for /health.
import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEE = pathlib.Path(os.environ.get("BEE_BIN", ROOT / "build" / "bee"))
SMOLLM = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"


def synth_qwen35(out, seed):
    """The tiny synthetic hybrid qwen35 (random f32 weights, an MTP block, deepseek-coder's vocabulary) at out."""
    vocab = ROOT / ".." / "shared" / "data" / "vocab" / "ggml-vocab-deepseek-coder.gguf"
    subprocess.run([str(BEE), "gguf", "synth", str(out), "--shape", "qwen35-tiny", "--type", "f32", "--vocab",
                    str(vocab), "--seed", str(seed)], check=True, capture_output=True)
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method, url, body=None, headers=None, raw=None, timeout=120):
    """Plain HTTP: returns (status, headers, parsed JSON or text). `raw` sends bytes as the body."""
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, hdrs, text = r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        status, hdrs, text = e.code, dict(e.headers), e.read().decode()
    try:
        return status, hdrs, json.loads(text)
    except ValueError:
        return status, hdrs, text


def chat_greedy(server, messages, **kw):
    """A greedy /v1/chat/completions reply (the reference the other chat APIs are compared with)."""
    status, _, r = server.post("/v1/chat/completions", {"messages": messages, "temperature": 0, **kw})
    assert status == 200, r
    return r


def prompt_tokens(server, messages, **kw):
    """Token count of the prompt the template renders for these OpenAI-shaped messages."""
    prompt = server.post("/apply-template", {"messages": messages, **kw})[2]["prompt"]
    return len(server.post("/tokenize", {"content": prompt, "add_special": True})[2]["tokens"])


class Server:
    def __init__(self, *args, api_key=None, model=SMOLLM, env=None, port=None):
        """model=None: no -m (router mode takes its models from the flags in args). env: extra environment
        variables; port: where the server listens instead of --port (AIP_HTTP_PORT; --port gets another)."""
        assert BEE.exists(), f"{BEE} is missing: run `make build`"
        assert model is None or model.exists(), f"{model} is missing: run `make models`"
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.api_key = api_key
        cmd = [str(BEE), "serve", *(["-m", str(model)] if model else []), "--port", str(free_port() if port else self.port), *map(str, args)]
        if api_key:
            cmd += ["--api-key", api_key]
        self.log = tempfile.NamedTemporaryFile("w+", prefix="bee-serve-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
        deadline = time.time() + 120
        while True:
            assert self.proc.poll() is None, f"bee serve exited with {self.proc.returncode}: {self.output()}"
            try:
                if http("GET", self.base + "/health", timeout=5)[0] == 200:
                    break
            except OSError:
                pass
            assert time.time() < deadline, "bee serve did not become healthy in 120 s"
            time.sleep(0.1)

    def output(self):
        with open(self.log.name) as f:
            return f.read()

    def url(self, path):
        return self.base + path

    def auth(self):
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def post(self, path, body, **kw):
        return http("POST", self.url(path), body, headers={**self.auth(), **kw.pop("headers", {})}, **kw)

    def get(self, path, **kw):
        return http("GET", self.url(path), headers={**self.auth(), **kw.pop("headers", {})}, **kw)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        out = self.output()
        self.log.close()
        os.unlink(self.log.name)
        assert self.proc.returncode == 0, f"bee serve exited with {self.proc.returncode} on SIGTERM:\n{out[-2000:]}"


@pytest.fixture(scope="session")
def server():
    """Four slots, 1024 tokens each, metrics on, no key."""
    s = Server("-c", "4096", "-np", "4", "--metrics")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def keyed_server():
    s = Server("-c", "1024", "-np", "1", "--max-body-bytes", "65536", api_key="sekrit")
    yield s
    s.stop()
