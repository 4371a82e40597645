#!/usr/bin/env python3
"""Bounded load test of `bee serve` on loopback: C clients (default 64) send requests back to back for
M minutes (a mix of streaming chat, non-streaming chat and streaming text completions, 8-48 tokens each);
reports requests, errors, generated tokens and the server's resident memory (VmRSS) over time.
Usage: bench/server_load.py [--clients 64] [--minutes 5] [--parallel 8] [--cache-ram MIB]
The RAM prompt cache keeps up to --cache-ram MiB of evicted slots' KV (default here 64, the server's own
default is 8192), so RSS rises by about that much during the first minutes and then stays flat."""
import argparse
import http.client
import json
import random
import threading
import time

from server_common import start_server, stop_server, stream_completion


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def plain_chat(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    t0 = time.time()
    try:
        conn.request("POST", "/v1/chat/completions", json.dumps(body), {"Content-Type": "application/json"})
        r = conn.getresponse()
        data = r.read()
        if r.status != 200:
            return 0, time.time() - t0, f"HTTP {r.status}: {data[:200]!r}"
        return json.loads(data)["usage"]["completion_tokens"], time.time() - t0, None
    except OSError as e:
        return 0, time.time() - t0, f"{type(e).__name__}: {e}"
    finally:
        conn.close()


def client(port, stop_at, seed, stats, lock):
    rnd = random.Random(seed)
    topics = ["the sea", "a robot", "Paris", "bread", "the moon", "a library", "rain", "chess"]
    while time.time() < stop_at:
        n = rnd.randint(8, 48)
        msg = [{"role": "user", "content": f"Tell me about {rnd.choice(topics)} ({rnd.randint(0, 999)})."}]
        kind = rnd.choice(["chat-stream", "chat", "completion-stream"])
        if kind == "chat-stream":
            res = stream_completion(port, {"messages": msg, "max_tokens": n})
        elif kind == "chat":
            res = plain_chat(port, {"messages": msg, "max_tokens": n})
        else:
            res = stream_completion(port, {"path": "/v1/completions", "prompt": msg[0]["content"], "max_tokens": n})
        with lock:
            stats["requests"] += 1
            stats["tokens"] += res[0]
            stats["latency"].append(res[1])
            if res[2]:
                stats["errors"].append(res[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--cache-ram", type=int, default=64)
    a = ap.parse_args()
    proc, port = start_server("-c", str(a.parallel * 1024), "-np", str(a.parallel), "--cache-ram", str(a.cache_ram))
    stats = {"requests": 0, "tokens": 0, "latency": [], "errors": []}
    lock = threading.Lock()
    t0 = time.time()
    stop_at = t0 + a.minutes * 60
    threads = [threading.Thread(target=client, args=(port, stop_at, i, stats, lock)) for i in range(a.clients)]
    rss = [(0.0, rss_mib(proc.pid))]
    try:
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            time.sleep(5)
            rss.append((time.time() - t0, rss_mib(proc.pid)))
            with lock:
                print(f"{rss[-1][0]:6.0f} s: {stats['requests']} requests, {len(stats['errors'])} errors, "
                      f"{stats['tokens']} tokens, RSS {rss[-1][1]:.1f} MiB", flush=True)
        for t in threads:
            t.join()
    finally:
        stop_server(proc)
    wall = time.time() - t0
    lat = sorted(stats["latency"])
    steady = [m for s, m in rss if s >= 30] or [rss[-1][1]]
    print(f"\n{a.clients} clients, {wall:.0f} s: {stats['requests']} requests, {len(stats['errors'])} errors, "
          f"{stats['tokens']} tokens ({stats['tokens'] / wall:.1f} tok/s); latency p50 {lat[len(lat) // 2]:.1f} s, "
          f"max {lat[-1]:.1f} s; RSS start {rss[0][1]:.1f} MiB, after 30 s min {min(steady):.1f} / "
          f"max {max(steady):.1f} / end {rss[-1][1]:.1f} MiB")
    for e in stats["errors"][:10]:
        print("error:", e)


if __name__ == "__main__":
    main()
