// app/args_compat: llama.cpp flags that have no effect in Bee, or that Bee refuses, as a table.
#include "app/args_compat.h"

#include "model/offload.h"

namespace bee {

namespace {

// device: acted on by app/args_device.cpp when the build has the Vulkan layer, else ignored with the note.
enum class Act { ignore, refuse, device };

struct CompatRow {
    const char* names;
    unsigned groups;
    Act act;
    int n_values;      // values the flag takes (ignored rows)
    const char* note;  // the start-up note (ignore) or the error's reason (refuse)
};

constexpr unsigned M = kCompatModel, S = kCompatSpec, G = kCompatGen, V = kCompatServer, B = kCompatBench;
constexpr const char* kNoGpu = "no GPU backend in this build: all layers run on the CPU";
constexpr const char* kNoPin = "threads are not pinned or re-prioritized: the OS schedules Bee's thread pool";
constexpr const char* kMmap = "the model file is always memory-mapped (matrices are repacked into RAM at load)";
constexpr const char* kNoNet = "this build has no network access: download the GGUF and give it with -m FILE";
constexpr const char* kNoMedia = "this build has no multimodal support";

// clang-format off
constexpr CompatRow kRows[] = {
    // model and devices
    {"-ngl,--gpu-layers,--n-gpu-layers", M | B, Act::device, 1, kNoGpu},
    {"-dev,--device", M | B, Act::device, 1, kNoGpu},
    {"-sm,--split-mode", M | B, Act::ignore, 1, kNoGpu},
    {"-ts,--tensor-split", M | B, Act::ignore, 1, kNoGpu},
    {"-mg,--main-gpu", M | B, Act::ignore, 1, kNoGpu},
    {"-ot,--override-tensor", M | B, Act::device, 1, kNoGpu},
    {"-cmoe,--cpu-moe", M, Act::ignore, 0, "every tensor is in host memory (one CPU backend)"},
    {"-ncmoe,--n-cpu-moe", M | B, Act::ignore, 1, "every tensor is in host memory (one CPU backend)"},
    {"-kvo,--kv-offload,-nkvo,--no-kv-offload", M, Act::device, 0, kNoGpu},
    {"--op-offload,--no-op-offload", M, Act::ignore, 0, kNoGpu},
    {"--no-host", M, Act::ignore, 0, kNoGpu},
    {"-fit,--fit", M, Act::ignore, 1, "no device memory to fit: -c is taken as given"},
    {"-fitt,--fit-target", M, Act::ignore, 1, "no device memory to fit: -c is taken as given"},
    {"-fitc,--fit-ctx", M, Act::ignore, 1, "no device memory to fit: -c is taken as given"},
    {"--rpc", M | B, Act::ignore, 1, "no RPC backend in this build: the model runs in this process"},
    {"-fa,--flash-attn", M | B, Act::ignore, 1, "attention is always fused here (one pass over the cached keys, "
                                                "no score matrix)"},
    {"--mmap,--no-mmap", M, Act::ignore, 0, kMmap},
    {"-dio,--direct-io,-ndio,--no-direct-io", M, Act::ignore, 0, kMmap},
    {"-lm,--load-mode", M, Act::ignore, 1, kMmap},
    {"--repack,-nr,--no-repack", M, Act::ignore, 0, "weights are always repacked for this CPU's matmul tiles"},
    {"--swa-full", M, Act::ignore, 0, "sliding-window layers always keep every cached cell here"},
    {"-dt,--defrag-thold", M, Act::ignore, 1, "Bee's KV cache never needs defragmenting"},
    {"--numa", M | B, Act::ignore, 1, kNoPin},
    {"--prio,--prio-batch", M | B, Act::ignore, 1, kNoPin},
    {"--poll,--poll-batch", M | B, Act::ignore, 1, "workers spin briefly, then sleep (a fixed policy)"},
    {"-C,--cpu-mask,-Cr,--cpu-range,-Cb,--cpu-mask-batch,-Crb,--cpu-range-batch", M | B, Act::ignore, 1, kNoPin},
    {"--cpu-strict,--cpu-strict-batch", M | B, Act::ignore, 1, kNoPin},
    {"-tb,--threads-batch", M, Act::ignore, 1, "one thread pool (-t) serves prompt processing and generation"},
    {"--perf,--no-perf", M, Act::ignore, 0, "timings are always measured"},
    {"--offline", M, Act::ignore, 0, "Bee never uses the network"},
    {"-hft,--hf-token", M, Act::ignore, 1, "Bee never uses the network"},
    {"--log-colors", M | B, Act::ignore, 1, "Bee's log has no colors"},
    {"--log-prefix,--no-log-prefix", M | B, Act::ignore, 0, "every log line starts with 'bee <level>:'"},
    {"-hf,-hfr,--hf-repo", M, Act::refuse, 1, kNoNet},
    {"-hff,--hf-file", M, Act::refuse, 1, kNoNet},
    {"-mu,--model-url", M, Act::refuse, 1, kNoNet},
    {"-dr,--docker-repo", M, Act::refuse, 1, kNoNet},
    {"--embd-gemma-default,--fim-qwen-1.5b-default,--fim-qwen-3b-default,--fim-qwen-7b-default,--fim-qwen-7b-spec,"
     "--fim-qwen-14b-spec,--fim-qwen-30b-default,--gpt-oss-20b-default,--gpt-oss-120b-default,"
     "--vision-gemma-4b-default,--vision-gemma-12b-default", M, Act::refuse, 0, kNoNet},
    {"--control-vector,--control-vector-scaled,--control-vector-layer-range", M, Act::refuse, 1,
     "control vectors are not implemented: the output would differ from what was asked"},
    {"--completion-bash", M, Act::refuse, 0, "Bee prints no completion script"},
    // speculative decoding: the draft model's devices and threads
    {"-hfd,-hfrd,--hf-repo-draft,--spec-draft-hf", S, Act::refuse, 1,
     "this build has no network access: download the draft GGUF and give it with -md FILE"},
    {"-ctkd,--cache-type-k-draft,--spec-draft-type-k", S, Act::ignore, 1,
     "the draft model's KV cache is f16 (speculation's output is the target's either way)"},
    {"-ctvd,--cache-type-v-draft,--spec-draft-type-v", S, Act::ignore, 1,
     "the draft model's KV cache is f16 (speculation's output is the target's either way)"},
    {"-tbd,--threads-batch-draft,--spec-draft-threads-batch", S, Act::ignore, 1,
     "one thread pool (-td) serves the draft model"},
    {"-Cd,--cpu-mask-draft,--spec-draft-cpu-mask,-Crd,--cpu-range-draft,--spec-draft-cpu-range,-Cbd,"
     "--cpu-mask-batch-draft,--spec-draft-cpu-mask-batch", S, Act::ignore, 1, kNoPin},
    {"--cpu-strict-draft,--spec-draft-cpu-strict,--cpu-strict-batch-draft,--spec-draft-cpu-strict-batch", S,
     Act::ignore, 1, kNoPin},
    {"--prio-draft,--spec-draft-prio,--prio-batch-draft,--spec-draft-prio-batch", S, Act::ignore, 1, kNoPin},
    {"--poll-draft,--spec-draft-poll,--poll-batch-draft,--spec-draft-poll-batch", S, Act::ignore, 1,
     "workers spin briefly, then sleep (a fixed policy)"},
    {"-devd,--device-draft,--spec-draft-device", S, Act::ignore, 1, kNoGpu},
    {"-ngld,--gpu-layers-draft,--n-gpu-layers-draft,--spec-draft-ngl", S, Act::ignore, 1, kNoGpu},
    {"-otd,--override-tensor-draft,--spec-draft-override-tensor", S, Act::ignore, 1, kNoGpu},
    {"-cmoed,--cpu-moe-draft,--spec-draft-cpu-moe", S, Act::ignore, 0, kNoGpu},
    {"-ncmoed,--n-cpu-moe-draft,--spec-draft-n-cpu-moe,--spec-draft-ncmoe", S, Act::ignore, 1, kNoGpu},
    {"--spec-draft-p-split,--draft-p-split", S, Act::ignore, 1,
     "drafts are chains or the drafter's own trees (no split probability)"},
    {"--spec-draft-backend-sampling,--no-spec-draft-backend-sampling", S, Act::ignore, 0, kNoGpu},
    // generation
    {"-bs,--backend-sampling", G, Act::ignore, 0, kNoGpu},
    {"--warmup,--no-warmup", G, Act::ignore, 0, "Bee runs no warm-up pass"},
    {"-r,--reverse-prompt", G, Act::ignore, 1, "Bee has no interactive mode (use stop strings in requests)"},
    {"--adaptive-target,--adaptive-decay", G, Act::refuse, 1,
     "the adaptive-p sampler is not implemented: the sampling would differ from what was asked"},
    // server
    {"-e,--escape,--no-escape", V, Act::ignore, 0, "prompts arrive as JSON strings, already unescaped"},
    {"--no-jinja", V, Act::ignore, 0, "Bee renders every chat template with its own Jinja interpreter"},
    {"--props", V, Act::ignore, 0, "POST /props is not implemented (GET /props answers)"},
    {"--cache-idle-slots,--no-cache-idle-slots", V, Act::ignore, 0,
     "idle slots keep their cells until a new task needs them, then go to the RAM prompt cache (--cache-ram)"},
    {"-cms,--checkpoint-min-step", V, Act::ignore, 1,
     "recurrent-state checkpoints (--ctx-checkpoints) keep a fixed spacing of 64 positions"},
    {"--log-prompts-dir", V, Act::ignore, 1, "prompts are not written to files"},
    {"--sse-ping-interval", V, Act::ignore, 1, "streams send no keep-alive pings"},
    {"--reuse-port", V, Act::ignore, 0, "the port is bound once, without SO_REUSEPORT"},
    {"--ui-config,--webui-config,--ui-config-file,--webui-config-file", V, Act::ignore, 1,
     "Bee's chat page has no settings file"},
    {"--skip-chat-parsing", V, Act::refuse, 0,
     "Bee always parses tool calls and reasoning from the reply (the output would differ from what was asked)"},
    {"--no-skip-chat-parsing,--prefill-assistant", V, Act::ignore, 0, "this is Bee's only behaviour"},
    {"--no-prefill-assistant", V, Act::refuse, 0, "Bee always continues a final assistant message"},
    {"--spm-infill", V, Act::refuse, 0, "/infill prompts are built prefix-suffix-middle only"},
    {"--no-mmproj,--mmproj-auto,--no-mmproj-auto,--mmproj-offload,--no-mmproj-offload", V, Act::ignore, 0, kNoMedia},
    {"-mmdev,--mmproj-device,--media-path,--image-min-tokens,--image-max-tokens,--mtmd-batch-max-tokens", V,
     Act::ignore, 1, kNoMedia},
    {"-mm,--mmproj,-mmu,--mmproj-url", V, Act::refuse, 1, "this build has no multimodal support: images would be dropped"},
    {"--path,--api-prefix", V, Act::refuse, 1, "Bee serves its own routes and chat page at the root only"},
    {"--ssl-key-file,--ssl-cert-file", V, Act::refuse, 1, "this build has no TLS: put a TLS proxy in front of it"},
    // llama-bench
    {"-mmp,--mmap", B, Act::ignore, 1, kMmap},
    {"-nkvo,--no-kv-offload", B, Act::ignore, 1,
     "bee bench keeps the K/V of offloaded layers on the device (bee run -nkvo keeps it in host memory)"},
    {"-nr,--no-repack", B, Act::ignore, 1, "weights are always repacked for this CPU's matmul tiles"},
    {"--no-op-offload", B, Act::ignore, 1, kNoGpu},
    {"--delay", B, Act::ignore, 1, "tests run back to back"},
    {"--progress", B, Act::ignore, 0, "Bee prints no progress lines"},
    {"-embd,--embeddings", B, Act::ignore, 1, "bee bench measures generation only"},
};
// clang-format on

}  // namespace

void add_compat_options(ArgParser& p, unsigned groups) {
    for (const CompatRow& r : kRows) {
        if (!(r.groups & groups) || (r.act == Act::device && offload_built())) continue;
        if (r.act == Act::refuse) {
            p.refused(r.names, r.note);
        } else {
            p.ignored(r.names, r.n_values, r.note);
        }
    }
}

}  // namespace bee
