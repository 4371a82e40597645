// server/routes_tokenize: /tokenize, /detokenize and /apply-template (no inference).
#include "server/chat_prompt.h"
#include "server/http_util.h"
#include "server/routes.h"

namespace bee::server {

namespace {

bool valid_utf8(const std::string& s) {
    size_t i = 0;
    while (i < s.size()) {
        const unsigned char c = (unsigned char)s[i];
        const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        if (n == 0 || i + n > s.size()) return false;
        for (int k = 1; k < n; k++)
            if (((unsigned char)s[i + k] >> 6) != 2) return false;
        i += n;
    }
    return true;
}

void handle_tokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    const std::string content = get_string(body, "content", "");
    const bool add_special = get_bool(body, "add_special", false);
    const bool parse_special = get_bool(body, "parse_special", true);
    const bool with_pieces = get_bool(body, "with_pieces", false);
    const Tokenizer& tok = ctx.tokenizer();
    Json out = Json::array();
    for (int32_t id : tok.encode(content, add_special, parse_special)) {
        if (!with_pieces) {
            out.push_back(id);
            continue;
        }
        const std::string piece = tok.token_to_piece(id, true);
        Json p;
        if (valid_utf8(piece)) {
            p = piece;
        } else {  // a piece that is part of a UTF-8 character: its bytes
            p = Json::array();
            for (unsigned char c : piece) p.push_back((int)c);
        }
        out.push_back({{"id", id}, {"piece", p}});
    }
    send_json(res, {{"tokens", out}});
}

void handle_detokenize(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req);
    std::vector<int32_t> ids;
    if (body.contains("tokens")) {
        const Json& t = body["tokens"];
        if (!t.is_array()) bad_request("'tokens' must be an array of token ids");
        for (const Json& x : t) {
            if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() >= ctx.tokenizer().n_vocab())
                bad_request("'tokens' must hold token ids in [0, %d)", ctx.tokenizer().n_vocab());
            ids.push_back(x.get<int32_t>());
        }
    }
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
