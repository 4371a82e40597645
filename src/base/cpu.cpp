// base/cpu: cpuid-based feature detection.
#include "base/cpu.h"

#include <atomic>
#include <cpuid.h>
#include <cstdlib>
#include <cstring>

#include "base/log.h"

namespace bee {

static CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = c & (1u << 27);
    f.fma = c & (1u << 12);
    f.f16c = c & (1u << 29);
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo, hi;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = ((unsigned long long)hi << 32) | lo;
    }
    const bool ymm_ok = (xcr0 & 0x6) == 0x6;
    const bool zmm_ok = (xcr0 & 0xe6) == 0xe6;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        f.avx2 = ymm_ok && (b & (1u << 5));
        f.avx512f = zmm_ok && (b & (1u << 16));
        f.avx512dq = zmm_ok && (b & (1u << 17));
        f.avx512bw = zmm_ok && (b & (1u << 30));
        f.avx512vl = zmm_ok && (b & (1u << 31));
        f.avx512vnni = zmm_ok && (c & (1u << 11));
    }
    if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
        f.avxvnni = ymm_ok && (a & (1u << 4));
        f.avx512bf16 = zmm_ok && (a & (1u << 5));
    }
    if (!ymm_ok) f.fma = f.f16c = false;
    return f;
}

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

Isa cpu_isa_max() {
    const CpuFeatures& f = cpu_features();
    if (f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.avx2 && f.fma && f.f16c) return Isa::avx512;
    if (f.avx2 && f.fma && f.f16c) return Isa::avx2;
    return Isa::scalar;
}

static int isa_from_env() {
    Isa best = cpu_isa_max();
    const char* s = getenv("BEE_CPU");
    if (!s || !*s) return (int)best;
    Isa want;
    if (!strcmp(s, "scalar")) want = Isa::scalar;
    else if (!strcmp(s, "avx2")) want = Isa::avx2;
    else if (!strcmp(s, "avx512")) want = Isa::avx512;
    else {
        BEE_LOG_WARN("BEE_CPU=%s is not one of scalar|avx2|avx512; using %s", s, isa_name(best));
        return (int)best;
    }
    if ((int)want > (int)best) {
        BEE_LOG_WARN("BEE_CPU=%s is not supported by this CPU; using %s", s, isa_name(best));
        return (int)best;
    }
    return (int)want;
}

static std::atomic<int> g_isa{-1};

Isa cpu_isa() {
    int v = g_isa.load(std::memory_order_relaxed);
    if (v < 0) {
        v = isa_from_env();
        g_isa.store(v);
    }
    return (Isa)v;
}

void cpu_set_isa(Isa isa) {
    if ((int)isa > (int)cpu_isa_max()) isa = cpu_isa_max();
    g_isa.store((int)isa);
}

static std::atomic<int> g_vnni{-1};

bool cpu_avx_vnni() {
    int v = g_vnni.load(std::memory_order_relaxed);
    if (v < 0) {
        const char* s = getenv("BEE_AVX_VNNI");
        v = cpu_features().avxvnni && !(s && !strcmp(s, "0")) ? 1 : 0;
        g_vnni.store(v);
    }
    return v != 0;
}

void cpu_set_avx_vnni(bool on) { g_vnni.store(on && cpu_features().avxvnni ? 1 : 0); }

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

}  // namespace bee
