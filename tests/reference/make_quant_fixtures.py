#!/usr/bin/env python3
"""make_quant_fixtures: independent reference data for src/quant, computed with gguf-py (pip `gguf`).

Writes tests/data/quant/:
  deq_<type>.bqf   random raw blocks (fp16 scale fields set to finite values) and the floats
                   gguf.quants.dequantize computes for them; our dequantize_row must match bit for bit.
  quant_<type>.bqf float rows and the bytes gguf.quants.quantize writes for them (only for the types
                   gguf-py can quantize); our reference quantize_row must match byte for byte.

File layout (little endian): 24-byte header = magic b"BQFX", u32 version (1), u32 kind (0 = dequant,
1 = quantize), u32 ggml type id, u32 n_blocks, u32 bytes per block; then for kind 0 the raw blocks
followed by n_blocks * block_size float32, for kind 1 the float32 input followed by the raw blocks.

Run from the repository root:  python3 tests/reference/make_quant_fixtures.py
Deterministic (seeded); rerunning rewrites identical files for the same gguf-py version.
"""
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "quant")

# Byte offsets of the fp16 scale fields inside one block (ggml-common.h layouts).
FP16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
DEQ_BLOCKS = {T.F16: 512, T.BF16: 512, T.Q4_0: 16, T.Q4_1: 16, T.Q5_0: 16, T.Q5_1: 16, T.Q8_0: 16,
              T.Q2_K: 8, T.Q3_K: 8, T.Q4_K: 8, T.Q5_K: 8, T.Q6_K: 8}
QUANT_TYPES = [T.F16, T.BF16, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0]


def write_fixture(name, kind, qtype, n_blocks, first, second):
    _, type_size = GGML_QUANT_SIZES[qtype]
    header = b"BQFX" + struct.pack("<5I", 1, kind, int(qtype), n_blocks, type_size)
    path = os.path.join(OUT_DIR, name)
    with open(path, "wb") as f:
        f.write(header + first.tobytes() + second.tobytes())
    return os.path.getsize(path)


def random_scales(rng, n):
    """Finite fp16 scales: mostly normal magnitudes of both signs, plus zero and a subnormal."""
    mags = 10.0 ** rng.uniform(-4, 0.5, size=n)
    vals = (mags * rng.choice([-1.0, 1.0], size=n)).astype(np.float16)
    vals[0] = np.float16(0.0)
    if n > 2:
        vals[2] = np.float16(3e-6)  # subnormal in fp16
    return vals.view(np.uint16)


def random_half_bits(rng, n, exp_mask, clear_bit):
    """Random 16-bit floats (fp16 or bf16 bit patterns) with inf/NaN exponents removed."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32).astype(np.uint16)
    bad = (bits & exp_mask) == exp_mask
    bits[bad] &= np.uint16(0xFFFF ^ clear_bit)
    bits[:6] = [0x0000, 0x8000, 0x0001, 0x8001, 0x7BFF if exp_mask == 0x7C00 else 0x7F7F, 0x3C00]
    return bits


def make_dequant(rng, qtype):
    n_blocks = DEQ_BLOCKS[qtype]
    block_size, type_size = GGML_QUANT_SIZES[qtype]
    if qtype == T.F16:
        raw = random_half_bits(rng, n_blocks, 0x7C00, 0x4000).view(np.uint8).reshape(n_blocks, 2)
    elif qtype == T.BF16:
        raw = random_half_bits(rng, n_blocks, 0x7F80, 0x4000).view(np.uint8).reshape(n_blocks, 2)
    else:
        raw = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint16).astype(np.uint8)
        for off in FP16_FIELDS[qtype]:
            raw[:, off:off + 2] = random_scales(rng, n_blocks).view(np.uint8).reshape(n_blocks, 2)
    floats = quants.dequantize(raw, qtype).astype(np.float32).reshape(-1)
    assert floats.size == n_blocks * block_size and np.all(np.isfinite(floats))
    return write_fixture(f"deq_{qtype.name.lower()}.bqf", 0, qtype, n_blocks, raw, floats)


def quant_input(rng, qtype, n_blocks):
    block_size, _ = GGML_QUANT_SIZES[qtype]
    n = n_blocks * block_size
    x = (rng.standard_normal(n) * 10.0 ** rng.uniform(-3, 1, size=n)).astype(np.float32)
    if block_size == 1:  # half types: rounding ties, overflow, subnormal results
        x[:8] = [65504.0, 65520.0, 1e5, -1e5, 1e-7, -3e-8, 1.0 + 2.0**-11, 1.0 + 3 * 2.0**-11]
        x[8:10] = [np.float32(1.0) + np.float32(2.0**-8), np.float32(2.0**-130)]
        if qtype == T.BF16:
            x[10] = np.float32("nan")
        return x
    blocks = x.reshape(n_blocks, block_size)
    blocks[1] = 0.0                                   # all-zero block
    blocks[2] = np.float32(0.75)                      # constant block
    blocks[3] = 0.0
    blocks[3][5] = np.float32(-2.5)                   # single non-zero
    blocks[4] = np.arange(block_size, dtype=np.float32) - 16  # exact grid values, ties in rounding
    return x


def make_quant(rng, qtype):
    block_size, _ = GGML_QUANT_SIZES[qtype]
    n_blocks = 512 if block_size == 1 else 16
    x = quant_input(rng, qtype, n_blocks)
    with np.errstate(over="ignore"):  # F16 inputs beyond 65504 overflow to inf on purpose
        raw = quants.quantize(x.reshape(1, -1), qtype).view(np.uint8).reshape(-1)
    return write_fixture(f"quant_{qtype.name.lower()}.bqf", 1, qtype, n_blocks, x, raw)


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    rng = np.random.default_rng(20240611)
    total = 0
    for qtype in DEQ_BLOCKS:
        total += make_dequant(rng, qtype)
    for qtype in QUANT_TYPES:
        total += make_quant(rng, qtype)
    print(f"wrote {len(DEQ_BLOCKS) + len(QUANT_TYPES)} fixtures, {total} bytes, to {os.path.normpath(OUT_DIR)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
