// tests/fuzz/fuzz_server: libFuzzer target for request parsing without HTTP — any input is a request
// body that must become typed tasks (generation fields, prompts, the chat prompt through the template)
// or be refused with HttpError / bee::Error; a crash, a hang or any other exception is a finding.
// Needs the model of BEE_FUZZ_MODEL (default models/SmolLM2-135M-Instruct.Q4_1.gguf, from the repo root).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "server/chat_prompt.h"
#include "server/context.h"
#include "server/server.h"
#include "server/wire_generation.h"

namespace {

bee::server::ServerContext* g_ctx = nullptr;

void parse_request(bee::server::ServerContext& ctx, const bee::server::Json& body) {
    using namespace bee::server;
    for (Api api : {Api::native, Api::oai_completion, Api::oai_chat}) {
        try {
            GenParams g = parse_gen_params(body, ctx, api);
            parse_n_choices(body);
            if (body.contains("prompt")) make_tasks(ctx, tokenize_prompts(body["prompt"], ctx.tokenizer()).at(0), g, 1);
        } catch (const HttpError&) {
        } catch (const bee::Error&) {}
    }
    try {
        ChatPrompt cp = render_chat_prompt(ctx, body);
        make_task(ctx, ctx.tokenizer().encode(cp.text, true, true), GenParams{});
    } catch (const HttpError&) {
    } catch (const bee::Error&) {}
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* model = getenv("BEE_FUZZ_MODEL");
    static bee::server::ServerContext ctx;
    ctx.params.model_path = model ? model : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
    ctx.params.sched.n_parallel = 1;
    bee::EngineParams ep;
    ep.n_ctx = 512;
    ep.n_seq_max = 1;
    ep.n_threads = 1;
    bee::server::load_server_context(ctx, ep);
    g_ctx = &ctx;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace bee::server;
    Json body;
    try {
        body = parse_json_bounded(std::string(reinterpret_cast<const char*>(data), size), kMaxJsonDepth);
    } catch (const HttpError&) {
        return 0;
    }
    if (body.is_object()) parse_request(*g_ctx, body);
    return 0;
}
