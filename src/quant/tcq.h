// quant/tcq: trellis-coded quantization of one rotated 128-value group (specs/kv-turboquant.md §5):
// a right-shift "bitshift" trellis with L = 6 + k state bits (k = 3: 512 states, k = 2: 256), Viterbi
// encoding with a free initial state, and O(1) random-access decoding from a sliding bit window.
#pragma once
#include <cstdint>

namespace bee {

inline constexpr int kTcqGroup = 128;  // values per trellis (one rotation group)

// Codebooks indexed by state (quant/tcq_codebooks.cpp): values for coordinates of a rotated unit vector.
extern const float kTcqCodebook3[512];
extern const float kTcqCodebook2[256];

// Viterbi-encodes y (128 values) with k bits per step against codebook cb (2^(6+k) entries) and
// writes the stream (6 prefix bits, then k bits per step, LSB first, the rest zero) into qs, which
// holds (6 + 128k + 7) / 8 bytes. Returns Σ_t cb[state_t]², the squared norm of the reconstruction.
float tcq_encode(const float* y, int k, const float* cb, uint8_t* qs);

// State of step t: the L = 6 + k bits starting at stream bit k*t (the window never crosses 16 bits).
inline int tcq_state(const uint8_t* qs, int k, int t) {
    const int bp = k * t;
    const unsigned w = qs[bp >> 3] | ((unsigned)qs[(bp >> 3) + 1] << 8);
    return (int)((w >> (bp & 7)) & ((1u << (6 + k)) - 1));
}

}  // namespace bee
