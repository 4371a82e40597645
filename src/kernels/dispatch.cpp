// kernels/dispatch: picks the vec_dot, the activation quantizer and the blocked matmul kernel for a weight
// type on the active ISA.
#include "base/cpu.h"
#include "kernels/gemm.h"
#include "kernels/kernels.h"
#include "kernels/x86/avx2.h"
#include "kernels/x86/avx512.h"

// note: the AVX2 table is referenced strongly on purpose. A weak reference would link without
// x86/avx2_table.cpp, but the linker never extracts an archive member to satisfy a weak symbol, so
// binaries that do not otherwise name bee::avx2:: would silently run the scalar reference.

namespace bee {

VecDotFn vec_dot_for(GgmlType wtype) {
    const QuantTraits* tr = quant_traits(wtype);
    if (!tr) return nullptr;
    if (cpu_isa() >= Isa::avx2) {
        if (VecDotFn f = avx2::vec_dot(wtype)) return f;
    }
    return tr->vec_dot;
}

QuantizeRowFn quantize_activation_for(GgmlType vec_dot_type) {
    const QuantTraits* tr = quant_traits(vec_dot_type);
    if (!tr) return nullptr;
    if (cpu_isa() >= Isa::avx512) {
        if (QuantizeRowFn f = avx512::quantize_activation(vec_dot_type)) return f;
    }
    if (cpu_isa() >= Isa::avx2) {
        if (QuantizeRowFn f = avx2::quantize_activation(vec_dot_type)) return f;
    }
    return tr->quantize_row;
}

const GemmKernel* gemm_kernel_for(GgmlType t, WeightLayout layout) {
    if (cpu_isa() >= Isa::avx512) return avx512::gemm_kernel(t, layout);
    if (cpu_isa() >= Isa::avx2) return avx2::gemm_kernel(t, layout);
    return nullptr;
}

}  // namespace bee
