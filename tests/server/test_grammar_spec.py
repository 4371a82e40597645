# tests/server/test_grammar_spec: constrained requests speculate. A GBNF grammar, a JSON schema, a
# response_format and a required tool call give exactly the greedy output of the same request on a server
# without speculation, while their timings show drafts verified (draft_n > 0); drafted tokens the grammar
# rejects are cut before verification (timings.draft_n_grammar_cut, llamacpp:n_drafted_grammar_cut_total);
# four slots constrained at once; a stop string and the reasoning budget inside a constrained draft.
import concurrent.futures

import pytest

from conftest import Server, http

ARGS = ["-c", "4096", "-np", "4", "--metrics"]
SPEC = ["--spec-type", "ngram-mod,suffix", "--spec-ngram-mod-n-match", "4", "--spec-ngram-mod-n-min", "2",
        "--spec-ngram-mod-n-max", "16", "--no-spec-dm-adaptive"]
COUNT = "one two three four five six. " * 6 + "one two"
RECORDS = 'Cats:\n{"name": "Tom", "age": 3, "mood": "happy"}\n{"name": "Kit", "age": 5, "mood": "sleepy"}\n' * 3
SCHEMA = {"type": "object", "properties": {"name": {"type": "string", "maxLength": 12}, "age": {"type": "integer"},
                                           "mood": {"enum": ["happy", "sleepy", "grumpy"]}},
          "required": ["name", "age", "mood"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}}]
# /completion bodies, each constrained differently
CASES = {
    # the model wants "six." but "." is not allowed: the drafts copying the prompt are cut at each period
    "gbnf_cut": {"prompt": COUNT, "grammar": "root ::= [a-z ]+", "n_predict": 48, "ignore_eos": True},
    "gbnf_fits": {"prompt": COUNT, "grammar": "root ::= [a-z .]+", "n_predict": 48, "ignore_eos": True},
    "json_schema": {"prompt": RECORDS, "json_schema": SCHEMA, "n_predict": 64},
    "json_object": {"prompt": RECORDS, "response_format": {"type": "json_object"}, "n_predict": 64},
}


def complete(server, body):
    status, _, r = server.post("/completion", {"temperature": 0, **body})
    assert status == 200, r
    return r


@pytest.fixture(scope="module")
def plain():
    s = Server(*ARGS)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def spec():
    s = Server(*ARGS, *SPEC)
    yield s
    s.stop()


@pytest.mark.parametrize("name", list(CASES))
def test_constrained_greedy_equals_no_speculation(name, plain, spec):
    want = complete(plain, CASES[name])
    got = complete(spec, CASES[name])
    assert got["tokens"] == want["tokens"] and got["content"] == want["content"], name
    assert got["stop_type"] == want["stop_type"] and got["tokens_predicted"] == want["tokens_predicted"]
    t = got["timings"]
    assert t["draft_n"] > 0 and 0 < t["draft_n_accepted"] <= t["draft_n"], t
    if name == "gbnf_cut":
        assert "." not in got["content"] and t["draft_n_grammar_cut"] > 0, t


def test_four_constrained_slots_at_once(plain, spec):
    names = list(CASES)
    want = [complete(plain, CASES[n]) for n in names]
    with concurrent.futures.ThreadPoolExecutor(len(names)) as ex:
        got = list(ex.map(lambda n: complete(spec, CASES[n]), names))
    for n, g, w in zip(names, got, want):
        assert g["tokens"] == w["tokens"], n
        assert g["timings"]["draft_n"] > 0, (n, g["timings"])


def test_rejected_drafts_are_never_verified(spec):
    """Every drafted token goes through the grammar before the verify batch: those it rejects are counted
    apart (never verified), and none of the verified ones was rejected — with [a-z ]+ the model's own
    choice "." after each number word would otherwise be drafted (copied from the prompt) and verified."""
    before = metrics(spec)
    r = complete(spec, CASES["gbnf_cut"])
    after = metrics(spec)
    t = r["timings"]
    assert after["llamacpp:n_drafted_grammar_cut_total"] - before["llamacpp:n_drafted_grammar_cut_total"] == \
        t["draft_n_grammar_cut"] > 0
    assert after["llamacpp:n_drafted_total"] - before["llamacpp:n_drafted_total"] == t["draft_n"]
    # unconstrained, the same drafters propose the periods and the target accepts them
    free = complete(spec, {"prompt": COUNT, "n_predict": 48, "ignore_eos": True})
    assert "." in free["content"] and "draft_n_grammar_cut" not in free["timings"]


def metrics(server):
    text = http("GET", server.url("/metrics"))[2]
    return {l.split()[0]: float(l.split()[1]) for l in text.splitlines() if l.startswith("llamacpp:n_drafted")}


def chat(server, **kw):
    status, _, r = server.post("/v1/chat/completions", {"temperature": 0, **kw})
    assert status == 200, r
    return r


def message(r):
    """The reply's message without the random tool call ids."""
    m = dict(r["choices"][0]["message"])
    m["tool_calls"] = [c["function"] for c in m.get("tool_calls") or []]
    return m


