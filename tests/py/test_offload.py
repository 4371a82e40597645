"""-ngl / -ot / -nkvo through `bee run` on Mesa's llvmpipe (`make setup` installs it; the tests skip in a build
without Vulkan or on a machine without a Vulkan device, and fail there under BEE_REQUIRE_GPU=1, which
`make test` sets, so a broken install cannot pass as a skip): greedy output with speculation (a model-free
drafter, and the EAGLE-3 head, which reads hidden states captured on the device) equals the output
without it on the offloaded model; -ot and -nkvo act, and bad -ot values are clear errors. llvmpipe runs
SmolLM2 at seconds per token: few tokens."""
import json
import os
import subprocess

import pytest

from conftest import BEE, ROOT

EAGLE3 = ROOT / "drafters" / "SmolLM2-135M-Instruct.eagle3.gguf"


def vulkan_device():
    """Whether this bee has the Vulkan layer and a device to run it on."""
    if not BEE.exists():
        return False
    r = subprocess.run([str(BEE), "run", "--help"], capture_output=True, text=True)
    if "layers on the Vulkan device" not in r.stdout + r.stderr:
        return False
    r = subprocess.run([str(BEE), "--list-devices"], capture_output=True, text=True)
    return "Vulkan0:" in r.stdout


HAVE_DEVICE = vulkan_device()
REQUIRED = os.environ.get("BEE_REQUIRE_GPU") == "1"


@pytest.fixture(autouse=True)
def _device_or_skip():
    if not HAVE_DEVICE:
        why = "no Vulkan layer in this build, or no Vulkan device"
        if REQUIRED:
            pytest.fail(why + " (BEE_REQUIRE_GPU=1: `make setup` installs Mesa's software driver)")
        pytest.skip(why)

DEVICE = ["-dev", "0"]  # by index: unnamed, a CPU implementation such as llvmpipe is not used


def run_json(bee, *args):
    r = bee("run", *args, "--json", timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def offload_log(bee, *args):
    """The start-up log of a one-token run with args (--json would keep the log to warnings)."""
    r = bee("run", *args, "-p", "hi", "-n", "1", "--temp", "0", "-t", "2", timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stderr


def test_speculation_on_the_offloaded_model_equals_plain_decoding(bee, smollm):
    base = ["-m", smollm, "-p", "a b a b a b a b a", "-n", "6", "--temp", "0", "-t", "2", "-ngl", "99", *DEVICE]
    assert "offload: layers 0..29 and the output head" in offload_log(bee, *base[:2], *base[-4:])
    plain = run_json(bee, *base)
    assert len(plain["tokens"]) == 6
    for extra in (["--spec-type", "suffix"], ["-md", EAGLE3, "--spec-draft-n-max", "3"]):
        spec = run_json(bee, *base, *extra)
        assert spec["tokens"] == plain["tokens"], extra
        assert spec["timings"].get("draft_n", 0) > 0, (extra, spec["timings"])


def test_override_tensor_and_no_kv_offload_act(bee, smollm):
    # one layer on the device by -ot alone, its q8_0 K/V in host memory (-nkvo)
    placed = ["-m", smollm, *DEVICE, "-ot", r"blk\.29\.=Vulkan0", "-nkvo", "-ctk", "q8_0", "-ctv", "q8_0"]
    err = offload_log(bee, *placed)
    assert "offload: layers 29 on" in err and "attention on the CPU (-nkvo)" in err, err
    out = run_json(bee, *placed, "-p", "The capital of France is", "-n", "3", "--temp", "0", "-t", "2")
    cpu = run_json(bee, "-m", smollm, "-p", "The capital of France is", "-n", "3", "--temp", "0", "-t", "2",
                     "-ctk", "q8_0", "-ctv", "q8_0")
    assert out["tokens"][0] == cpu["tokens"][0]
    # the same layer with its q8_0 K/V on the device
    dev_kv = run_json(bee, "-m", smollm, *DEVICE, "-ot", r"blk\.29\.=Vulkan0", "-ctk", "q8_0", "-ctv", "q8_0",
                      "-p", "The capital of France is", "-n", "3", "--temp", "0", "-t", "2")
    assert dev_kv["tokens"][0] == cpu["tokens"][0]


@pytest.mark.parametrize("value,message", [
    (r"blk\.99\.=CPU", "the pattern finds no tensor"),
    (r"blk\.1\.=CUDA0", "unknown buffer type 'CUDA0'"),
    (r"blk\.(1=CPU", "not a valid regular expression"),
    ("CPU", "is not PATTERN=BUFTYPE"),
])
def test_bad_override_tensor_values_are_clear_errors(bee, smollm, value, message):
    r = bee("run", "-m", smollm, "-p", "hi", "-n", "1", "-ot", value)
    assert r.returncode != 0 and message in r.stderr, r.stderr
