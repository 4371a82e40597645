#!/usr/bin/env python3
"""Upper bounds on what a copy-based (model-free) drafter can gain on a prompt set, from the model's own
greedy outputs. A server (`bee serve`, started here) generates each prompt's greedy answer; then, walking
the answer as speculative decoding would (each decode accepts the drafted tokens that match, plus the
target's own bonus token), three drafters are scored on a verify cost curve (cost of a decode with 1 + k
rows relative to 1 row, e.g. from `bee bench spec --types none -n 1 --cost-curve 16`):
  oracle        copies from the earlier position (prompt or answer so far) whose continuation matches the
                answer longest, and drafts exactly that many tokens: no copy drafter can do better;
  longest-match the continuation of the most recent occurrence of the longest suffix of the text so far
                (what suffix / n-gram drafters propose), drafting exactly the tokens that will be accepted
                (a perfect depth policy);
  fixed K / K=L the same source with a realistic depth: K tokens always, or as many as the key is long;
  aligned       longest match plus where the answer was copying from, 0, 1 or 2 tokens on (a substituted,
                inserted or dropped token), the best of them drafted exactly (an upper bound for a tree of
                these re-alignments);
  aligned tree  the longest-match chain plus, after an edit, a few tokens from each re-aligned source (an
                inserted token, a substituted one, 1-2 dropped ones matched on the new token), every tree
                row paid; `re-aligned chain` drafts from the substituted source instead of adding rows.
Speed-up = tokens / Σ cost(rows of each decode); rows/decode counts the draft rows verified. Drafts are
capped at --max-draft tokens.
Usage: bench/spec_bounds.py [--model M] [--prompts FILE] [--tokens 64] [--cost 1,1.18,...] [--threads 2]"""
import argparse
import http.client
import json
import pathlib

from server_common import MODEL, ROOT, start_server, stop_server

# SmolLM2, grounded prompt 1, -t 2, each decode after 8 of the same size (a steady loop; an earlier curve
# timed k = 0 cold): decode of 1 + k rows / 1 row, k = 0..16 (docs/PERFORMANCE-LOG.md, 2026-11-23)
SMOLLM2_COST = "1.00,1.22,1.56,1.79,2.15,2.27,2.43,2.68,3.14,3.44,3.71,3.81,4.21,4.47,4.82,4.86,5.26"


