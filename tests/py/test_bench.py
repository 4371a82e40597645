# tests/py/test_bench: `bee bench` output shapes (json, md, csv), the bandwidth probe, and clean errors.
import json

from test_cli import assert_clean_error

FIELDS = {"model_filename", "model_type", "model_size", "model_n_params", "n_threads", "n_batch", "n_ubatch",
          "type_k", "type_v", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
          "samples_ns", "samples_ts"}
SMALL = ("-p", "16", "-n", "4", "-r", "2", "-t", "2")


def test_bench_json(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL, "-o", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 2
    pp, tg = rows
    for row in rows:
        assert set(row) >= FIELDS
        assert row["avg_ts"] > 0 and row["avg_ns"] > 0
        assert len(row["samples_ns"]) == 2 and len(row["samples_ts"]) == 2
        assert row["model_type"] == "llama 135M Q4_1"
        assert row["n_threads"] == 2 and row["type_k"] == "f16"
    assert (pp["n_prompt"], pp["n_gen"]) == (16, 0) and "gbps" not in pp
    assert (tg["n_prompt"], tg["n_gen"], tg["n_depth"]) == (0, 4, 0)
    assert tg["bytes_per_token"] > 0.5 * tg["model_size"] and tg["gbps"] > 0


def test_bench_lists_and_depth(bee, smollm):
    r = bee("bench", "-m", smollm, "-p", "8,16", "-n", "2", "-d", "0,8", "-r", "1", "-t", "2", "-o", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert [(x["n_prompt"], x["n_gen"], x["n_depth"]) for x in rows] == [(8, 0, 0), (16, 0, 0), (0, 2, 0), (0, 2, 8)]
    assert rows[3]["bytes_per_token"] > rows[2]["bytes_per_token"]  # KV rows read at depth


def test_bench_md(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL)
    assert r.returncode == 0, r.stderr
    assert "| model" in r.stdout and "pp16" in r.stdout and "tg4" in r.stdout and "±" in r.stdout
    assert "CPU" in r.stdout


def test_bench_csv(bee, smollm):
    r = bee("bench", "-m", smollm, *SMALL, "-o", "csv")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 3
    header = lines[0].split(",")
    assert header[:4] == ["model_filename", "model_type", "model_size", "model_n_params"]
    assert set(header) >= FIELDS | {"bytes_per_token", "gbps"}


def test_bench_bandwidth(bee):
    r = bee("bench", "--bandwidth", "--bandwidth-mb", "64", "-t", "2")
    assert r.returncode == 0, r.stderr
    assert "GB/s" in r.stdout
    rows = [line for line in r.stdout.splitlines() if line.startswith("|") and line.split("|")[1].strip().isdigit()]
    assert rows and all(float(x.split("|")[2]) > 0 for x in rows)


def test_bench_errors(bee, smollm, tmp_path):
    assert_clean_error(bee("bench", "-m", smollm, "-p", "abc"), "-p")
    assert_clean_error(bee("bench", "-m", smollm, "-o", "xml"), "-o")
    assert_clean_error(bee("bench", "-m", smollm, "-ctk", "q9"), "-ctk")
    assert_clean_error(bee("bench", "-p", "16"), "no model")
    assert_clean_error(bee("bench", "-m", tmp_path / "nope.gguf"), "nope.gguf")
    assert_clean_error(bee("bench", "-m", smollm, "-p", "0", "-n", "0"), "no tests")
