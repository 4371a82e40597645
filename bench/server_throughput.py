#!/usr/bin/env python3
"""Aggregate generation throughput of `bee serve`: 1 stream vs N concurrent streams (default 8), and a
single server stream vs `bee run` on the same model, alternating rounds because the machine is shared.
Usage: bench/server_throughput.py [--streams 8] [--tokens 128] [--rounds 3] [--threads 2]
Every request is greedy with ignore_eos, so each generates exactly --tokens tokens.

With --compare BIN it times 1 stream and N streams on two binaries instead (this one, BEE_BIN or
build/bee, against BIN, e.g. a build of an older commit), a fresh server of each in turn every round.

With --spec-type T it compares speculation T against none instead, on the grounded prompt set
(bench/prompts/grounded.jsonl, chat, greedy; --spec-args "-md HEAD.gguf" for a drafter file): one stream over
--prompts prompts in turn (generation tokens/s from the server's timings) and --streams concurrent streams over the
next ones (aggregate generated tokens / wall time; --batches K runs K such batches on the following prompts, timed
together, for a longer window on a noisy host). Both servers restart every round, so drafter state shared across
requests (suffix's global tree, ngram-mod) never sees a prompt twice — unless the batches wrap around the set.
With --spec-type T --paired it runs one speculating server per round instead, and each batch twice back to back:
speculation off for its requests (speculative.n_max 0) and on, compared pair by pair (the host's swings cancel)."""
import argparse
import concurrent.futures
import json
import statistics
import subprocess
import pathlib
import shlex
import time
import urllib.request

from server_common import BEE, MODEL, start_server, stop_server, stream_completion

GROUNDED = pathlib.Path(__file__).resolve().parent / "prompts" / "grounded.jsonl"

PROMPT = "Write a long story about a lighthouse keeper and the sea."
RUN_PROMPT = "Once upon a time"  # bee run has no ignore-eos: this prompt runs greedy past 128 tokens


def run_streams(port, n, tokens):
    body = lambda i: {"path": "/v1/completions", "prompt": f"{PROMPT} Chapter {i + 1}.", "max_tokens": tokens,
                      "temperature": 0, "ignore_eos": True, "cache_prompt": False}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(n) as ex:
        res = list(ex.map(lambda i: stream_completion(port, body(i)), range(n)))
    wall = time.time() - t0
    errors = [e for _, _, e in res if e]
    assert not errors, errors
    return sum(r[0] for r in res) / wall


def bee_run_tps(tokens, threads):
    out = subprocess.run([str(BEE), "run", "-m", str(MODEL), "-p", RUN_PROMPT, "-n", str(tokens), "--temp", "0",
                          "-t", str(threads), "--json", "-c", "2048"], capture_output=True, text=True, check=True)
    t = json.loads(out.stdout)["timings"]
    assert t["predicted_n"] == tokens, f"bee run stopped after {t['predicted_n']} tokens"
    return t["predicted_per_second"]


def server_single_tps(port, tokens):
    """predicted_per_second from the server's own timings (generation only, like bee run's)."""
    import http.client
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request("POST", "/completion", json.dumps({"prompt": RUN_PROMPT, "n_predict": tokens, "temperature": 0,
                                                    "ignore_eos": True, "cache_prompt": False}))
    t = json.loads(conn.getresponse().read())["timings"]
    assert t["predicted_n"] == tokens
    return t["predicted_per_second"]


def chat(port, user, tokens, extra=None):
    body = {"messages": [{"role": "user", "content": user}], "max_tokens": tokens, "temperature": 0,
            "cache_prompt": False, **(extra or {})}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())["timings"]


