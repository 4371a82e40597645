// base/cpu: CPU feature detection and the ISA level kernels dispatch on (BEE_CPU=scalar|avx2|avx512 forces one;
// BEE_AVX_VNNI=0 keeps the AVX2 level off AVX-VNNI).
#pragma once

namespace bee {

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;
    bool avx512vnni = false, avx512bf16 = false, avxvnni = false;
};

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

const CpuFeatures& cpu_features();
// Best ISA this CPU supports, capped by BEE_CPU if set. Computed once.
Isa cpu_isa();
// Best ISA this CPU supports, ignoring BEE_CPU (tests loop over scalar..this).
Isa cpu_isa_max();
// Overrides the ISA for the rest of the process (tests). Clamped to cpu_isa_max().
void cpu_set_isa(Isa isa);
// Whether the AVX2 level may use AVX-VNNI (256-bit vpdpbusd): the CPU has it and neither BEE_AVX_VNNI=0
// nor cpu_set_avx_vnni(false) turned it off. Only consulted when cpu_isa() is avx2.
bool cpu_avx_vnni();
void cpu_set_avx_vnni(bool on);  // tests; on is clamped to what the CPU has
const char* isa_name(Isa isa);

}  // namespace bee
