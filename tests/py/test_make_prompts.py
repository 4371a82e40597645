# tests/py/test_make_prompts: the committed drafter-training prompt set is what tools/train-drafter/make_prompts.py
# writes (deterministic), growing it keeps the prompts an existing dump answered, and no benchmark prompt — nor, from
# part 2 on, a paraphrase of one — is ever written.
import importlib.util
import json
import subprocess
import sys

from conftest import ROOT

TOOL = ROOT / "tools" / "train-drafter"


def load_module():
    spec = importlib.util.spec_from_file_location("make_prompts", TOOL / "make_prompts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write(tmp_path, n):
    out = tmp_path / f"p{n}.jsonl"
    subprocess.run([sys.executable, TOOL / "make_prompts.py", "--out", out, "--n", str(n)], check=True,
                   capture_output=True)
    return [json.loads(line)["prompt"] for line in out.read_text().splitlines()]


def test_committed_prompts_are_what_the_generator_writes(tmp_path):
    committed = [json.loads(line)["prompt"] for line in (TOOL / "prompts.jsonl").read_text().splitlines()]
    assert write(tmp_path, len(committed)) == committed
    assert len(set(committed)) == len(committed)


def test_growing_keeps_the_earlier_prompts(tmp_path):
    mod = load_module()
    small, big = write(tmp_path, mod.PART_1 - 50), write(tmp_path, mod.PART_1 + 300)
    assert big[:len(small)] == small
    assert len(big) == mod.PART_1 + 300


def test_no_benchmark_prompt_nor_a_paraphrase_in_part_2(tmp_path):
    mod = load_module()
    bench = mod.bench_prompts()
    assert len(bench) >= 20, "bench/prompts/*.jsonl not found"
    prompts = write(tmp_path, mod.PART_1 + 1000)
    assert not bench & set(prompts)
    bench_words = [mod.words(t) for t in bench]
    part2 = prompts[mod.PART_1:]
    assert not [p for p in part2 if mod.near_bench(p, bench_words)]
    # the check has teeth: a paraphrase of the open set's story prompt is near, an unrelated request is not
    assert mod.near_bench("Tell me a story about a sailor and a talking whale.", bench_words)
    assert not mod.near_bench("Explain photosynthesis in simple terms.", bench_words)
    # part 2 draws from its wider lists
    assert any(t in p for p in part2 for t in mod.MORE_TOPICS)