def post(port, path, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return json.loads(conn.getresponse().read())


def greedy_answers(port, prompts, n):
    """[(prompt tokens, greedy answer tokens)] through the chat template, as `bee bench spec` runs them."""
    out = []
    for p in prompts:
        text = post(port, "/apply-template", {"messages": [{"role": "user", "content": p["user"]}]})["prompt"]
        ptoks = post(port, "/tokenize", {"content": text, "add_special": True, "parse_special": True})["tokens"]
        r = post(port, "/completion", {"prompt": ptoks, "n_predict": n, "temperature": 0, "return_tokens": True,
                                       "cache_prompt": False})
        out.append((ptoks, r["tokens"]))
    return out


def longest_suffix_source(known, max_key=32):
    """(key length, index after the most recent earlier occurrence of the longest suffix of `known`)."""
    n, best, at = len(known), 0, -1
    for e in range(n - 1, 0, -1):
        k = 0
        while k < max_key and e - 1 - k >= 0 and known[e - 1 - k] == known[n - 1 - k]:
            k += 1
        if k > best:
            best, at = k, e
    return best, at


def walk(prompt, answer, draft_fn, cost, cap):
    """(tokens, decodes, cost, draft rows) of decoding `answer` with drafts from draft_fn(known, i) ->
    (draft, rows)."""
    i = decodes = paid = 0
    spent = 0.0
    while i < len(answer):
        draft, rows = draft_fn(prompt + answer[:i], i)
        draft = draft[:cap]
        a = 0
        while a < len(draft) and i + a < len(answer) and draft[a] == answer[i + a]:
            a += 1
        paid += rows(a, len(draft))
        spent += cost[rows(a, len(draft))]
        i += min(a + 1, len(answer) - i)
        decodes += 1
    return len(answer), decodes, spent, paid


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default=str(MODEL))
    ap.add_argument("--prompts", default=str(ROOT / "bench" / "prompts" / "grounded.jsonl"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--cost", default=SMOLLM2_COST, help="comma list: cost of 1 + k rows, k = 0, 1, ...")
    ap.add_argument("--max-draft", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    cost = [float(c) for c in a.cost.split(",")]
    if len(cost) < a.max_draft + 1:
        ap.error(f"--cost has {len(cost)} entries; drafts of up to --max-draft {a.max_draft} tokens need "
                 f"{a.max_draft + 1} (1 + k rows for k = 0..{a.max_draft}), or lower --max-draft")
    prompts = [json.loads(line) for line in open(a.prompts) if line.strip()]
    proc, port = start_server("-c", "4096", "-np", "1", "-t", str(a.threads), model=pathlib.Path(a.model))
    try:
        pairs = greedy_answers(port, prompts, a.tokens)
    finally:
        stop_server(proc)

    def oracle(prompt, answer):
        seq = prompt + answer

        def draft(known, i):
            pos, best, at = len(known), 0, -1
            for s in range(pos):
                k = 0
                while pos + k < len(seq) and k < a.max_draft and seq[s + k] == seq[pos + k]:
                    k += 1
                if k > best:
                    best, at = k, s
            return (seq[at:at + best] if at >= 0 else []), (lambda acc, n: n)
        return draft

    def longest(depth, perfect=False):
        """The longest-match source; `perfect`: pay only for the rows that will be accepted."""
        def draft(known, i):
            key, at = longest_suffix_source(known)
            if at < 0:
                return [], (lambda acc, n: 0)
            return known[at:at + depth(key)], ((lambda acc, n: acc) if perfect else (lambda acc, n: n))
        return draft

    def aligned(prompt, answer):
        """Longest match, or the source pointer (where the answer copies from) 0, 1 or 2 tokens past the
        last mismatch, whichever continues the answer longest; pays only for the accepted rows."""
        state = {"src": -1}

        def draft(known, i):
            cands = []
            _, at = longest_suffix_source(known)
            if at >= 0:
                cands.append(at)
            if state["src"] >= 0:
                cands += [state["src"], state["src"] + 1, state["src"] + 2]
            best, best_at = -1, -1
            for c in cands:
                k = 0
                while c + k < len(known) and i + k < len(answer) and k < a.max_draft and known[c + k] == answer[i + k]:
                    k += 1
                if k > best:
                    best, best_at = k, c
            if best_at < 0:
                state["src"] = -1
                return [], (lambda acc, n: 0)
            state["src"] = best_at + best + 1  # the answer goes on after the accepted tokens and the bonus
            return known[best_at:best_at + max(best, 1)], (lambda acc, n: acc)
        return draft

    def realign_sources(known, src):
        """Where the answer may resume after an edit, src being where it would go on had the bonus token
        matched: an inserted token (src - 1), a substituted one (src), or 1-2 dropped source tokens,
        proposed only when the source token there equals the bonus token just sampled."""
        cands = [src - 1, src]
        for j in (1, 2):  # the bonus token is source[src - 1 + j]: j tokens were dropped before it
            if src - 1 + j < len(known) - 1 and known[src - 1 + j] == known[-1]:
                cands.append(src + j)
        return cands

    def aligned_tree(prompt, answer, depth, branch, perfect=False):
        """A real tree, all rows paid: the longest-match chain (`depth(key)` tokens) plus, after an edit (the
        bonus token is not the source's next token), `branch` tokens from each re-aligned source; accepts
        the longest matching path. `perfect`: pay only for that path's accepted rows (an upper bound)."""
        state = {"src": -1}

        def draft(known, i):
            key, at = longest_suffix_source(known)
            paths = [(at, depth(key))] if at >= 0 else []
            src = state["src"]
            if 0 < src <= len(known) - 1 and known[src - 1] != known[-1]:
                paths += [(c, branch) for c in realign_sources(known, src) if c != at]
            paths = [(c, d) for c, d in paths if 0 <= c < len(known) and d > 0]
            if not paths:
                state["src"] = -1
                return [], (lambda acc, n: 0)
            trie, best, best_at = set(), -1, -1
            for c, d in paths:
                seq = tuple(known[c:c + d])
                trie.update(seq[:j + 1] for j in range(len(seq)))
                k = 0
                while k < len(seq) and i + k < len(answer) and seq[k] == answer[i + k]:
                    k += 1
                if k > best:
                    best, best_at = k, c
            rows = best if perfect else min(len(trie), a.max_draft)
            state["src"] = best_at + best + 1
            return known[best_at:best_at + max(best, 1)], (lambda acc, n: rows)
        return draft

    def realigned_chain(prompt, answer, branch):
        """No extra rows: after an edit, when no suffix longer than the bonus token matches, draft `branch`
        tokens from the substituted source instead of the (ambiguous) one-token match."""
        state = {"src": -1}

        def draft(known, i):
            key, at = longest_suffix_source(known)
            src, c, d = state["src"], at, min(key, a.max_draft)
            if 0 < src <= len(known) - 1 and known[src - 1] != known[-1] and key <= 1:
                c, d = src, branch
            if not 0 <= c < len(known):
                state["src"] = -1
                return [], (lambda acc, n: 0)
            seq, k = known[c:c + d], 0
            while k < len(seq) and i + k < len(answer) and seq[k] == answer[i + k]:
                k += 1
            state["src"] = c + k + 1
            return seq, (lambda acc, n: n)
        return draft

    drafters = {
        "oracle copy (knows the answer)": lambda p, ans: oracle(p, ans),
        "longest match, perfect depth": lambda p, ans: longest(lambda key: a.max_draft, perfect=True),
        "longest match, K = 4": lambda p, ans: longest(lambda key: 4),
        "longest match, K = 8": lambda p, ans: longest(lambda key: 8),
        "longest match, K = key length": lambda p, ans: longest(lambda key: min(key, a.max_draft)),
        "aligned: longest match or re-aligned source, perfect depth": lambda p, ans: aligned(p, ans),
        "aligned tree sources (+ insertion, deletions matched on the bonus), perfect depth": lambda p, ans:
            aligned_tree(p, ans, lambda key: a.max_draft, a.max_draft, perfect=True),
        "aligned tree, rows paid: key length + 1-token re-alignments": lambda p, ans: aligned_tree(
            p, ans, lambda key: min(key, a.max_draft), 1),
        "aligned tree, rows paid: key length + 2-token re-alignments": lambda p, ans: aligned_tree(
            p, ans, lambda key: min(key, a.max_draft), 2),
        "re-aligned chain: key length, or 2 tokens from the substituted source": lambda p, ans:
            realigned_chain(p, ans, 2),
    }
    print(f"model {a.model}, {len(pairs)} prompts x {a.tokens} tokens, drafts <= {a.max_draft}, cost curve {a.cost}\n")
    print("| drafter | tokens/decode | rows/decode | speed-up bound |")
    print("|---|---:|---:|---:|")
    for name, make in drafters.items():
        tok = dec = rows = 0
        spent = 0.0
        for prompt, answer in pairs:
            t, d, s, r = walk(prompt, answer, make(prompt, answer), cost, a.max_draft)
            tok, dec, spent, rows = tok + t, dec + d, spent + s, rows + r
        print(f"| {name} | {tok / dec:.2f} | {rows / dec:.2f} | {tok / spent:.2f}x |")


if __name__ == "__main__":
    main()
