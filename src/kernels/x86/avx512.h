// kernels/x86/avx512: AVX-512 (F, BW, DQ, VL, VNNI) fast paths. Only called when cpu_isa() >= Isa::avx512.
#pragma once
#include <utility>

#include "kernels/gemm.h"
#include "quant/quant.h"

namespace bee::avx512 {

// Blocked matmul kernel for weight type `wtype` stored in `layout`, or nullptr if none.
const GemmKernel* gemm_kernel(GgmlType wtype, WeightLayout layout);

// Activation quantizer into `t` (Q8_0, Q8_1; nullptr for others), byte-identical to the reference.
QuantizeRowFn quantize_activation(GgmlType t);

// Calls f.template operator()<C>() with C = nc, for nc in 1..N: the tiles are compiled per token count
// so their accumulators stay in registers; this picks the instance at run time.
template <int N, class F>
inline void with_cols(int nc, F&& f) {
    [&]<int... I>(std::integer_sequence<int, I...>) {
        (void)((nc == I + 1 && (f.template operator()<I + 1>(), true)) || ...);
    }(std::make_integer_sequence<int, N>{});
}

}  // namespace bee::avx512
