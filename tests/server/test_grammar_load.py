# tests/server/test_grammar_load: large grammars cost only their own request — they are compiled and their
# start scanned in the request handler, so another slot's stream keeps its pace — and a matcher budget
# that ends an output is named (stop_detail "grammar_budget", with a message saying how to simplify).
import http.client
import json
import threading
import time

import pytest

from conftest import Server


@pytest.fixture(scope="module")
def srv():
    s = Server("-c", "2048", "-np", "2")
    yield s
    s.stop()


def words(n):
    """n distinct 4-letter words."""
    out = []
    for i in range(n):
        x, w = i * 7919 % 26**4, ""
        for _ in range(4):
            w, x = w + chr(97 + x % 26), x // 26
        out.append(w)
    return out


def word_grammar(n):
    return 'root ::= word (" " word)*\nword ::= ' + " | ".join(f'"{w}"' for w in words(n)) + "\n"


def stream_times(port, body, times, started):
    """Streams /completion and appends the arrival time of each token event; sets `started` after 3."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", "/completion", json.dumps({**body, "stream": True}), {"Content-Type": "application/json"})
    r = conn.getresponse()
    assert r.status == 200
    while True:
        line = r.fp.readline()
        if not line:
            break
        if not line.startswith(b"data: "):
            continue
        ev = json.loads(line[6:])
        times.append(time.time())
        if len(times) == 3:
            started.set()
        if ev.get("stop"):
            break
    conn.close()


def test_huge_grammars_do_not_stall_other_slots(srv):
    times, started = [], threading.Event()
    body = {"prompt": "Count: 1, 2, 3,", "n_predict": 120, "ignore_eos": True, "temperature": 0}
    t = threading.Thread(target=stream_times, args=(srv.port, body, times, started))
    t.start()
    assert started.wait(60)
    t_big = time.time()
    # 30,000 alternatives at one point: refused in the handler, naming the live-stack budget.
    code, _, j = srv.post("/completion", {"prompt": "Words:", "grammar": word_grammar(30000), "n_predict": 4})
    refused_s = time.time() - t_big
    assert code == 400 and "live stacks" in j["error"]["message"], j
    # 4,000 alternatives: accepted; with top_k 0 every step checks the whole vocabulary.
    t_ok = time.time()
    code, _, j = srv.post("/completion", {"prompt": "Words:", "grammar": word_grammar(4000), "n_predict": 12,
                                          "temperature": 1.0, "top_k": 0, "seed": 7})
    done_s = time.time() - t_ok
    assert code == 200, j
    vocab = set(words(4000))
    assert j["content"] and all(w in vocab for w in j["content"].split(" ")[:-1]), j["content"]
    t.join(120)
    t_end = time.time()
    gaps = [b - a for a, b in zip(times, times[1:]) if b >= t_big and a <= t_end]
    print(f"30,000 alternatives refused in {refused_s:.2f} s; 4,000 alternatives: {j['tokens_predicted']} tokens "
          f"in {done_s:.2f} s; other stream: {len(gaps)} gaps meanwhile, max {max(gaps):.3f} s")
    assert len(times) > 20
    assert max(gaps) < 1.0, gaps


def test_grammar_budget_in_mid_generation_is_named(srv):
    # After "The", the nested optional repetitions open more parses than the live-stack budget allows.
    bomb = 'root ::= "The" " x" (((((("a"{0,9}){0,9}){0,9}){0,9}){0,9}))'
    code, _, j = srv.post("/completion", {"prompt": "Say:", "grammar": bomb, "n_predict": 8, "temperature": 0})
    assert code == 200, j
    assert j["content"] in ("The", "The "), j
    assert j["stop_type"] == "limit" and j["stop_detail"] == "grammar_budget", j
    assert "live-stack budget" in j["stop_message"], j
    assert "less ambiguous" in j["stop_message"], j
    # OpenAI shape: finish_reason "length" (the output is cut short), with the same detail on the choice.
    code, _, j = srv.post("/v1/completions", {"prompt": "Say:", "grammar": bomb, "max_tokens": 8, "temperature": 0})
    assert code == 200, j
    c = j["choices"][0]
    assert c["finish_reason"] == "length" and c["stop_detail"] == "grammar_budget", c
    assert "live-stack budget" in c["stop_message"], c
    # A grammar that is simply complete still ends as before, without a budget.
    code, _, j = srv.post("/completion", {"prompt": "Say:", "grammar": 'root ::= "The"', "n_predict": 8, "temperature": 0})
    assert code == 200 and j["content"] == "The" and j["stop_type"] == "eos" and "stop_message" not in j, j