def spec_round(args, extra, prompts):
    """(single-stream tok/s, N-stream aggregate tok/s, accepted/drafted) for one fresh server."""
    proc, port = start_server("-c", str(args.streams * 2048), "-np", str(args.streams), "-t", str(args.threads),
                              *extra, **({"model": args.model} if args.model else {}))
    try:
        single = [chat(port, p, args.tokens) for p in prompts[:args.prompts]]
        rest = prompts[args.prompts:] or prompts
        multi, wall = [], 0.0
        for b in range(args.batches):  # batch b: the next N prompts after the single-stream ones, wrapping around
            group = [rest[(b * args.streams + i) % len(rest)] for i in range(args.streams)]
            t0 = time.time()
            with concurrent.futures.ThreadPoolExecutor(args.streams) as ex:
                multi += list(ex.map(lambda p: chat(port, p, args.tokens), group))
            wall += time.time() - t0
    finally:
        stop_server(proc)
    single_tps = sum(t["predicted_n"] for t in single) * 1000.0 / sum(t["predicted_ms"] for t in single)
    drafted = sum(t.get("draft_n", 0) for t in single + multi)
    accepted = sum(t.get("draft_n_accepted", 0) for t in single + multi)
    return single_tps, sum(t["predicted_n"] for t in multi) / wall, (accepted, drafted)


def paired_main(a, prompts):
    """One speculating server per round; every batch of N requests runs twice back to back on the same prompts,
    once with speculation off for its requests (speculative.n_max 0: no drafting, no hidden-state capture) and once
    on, which one first alternating. A pair is seconds apart in one process, so the host's swings mostly cancel."""
    extra = ["--spec-type", a.spec_type, *shlex.split(a.spec_args)]
    ratios, tps = [], {"off": [], "on": []}
    for r in range(a.rounds):
        proc, port = start_server("-c", str(a.streams * 2048), "-np", str(a.streams), "-t", str(a.threads),
                                  *extra, **({"model": a.model} if a.model else {}))
        try:
            for b in range(a.batches):
                group = [prompts[(b * a.streams + i) % len(prompts)] for i in range(a.streams)]
                got = {}
                for mode in (("off", "on") if (r * a.batches + b) % 2 == 0 else ("on", "off")):
                    body = {"speculative.n_max": 0} if mode == "off" else None
                    t0 = time.time()
                    with concurrent.futures.ThreadPoolExecutor(a.streams) as ex:
                        res = list(ex.map(lambda p: chat(port, p, a.tokens, body), group))
                    got[mode] = sum(t["predicted_n"] for t in res) / (time.time() - t0)
                    if mode == "on":
                        acc = sum(t.get("draft_n_accepted", 0) for t in res)
                        dr = sum(t.get("draft_n", 0) for t in res)
                for k in got:
                    tps[k].append(got[k])
                ratios.append(got["on"] / got["off"])
                print(f"round {r + 1} batch {b + 1}: off {got['off']:.1f}, on {got['on']:.1f} tok/s = "
                      f"x{ratios[-1]:.3f} (accepted {acc}/{dr} drafted)", flush=True)
        finally:
            stop_server(proc)
    med = statistics.median
    print(f"{a.streams} streams, {a.spec_type} on vs off in the same server: median pair x{med(ratios):.3f} "
          f"(min x{min(ratios):.3f}, max x{max(ratios):.3f}, {sum(x > 1 for x in ratios)}/{len(ratios)} pairs above 1); "
          f"median off {med(tps['off']):.1f}, on {med(tps['on']):.1f} tok/s")


def spec_main(a):
    prompts = [json.loads(l)["user"] for l in pathlib.Path(a.prompt_set).read_text().splitlines() if l.strip()]
    assert len(prompts) > a.prompts, "not enough prompts in the set"
    if a.paired:
        return paired_main(a, prompts)
    s1, sn = {"none": [], a.spec_type: []}, {"none": [], a.spec_type: []}
    for r in range(a.rounds):  # alternating: the machine may be shared
        for name, extra in (("none", []), (a.spec_type, ["--spec-type", a.spec_type, *shlex.split(a.spec_args)])):
            one, many, (acc, dr) = spec_round(a, extra, prompts)
            s1[name].append(one)
            sn[name].append(many)
            print(f"round {r + 1} {name}: 1 stream {one:.1f} tok/s, {a.streams} streams {many:.1f} tok/s"
                  + (f", accepted {acc}/{dr} drafted" if dr else ""), flush=True)
    med = statistics.median
    t = a.spec_type
    print(f"median: 1 stream {med(s1[t]):.1f} vs {med(s1['none']):.1f} tok/s = x{med(s1[t]) / med(s1['none']):.2f}; "
          f"{a.streams} streams {med(sn[t]):.1f} vs {med(sn['none']):.1f} tok/s = x{med(sn[t]) / med(sn['none']):.2f} "
          f"({t} vs none)")