def test_required_tool_call_and_schema_in_chat(plain, spec):
    """A forced tool call and a response_format schema through the chat API: the same message with
    speculation. The suffix drafter also learns from earlier answers, so the second run drafts the call."""
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    for body in ({"messages": msgs, "tools": TOOLS, "tool_choice": "required", "max_tokens": 80},
                 {"messages": [{"role": "user", "content": "Describe a cat called Tom, aged 3."}], "max_tokens": 80,
                  "response_format": {"type": "json_schema", "json_schema": {"name": "cat", "schema": SCHEMA}}}):
        want = chat(plain, **body)
        runs = [chat(spec, **body) for _ in range(2)]
        for got in runs:
            assert message(got) == message(want)
            assert got["choices"][0]["finish_reason"] == want["choices"][0]["finish_reason"]
            assert got["usage"]["completion_tokens"] == want["usage"]["completion_tokens"]
        assert runs[1]["timings"]["draft_n_accepted"] > 0, runs[1]["timings"]


def test_stop_string_inside_a_constrained_draft(plain, spec):
    body = {**CASES["gbnf_fits"], "stop": ["five six. one two three"]}
    want, got = complete(plain, body), complete(spec, body)
    assert got["tokens"] == want["tokens"] and got["stopping_word"] == want["stopping_word"] != ""
    assert got["timings"]["draft_n_accepted"] > 0


def test_sampled_constrained_request(spec):
    import re
    body = {**CASES["gbnf_cut"], "temperature": 0.8, "seed": 7}
    r = complete(spec, body)
    assert re.fullmatch(r"[a-z ]+", r["content"]) and r["tokens_predicted"] == 48
    assert r["timings"]["draft_n"] > 0


def test_reasoning_budget_inside_a_constrained_draft():
    """The reasoning budget forces </think> after an accepted draft token: the rest of the draft is
    dropped and the grammar follows only the kept tokens. The grammar counts characters in pairs before
    </think>, so a grammar moved by dropped text of odd length would disagree with the output about the
    close tag and what may follow it (a third or so of these budgets fail that way)."""
    from test_reasoning import THINK_TEMPLATE
    from test_spec import PROMPTS
    grammar = 'root ::= ([^<] [^<])* ("</think>" "\\n"? [a-z ]+)?'
    cases = [(PROMPTS[0], n) for n in range(20, 30)] + [(PROMPTS[1], 25), (PROMPTS[1], 28)]
    body = lambda p, n: {"messages": [{"role": "user", "content": p}], "max_tokens": n + 8, "temperature": 0,
                         "thinking_budget_tokens": n, "cache_prompt": False, "grammar": grammar}
    outs = []
    for extra in ([], ["--spec-type", "suffix", "--no-spec-dm-adaptive"]):
        s = Server("-c", "1024", "-np", "1", "--chat-template", THINK_TEMPLATE, *extra)
        try:
            outs.append([s.post("/v1/chat/completions", body(p, n)) for p, n in cases])
        finally:
            s.stop()
    for want, got in zip(*outs):
        assert got[0] == 200, got
        assert message(got[2]) == message(want[2])
    assert sum(g[2]["timings"].get("draft_n_accepted", 0) for g in outs[1]) > 0


@pytest.mark.parametrize("drafter", [
    # the committed EAGLE-3 head drafting trees (rejected subtrees pruned per path)
    ["-md", "drafters/SmolLM2-135M-Instruct.eagle3.gguf", "--spec-type", "draft-eagle3", "--spec-branch-budget", "4",
     "--spec-draft-top-k", "3", "--spec-draft-n-max", "4"],
    # SmolLM2 as its own draft model: chains, and sampled chains (q) for the sampled request
    ["-md", "models/SmolLM2-135M-Instruct.Q4_1.gguf", "--spec-type", "draft", "--spec-draft-n-max", "6",
     "--spec-draft-temp", "auto"],
], ids=["eagle3-trees", "draft-model"])
def test_model_drafters_under_constraints(drafter, plain):
    from conftest import ROOT
    args = [str(ROOT / a) if a.endswith(".gguf") else a for a in drafter]
    s = Server("-c", "2048", "-np", "2", "--no-spec-dm-adaptive", *args)
    try:
        timings = []
        for name in ("json_schema", "gbnf_fits", "gbnf_cut"):
            want, got = complete(plain, CASES[name]), complete(s, CASES[name])
            assert got["tokens"] == want["tokens"], name
            timings.append(got["timings"])
        assert sum(t["draft_n_accepted"] for t in timings) > 0, timings
        assert sum(t.get("draft_n_grammar_cut", 0) for t in timings) > 0, timings
        import re
        r = complete(s, {**CASES["gbnf_cut"], "temperature": 0.7, "seed": 3})
        assert re.fullmatch(r"[a-z ]+", r["content"]) and r["timings"]["draft_n"] > 0, r
    finally:
        s.stop()
