// tests/unit/common/isa: helpers to run a test on every ISA path this CPU supports.
#pragma once
#include <vector>

#include "base/cpu.h"

namespace bee::test {

// Every ISA this machine runs, scalar first.
inline std::vector<Isa> all_isas() {
    std::vector<Isa> v;
    for (int i = 0; i <= (int)cpu_isa_max(); i++) v.push_back((Isa)i);
    return v;
}

// Sets the ISA for a scope and restores the previous one.
struct IsaScope {
    Isa saved;
    explicit IsaScope(Isa isa) : saved(cpu_isa()) { cpu_set_isa(isa); }
    ~IsaScope() { cpu_set_isa(saved); }
};

// Sets whether the AVX2 level uses AVX-VNNI for a scope (base/cpu.h cpu_avx_vnni) and restores it.
struct VnniScope {
    bool saved;
    explicit VnniScope(bool on) : saved(cpu_avx_vnni()) { cpu_set_avx_vnni(on); }
    ~VnniScope() { cpu_set_avx_vnni(saved); }
};

// The AVX2 dot-product variants this machine runs: without AVX-VNNI, and with it if the CPU has it.
inline std::vector<bool> vnni_modes() {
    std::vector<bool> v{false};
    if (cpu_features().avxvnni) v.push_back(true);
    return v;
}

}  // namespace bee::test
