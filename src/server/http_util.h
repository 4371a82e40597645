// server/http_util: the HTTP edge's shared pieces — the OpenAI-shaped error (HttpError and its JSON
// body), JSON body parsing, typed field readers that turn a wrong type into a 400 naming the field,
// and SSE framing.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace bee::server {

using Json = nlohmann::ordered_json;

// A request that cannot be served: status, OpenAI error type, message, and optional extra fields
// (exceed_context_size_error adds n_prompt_tokens and n_ctx).
struct HttpError : std::runtime_error {
    HttpError(int status, std::string type, const std::string& message, Json extra = Json::object())
        : std::runtime_error(message), status(status), type(std::move(type)), extra(std::move(extra)) {}
    int status;
    std::string type;
    Json extra;
};

[[noreturn]] void bad_request(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// {"error":{"code","message","type",...extra}}
Json error_json(int status, const std::string& type, const std::string& message, const Json& extra = Json::object());
void send_error(httplib::Response& res, const HttpError& e);
void send_json(httplib::Response& res, const Json& j, int status = 200);
std::string dump_json(const Json& j);                   // invalid UTF-8 becomes U+FFFD instead of throwing
std::string base64_encode(const uint8_t* p, size_t n);  // standard alphabet, '=' padded

// The request body as a JSON object (400 if it is not valid JSON, nests deeper than kMaxJsonDepth, or
// is not an object). Every walk over request JSON below the edge relies on this depth bound.
constexpr int kMaxJsonDepth = 256;
Json parse_body(const httplib::Request& req);
// JSON text parsed in linear time (hashed keys for large objects) with at most `max_depth` levels of
// arrays and objects; 400 naming the limit or the syntax error otherwise (server/json_body).
Json parse_json_bounded(const std::string& text, int max_depth);

// Typed optional fields: the default when absent or null, 400 naming the field when of the wrong type.
bool get_bool(const Json& body, const char* key, bool def);
int64_t get_int(const Json& body, const char* key, int64_t def, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
double get_number(const Json& body, const char* key, double def);
std::string get_string(const Json& body, const char* key, const std::string& def);
// The value of `key` in object `o`, or nullptr when absent or null (the wire translations' reader).
const Json* opt_field(const Json& o, const char* key);
// o[key] as a string; 400 naming `where`.key otherwise.
std::string need_string(const Json& o, const char* key, const std::string& where);
// An OpenAI chat tool {"type": "function", "function": {name, description, parameters}} from a tool object
// whose schema is o[schema_key] (Anthropic: input_schema, Responses: parameters); 400 naming `where`.
Json function_tool(const Json& o, const char* schema_key, const std::string& where);

// True if the client of `req` has closed or reset its side of the connection: poll() on the socket of
// the connection the calling thread serves (server/http_conn), else (no such connection) whether the
// socket is in CLOSE_WAIT, asked by a sock_diag netlink lookup or read from /proc/net/tcp{,6}. A
// non-streaming handler writes nothing until the end, so this is how a waiting request notices its client left.
bool peer_closed(const httplib::Request& req);
// The kernel's TCP state of the connection of `req` (Linux tcp_states.h: 1 established, 8 close-wait,
// ...) by an exact sock_diag netlink lookup; -1 if it cannot be asked (no netlink, unknown address).
int tcp_state(const httplib::Request& req);
// Shuts down every TCP connection this process accepted on `port`, so that the HTTP workers waiting
// on idle keep-alive connections (cpp-httplib waits up to 5 s for a next request) return at once.
// Called at shutdown, after the listening socket is closed.
void shutdown_accepted_connections(int port);
constexpr int kTcpCloseWait = 8;  // TCP_CLOSE_WAIT: the peer sent FIN

// One server-sent event: "data: <json>\n\n".
std::string sse_data(const Json& j);

}  // namespace bee::server
