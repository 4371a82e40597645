// server/routes_infill: POST /infill, llama-server's fill-in-the-middle completion (code editors such as
// llama.vim call it): the code before the cursor (input_prefix), after it (input_suffix), other files
// (input_extra [{filename, text}]) and text already typed at the cursor (prompt) become one FIM prompt,
//   [extra context] [FIM_PRE] prefix prompt [FIM_SUF] suffix [FIM_MID]
// with the repository form of the extra context where the vocabulary has FIM repo/file-separator tokens:
//   [FIM_REP] "myproject\n" ([FIM_SEP] filename "\n" text)... [FIM_SEP] "filename\n"
// (else each file after "\n\n--- snippet ---\n\n"). As llama-server does, the prefix keeps its last 3/4 of
// -b tokens, the suffix its first -b/4 minus the prompt, and the extra context what is left of the slot's
// context after -b and twice n_predict, its most recent tokens. The rest is /completion (n_indent and
// t_max_predict_ms are the usual stop rules for it).
#include <algorithm>

#include "server/request.h"
#include "server/routes.h"

namespace bee::server {

namespace {

std::string string_field(const Json& body, const char* key) {
    auto it = body.find(key);
    if (it == body.end() || it->is_null()) return "";
    if (!it->is_string()) bad_request("'%s' must be a string", key);
    return it->get<std::string>();
}

std::vector<int32_t> infill_prompt(const Json& body, const ServerContext& ctx) {
    const Tokenizer& tok = ctx.tokenizer();
    const Tokenizer::Fim fim = tok.fim();
    if (fim.pre < 0 || fim.suf < 0 || fim.mid < 0)
        throw HttpError(501, "not_supported_error",
                        "Infill is not supported by this model: its vocabulary has no fill-in-the-middle prefix, "
                        "suffix and middle tokens");
    const auto text = [&tok](const std::string& s) { return tok.encode(s, false, false); };
    std::vector<int32_t> prefix = text(string_field(body, "input_prefix"));
    std::vector<int32_t> suffix = text(string_field(body, "input_suffix"));
    const std::vector<int32_t> typed = text(string_field(body, "prompt"));

    std::vector<int32_t> extra;
    const auto add = [&extra](const std::vector<int32_t>& t) { extra.insert(extra.end(), t.begin(), t.end()); };
    if (fim.rep >= 0) {
        extra.push_back(fim.rep);
        add(text("myproject\n"));
    }
    auto it = body.find("input_extra");
    if (it != body.end() && !it->is_null()) {
        if (!it->is_array()) bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects");
        for (const Json& chunk : *it) {
            if (!chunk.is_object()) bad_request("'input_extra' must be an array of {\"filename\", \"text\"} objects");
            const std::string name = string_field(chunk, "filename");
            if (fim.sep >= 0) {
                extra.push_back(fim.sep);
                add(text((name.empty() ? "tmp" : name) + "\n"));
            } else {
                add(text("\n\n--- snippet ---\n\n"));
            }
            add(text(string_field(chunk, "text")));
        }
    }
    if (fim.sep >= 0) {  // the file being edited
        extra.push_back(fim.sep);
        add(text("filename\n"));
    }

    const int32_t n_batch = ctx.params.sched.n_batch;
    const int32_t n_ctx = ctx.scheduler->n_ctx_slot();
    const int64_t n_predict = std::max<int64_t>(0, get_int(body, "n_predict", get_int(body, "max_tokens", 0)));
    const size_t take_prefix = std::min<size_t>(prefix.size(), (size_t)(3 * (n_batch / 4)));
    const size_t take_suffix =
        std::min<size_t>(suffix.size(), (size_t)std::max<int64_t>(0, n_batch / 4 - (2 + (int64_t)typed.size())));
    const size_t take_extra =
        std::min<size_t>(extra.size(), (size_t)std::max<int64_t>(0, (int64_t)n_ctx - n_batch - 2 * n_predict));

    std::vector<int32_t> out;
    if (tok.add_bos() && tok.bos() >= 0) out.push_back(tok.bos());
    out.insert(out.end(), extra.end() - (std::ptrdiff_t)take_extra, extra.end());
    out.push_back(fim.pre);
    out.insert(out.end(), prefix.end() - (std::ptrdiff_t)take_prefix, prefix.end());
    out.insert(out.end(), typed.begin(), typed.end());
    out.push_back(fim.suf);
    out.insert(out.end(), suffix.begin(), suffix.begin() + (std::ptrdiff_t)take_suffix);
    out.push_back(fim.mid);
    return out;
}

}  // namespace

void register_infill_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Post("/infill", guarded([&ctx](const httplib::Request& req, httplib::Response& res) {
                 const Json body = parse_body(req);
                 complete_native(ctx, req, res, body, {infill_prompt(body, ctx)});
             }));
}

}  // namespace bee::server