def compare_main(a):
    """1 and N streams on BEE and on a.compare, alternating fresh servers each round."""
    import server_common
    bins = {"this": str(BEE), "other": a.compare}
    one, many = {k: [] for k in bins}, {k: [] for k in bins}
    for r in range(a.rounds):
        for name, binary in bins.items():
            server_common.BEE = binary
            proc, port = start_server("-c", str(a.streams * 1024), "-np", str(a.streams), "-t", str(a.threads))
            try:
                run_streams(port, a.streams, 16)  # the first steps of a fresh process are slow
                one[name].append(run_streams(port, 1, a.tokens))
                many[name].append(run_streams(port, a.streams, a.tokens))
            finally:
                stop_server(proc)
            print(f"round {r + 1} {name}: 1 stream {one[name][-1]:.1f} tok/s, {a.streams} streams "
                  f"{many[name][-1]:.1f} tok/s (x{many[name][-1] / one[name][-1]:.2f})", flush=True)
    med = statistics.median
    for name, binary in bins.items():
        print(f"median {name} ({binary}): 1 stream {med(one[name]):.1f} tok/s, {a.streams} streams "
              f"{med(many[name]):.1f} tok/s = x{med(many[name]) / med(one[name]):.2f}")
    print(f"this / other: 1 stream x{med(one['this']) / med(one['other']):.3f}, {a.streams} streams "
          f"x{med(many['this']) / med(many['other']):.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--spec-type", help="compare this speculative type against none on grounded prompts")
    ap.add_argument("--prompt-set", default=str(GROUNDED), help="with --spec-type: JSON lines with a user field")
    ap.add_argument("--model", help="with --spec-type: the GGUF to serve (default: SmolLM2)")
    ap.add_argument("--spec-args", default="", help="more flags for the speculating server, e.g. \"-md HEAD.gguf\"")
    ap.add_argument("--prompts", type=int, default=4, help="grounded prompts for the single stream (--spec-type)")
    ap.add_argument("--batches", type=int, default=1,
                    help="with --spec-type: N-stream batches per round, each on the next N prompts (wrapping), "
                         "timed together: a longer window than one batch on a noisy host")
    ap.add_argument("--paired", action="store_true",
                    help="with --spec-type: one speculating server; each batch runs with speculation off "
                         "(speculative.n_max 0) and on, back to back, and the pairs are compared")
    ap.add_argument("--compare", metavar="BIN", help="time 1 and N streams on this binary and on BIN instead")
    a = ap.parse_args()
    if a.compare:
        return compare_main(a)
    if a.spec_type:
        return spec_main(a)
    proc, port = start_server("-c", str(a.streams * 1024), "-np", str(a.streams), "-t", str(a.threads))
    try:
        single, multi, srv, cli = [], [], [], []
        for r in range(a.rounds):
            single.append(run_streams(port, 1, a.tokens))
            multi.append(run_streams(port, a.streams, a.tokens))
            srv.append(server_single_tps(port, a.tokens))
            cli.append(bee_run_tps(a.tokens, a.threads))
            print(f"round {r + 1}: 1 stream {single[-1]:.1f} tok/s, {a.streams} streams {multi[-1]:.1f} tok/s "
                  f"(x{multi[-1] / single[-1]:.2f}); server {srv[-1]:.1f} vs bee run {cli[-1]:.1f} tok/s "
                  f"({100 * srv[-1] / cli[-1]:.0f}%)", flush=True)
    finally:
        stop_server(proc)
    med = statistics.median
    print(f"median: 1 stream {med(single):.1f} tok/s, {a.streams} streams {med(multi):.1f} tok/s aggregate "
          f"= x{med(multi) / med(single):.2f}; single-stream server/bee run = {100 * med(srv) / med(cli):.0f}% "
          f"({med(srv):.1f} vs {med(cli):.1f} tok/s)")


if __name__ == "__main__":
    main()
