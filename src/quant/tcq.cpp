// quant/tcq: the Viterbi encoder of the bitshift trellis (spec §5 "Encode").
#include "quant/tcq.h"

#include <cstring>

#include "base/cpu.h"

namespace bee {

// tcq_avx2.cpp / tcq_avx512.cpp: the same forward pass with 8 / 16 states per vector, bit-identical
// (called only when cpu_isa() allows them).
int tcq_viterbi_avx2(const float* y, int k, const float* cb, uint8_t (*bt)[64]);
int tcq_viterbi_avx512(const float* y, int k, const float* cb, uint8_t (*bt)[64]);

namespace {

// The forward pass: fills bt[t][tail] (the j of the best predecessor) and returns the final state.
// Trellis: next = (prev >> k) | (out << 6). A state's low 6 bits are the top 6 bits of its predecessor,
// so the predecessors of ns are ((ns & 63) << k) | j for j < 2^k, and the best one depends only on
// ns & 63: one minimum per 6-bit "tail" serves all 2^k states that share it.
int tcq_viterbi_scalar(const float* y, int k, const float* cb, uint8_t (*bt)[64]) {
    const int n_states = 1 << (6 + k), n_pred = 1 << k;
    float cost[512], next[512];
    for (int s = 0; s < n_states; s++) cost[s] = 0.0f;  // free initial state
    for (int t = 0; t < kTcqGroup; t++) {
        float best[64];
        for (int tail = 0; tail < 64; tail++) {
            const float* c = cost + (tail << k);
            int bj = 0;
            for (int j = 1; j < n_pred; j++)
                if (c[j] < c[bj]) bj = j;  // strict <: the lowest j wins ties
            best[tail] = c[bj];
            bt[t][tail] = (uint8_t)bj;
        }
        for (int ns = 0; ns < n_states; ns++) {
            const float d = y[t] - cb[ns];
            next[ns] = best[ns & 63] + d * d;
        }
        memcpy(cost, next, sizeof(float) * n_states);
    }
    int s = 0;
    for (int i = 1; i < n_states; i++)
        if (cost[i] < cost[s]) s = i;
    return s;
}

}  // namespace

float tcq_encode(const float* y, int k, const float* cb, uint8_t* qs) {
    uint8_t bt[kTcqGroup][64];  // (step, tail) -> j of the best predecessor
    const Isa isa = cpu_isa();
    int s = isa >= Isa::avx512 ? tcq_viterbi_avx512(y, k, cb, bt)
            : isa >= Isa::avx2 ? tcq_viterbi_avx2(y, k, cb, bt)
                               : tcq_viterbi_scalar(y, k, cb, bt);
    // Backtrack: out_t is the top k bits of state_t; the state before step t is ((s & 63) << k) | bt.
    uint8_t out[kTcqGroup];
    for (int t = kTcqGroup - 1; t >= 0; t--) {
        out[t] = (uint8_t)(s >> 6);
        s = ((s & 63) << k) | bt[t][s & 63];
    }
    const int prefix = (s >> k) & 63;  // the free initial state's part that state_0 keeps
    const int n_bytes = (6 + kTcqGroup * k + 7) / 8;
    memset(qs, 0, (size_t)n_bytes);
    auto put = [qs](int bit, int v, int nbits) {
        for (int i = 0; i < nbits; i++)
            if ((v >> i) & 1) qs[(bit + i) >> 3] |= (uint8_t)(1u << ((bit + i) & 7));
    };
    put(0, prefix, 6);
    for (int t = 0; t < kTcqGroup; t++) put(6 + k * t, out[t], k);
    float sq = 0.0f;
    for (int t = 0; t < kTcqGroup; t++) {
        const float c = cb[tcq_state(qs, k, t)];
        sq += c * c;
    }
    return sq;
}

}  // namespace bee
