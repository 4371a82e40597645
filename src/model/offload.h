// model/offload: a model's layers and output head on a Vulkan device (-ngl, -ot): their weights uploaded
// once, their K/V cells in device memory (or, with -nkvo, in the host KvCache with attention on the CPU),
// the residual stream crossing to and from the host only where the placement changes between the CPU and the
// device. Engine::decode runs the CPU layers itself and hands the device layers here.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kv/kv_cache.h"

namespace bee {

class Model;

// -ot PATTERN=BUFTYPE: tensors whose GGUF name the regex finds (std::regex_search, ECMAScript) go to the
// buffer `buffer`: "CPU" or a device of `bee --list-devices` ("Vulkan0"; device is its index).
struct TensorOverride {
    std::string pattern, buffer;
    int device = -1;  // -1: CPU
};
// "PATTERN=BUFTYPE[,PATTERN=BUFTYPE...]" (one -ot value) appended to *out; throws Error saying what is wrong
// (no '=', an empty pattern, a bad regex, a buffer type other than CPU / VulkanN).
void parse_tensor_overrides(const std::string& value, std::vector<TensorOverride>* out);

struct OffloadParams {
    int n_gpu_layers = 0;  // the last N layers on the device; N >= n_layer: every layer and the output head
    std::string device;    // gpu::Device selector: "" the best device, an index of --list-devices, or a name part
    std::vector<TensorOverride> overrides;  // -ot, in order: the first pattern that finds a tensor decides it
    bool kv_offload = true;  // -kvo; false (-nkvo): device layers keep K/V in host memory, attention on the CPU
    // Command lists kept recorded per shape (layers, rows, input spans) and resubmitted, LRU; 0 records
    // every submission anew (the environment's BEE_GPU_LISTS=N overrides it, for comparisons).
    int n_lists = 16;
};

// Whether this build has the Vulkan layer (BEE_VULKAN); without it create() always throws.
bool offload_built();

// Where each layer and the output head run. Bee places whole layers (a layer runs where its tensors are):
// - a layer with a tensor -ot sends to CPU runs on the CPU, whatever -ngl says;
// - else a layer with a tensor -ot sends to a device runs on the device, even outside -ngl;
// - else the layer follows -ngl (the last N layers);
// - the output head (output_norm, output, or token_embd when the head is tied to it) likewise, following
//   -ngl >= n_layer by default. Token embeddings (get_rows) and other tensors always stay on the CPU.
struct OffloadPlan {
    std::vector<bool> layers;  // [n_layer]
    bool head = false;
    int device = -1;                 // the device index -ot named, or -1
    std::vector<std::string> notes;  // tensors sent to the device that stay on the CPU anyway
    int n_device_layers() const;
    bool any() const { return head || n_device_layers() > 0; }
    // "layers 0..3, 8 and 10..29 and the output head"
    std::string describe() const;
};
// Throws Error for a pattern that finds no tensor of the model, or -ot naming two devices.
OffloadPlan plan_offload(const Model& model, const OffloadParams& p);

// One ubatch as the device sees it (Engine::build_visible's lists).
struct OffloadStep {
    int n_rows = 0;
    const int32_t* pos = nullptr;                               // [n_rows]
    const int32_t* cells = nullptr;                             // [n_rows] KV cell of each row
    const std::vector<int32_t>* const* visible_full = nullptr;  // [n_rows] cells, ascending position
    const std::vector<int32_t>* const* visible_swa = nullptr;   // [n_rows], read for sliding-window layers
};

// -nkvo: a device layer's attention on the host (model/forward.cpp attend): q (n_rows, n_head * head_dim),
// k and v (n_rows, n_head_kv * head_dim) after the projections and q/k norms, before rope. Returns the
// attention output (n_rows, n_head * head_dim), which the device takes as the output projection's input.
using HostAttention = std::function<const float*(int il, float* q, float* k, float* v)>;

class Offload {
public:
    // Opens the device and uploads the weights of the plan's layers (and of the head when plan.head);
    // allocates their K/V for kv's cells unless p.kv_offload is off. Returns nullptr with the reason in
    // *no_device when the build has no Vulkan or no device opens (neither p.device nor -ot named one: the
    // caller runs on the CPU). Throws Error saying why when a named device does not open, or something is
    // not supported on the device yet: the architecture (ArchDef::block), a weight type without a device
    // matmul, a KV type other than f16 (device KV only), heads of unequal K/V width or wider than 256.
    static std::unique_ptr<Offload> create(const Model& model, const KvCache& kv, int n_ubatch, const OffloadParams& p,
                                           const OffloadPlan& plan, std::string* no_device);
    virtual ~Offload() = default;

    virtual bool on_device(int il) const = 0;  // layer il runs here
    virtual bool has_head() const = 0;         // the output norm and head run here
    virtual bool kv_on_device() const = 0;     // false with -nkvo: attention through HostAttention
    virtual int device_index() const = 0;      // N of the device's VulkanN in --list-devices
    // "layers 10..29 and the output head on NVIDIA H200 (83.2 MiB of weights, 45.0 MiB of KV)"
    virtual std::string describe() const = 0;

    // Takes one ubatch's inputs (cells, visibility lists, positions).
    virtual void begin(const OffloadStep& s) = 0;
    // x (n_rows, n_embd): the residual stream entering the next layer run (or the head) on the device.
    virtual void upload_x(const float* x) = 0;
    // Runs layers [l0, l1) of the ubatch on the device (each on_device), in order; `host` is called for each
    // layer's attention when !kv_on_device().
    virtual void run_layers(int l0, int l1, const HostAttention& host) = 0;
    // The residual stream after the last layer run, back into x (n_rows, n_embd).
    virtual void download_x(float* x) = 0;
    // The output norm and head for the ubatch rows `rows` (after every layer): logits (rows, n_vocab),
    // before the final soft-cap. Only when has_head().
    virtual void head(const std::vector<int32_t>& rows, float* logits) = 0;

    // The device K/V of the offloaded layers, byte for byte into kv's rows of those layers (every cell), and
    // back (nothing with -nkvo). The host rows of offloaded layers hold nothing current otherwise: sequence
    // memory pulls before it reads or rewrites rows (save, load, K shift) and pushes after it rewrote them.
    virtual void pull_kv(KvCache& kv) = 0;
    virtual void push_kv(const KvCache& kv) = 0;

    // Submissions so far: recorded anew, and resubmitted as recorded (OffloadParams::n_lists); host
    // seconds spent recording.
    struct ListStats {
        uint64_t recorded = 0, reused = 0;
        double record_s = 0;
    };
    virtual ListStats list_stats() const = 0;
};

}  // namespace bee
