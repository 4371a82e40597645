// server/cors_proxy: GET/POST /cors-proxy?url=URL, llama-server's proxy that lets the chat page reach MCP
// servers a browser could not (they send no CORS headers). The request goes to URL with its method and
// body, and the headers the page names `X-Llama-Server-Proxy-Header-NAME: value` (sent as NAME); the
// answer comes back with the target's status, headers and body, streamed. Off (403) without --ui-mcp-proxy.
// Only http:// targets: this build has no TLS client.
#pragma once
#include "server/http_util.h"

namespace bee::server {

void register_cors_proxy_routes(httplib::Server& svr, bool enabled, int timeout_s);

}  // namespace bee::server
