"""Shared by the bench/server_*.py scripts: start `bee serve` on a free port and wait for /health, and
a minimal streaming client (http.client, so the numbers do not depend on the openai package)."""
import http.client
import json
import os
import pathlib
import socket
import subprocess
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
BEE = pathlib.Path(os.environ.get("BEE_BIN", ROOT / "build" / "bee"))
MODEL = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(*args, model=MODEL):
    port = free_port()
    proc = subprocess.Popen([str(BEE), "serve", "-m", str(model), "--port", str(port), *map(str, args)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"bee serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return proc, port
        except OSError:
            pass
        if time.time() > deadline:
            proc.kill()
            raise RuntimeError("bee serve did not become healthy")
        time.sleep(0.1)


def stop_server(proc):
    proc.terminate()
    proc.wait(timeout=30)


def stream_completion(port, body, timeout=600):
    """POSTs a streaming /v1/chat/completions or /v1/completions request (body['path']); returns
    (generated tokens from the final timings or usage, seconds from send to last byte, error or None)."""
    path = body.pop("path", "/v1/chat/completions")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    t0 = time.time()
    try:
        conn.request("POST", path, json.dumps({**body, "stream": True}), {"Content-Type": "application/json"})
        r = conn.getresponse()
        if r.status != 200:
            return 0, time.time() - t0, f"HTTP {r.status}: {r.read()[:200]!r}"
        n, buf, done = 0, b"", False
        while True:
            chunk = r.read1(65536) if hasattr(r, "read1") else r.read(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                ev, buf = buf.split(b"\n\n", 1)
                if not ev.startswith(b"data: "):
                    continue
                data = ev[6:]
                if data == b"[DONE]":
                    done = True
                    continue
                j = json.loads(data)
                if "error" in j:
                    return n, time.time() - t0, f"stream error: {j['error']}"
                if "timings" in j:
                    n = j["timings"]["predicted_n"]
        return n, time.time() - t0, None if done else "stream ended without [DONE]"
    except OSError as e:
        return 0, time.time() - t0, f"{type(e).__name__}: {e}"
    finally:
        conn.close()
