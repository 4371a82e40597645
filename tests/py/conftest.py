# tests/py/conftest: shared fixtures for black-box tests of the `bee` binary.
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEE = pathlib.Path(os.environ.get("BEE_BIN", ROOT / "build" / "bee"))
SMOLLM = ROOT / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA = ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"


def run_bee(*args, timeout=300, **kw):
    """Runs bee with args; returns CompletedProcess (text mode)."""
    return subprocess.run([str(BEE), *map(str, args)], capture_output=True, text=True, timeout=timeout, **kw)


@pytest.fixture(scope="session")
def bee():
    assert BEE.exists(), f"{BEE} is missing: run `make build`"
    return run_bee


@pytest.fixture(scope="session")
def smollm():
    assert SMOLLM.exists(), f"{SMOLLM} is missing: run `make models`"
    return SMOLLM


@pytest.fixture(scope="session")
def gemma():
    assert GEMMA.exists(), f"{GEMMA} is missing: run `make models`"
    return GEMMA
