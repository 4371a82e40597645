// server/routes_tokenize: /tokenize, /detokenize (bodies read by server/wire_native) and /apply-template
// (no inference).
#include "server/chat_prompt.h"
#include "server/http_util.h"
#include "server/routes.h"
#include "server/wire_native.h"

namespace bee::server {

namespace {

void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const TokenizeRequest tr = read_tokenize_request(parse_body(req));
    const Tokenizer& tok = ctx.tokenizer();
    send_json(res, tokenize_json(tok, tok.encode(tr.content, tr.add_special, tr.parse_special), tr.with_pieces));
}

void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const std::vector<int32_t> ids = read_detokenize_request(parse_body(req), ctx.tokenizer());
    send_json(res, {{"content", ctx.tokenizer().decode(ids, true)}});
}

}  // namespace

void register_tokenize_routes(RouteTable& svr, ServerContext& ctx) {
    svr.Post("/tokenize",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_tokenize(ctx, q, r); }));
    svr.Post("/detokenize",
             guarded([&ctx](const httplib::Request& q, httplib::Response& r) { handle_detokenize(ctx, q, r); }));
    svr.Post("/apply-template", guarded([&ctx](const httplib::Request& q, httplib::Response& r) {
                 send_json(r, {{"prompt", render_chat_prompt(ctx, parse_body(q)).text}});
             }));
}

}  // namespace bee::server
