// tests/unit/server/test_http_util: peer_closed / tcp_state on a real loopback TCP connection — the
// server's end is established while the client is connected and in close-wait once it hung up.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server/http_util.h"

using bee::server::kTcpCloseWait;
using bee::server::peer_closed;
using bee::server::tcp_state;

namespace {

constexpr int kTcpEstablished = 1;

// A connected loopback pair; `req` describes the accepted (server) end as cpp-httplib would.
struct Loopback {
    int listener = -1, client = -1, server = -1;
    httplib::Request req;
    Loopback() {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        listener = socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_EQ(bind(listener, (sockaddr*)&a, sizeof a), 0);
        EXPECT_EQ(listen(listener, 1), 0);
        EXPECT_EQ(getsockname(listener, (sockaddr*)&a, &len), 0);
        client = socket(AF_INET, SOCK_STREAM, 0);
        EXPECT_EQ(connect(client, (sockaddr*)&a, sizeof a), 0);
        sockaddr_in peer{};
        len = sizeof peer;
        server = accept(listener, (sockaddr*)&peer, &len);
        EXPECT_GE(server, 0);
        req.local_addr = "127.0.0.1";
        req.local_port = ntohs(a.sin_port);
        req.remote_addr = "127.0.0.1";
        req.remote_port = ntohs(peer.sin_port);
    }
    ~Loopback() {
        for (int fd : {listener, client, server})
            if (fd >= 0) close(fd);
    }
};

TEST(PeerClosed, EstablishedThenCloseWait) {
    Loopback lb;
    EXPECT_FALSE(peer_closed(lb.req));
    const int before = tcp_state(lb.req);
    close(lb.client);
    lb.client = -1;
    bool closed = false;
    for (int i = 0; i < 200 && !closed; i++) {  // the FIN arrives at once on loopback; allow 2 s
        closed = peer_closed(lb.req);
        if (!closed) usleep(10000);
    }
    EXPECT_TRUE(closed);
    // The netlink lookup itself (the fast path) must answer on Linux; -1 would mean every check falls
    // back to reading /proc/net/tcp.
    EXPECT_EQ(before, kTcpEstablished);
    EXPECT_EQ(tcp_state(lb.req), kTcpCloseWait);
}

TEST(PeerClosed, UnknownConnectionIsNotClosed) {
    httplib::Request req;  // no address: nothing to ask
    EXPECT_EQ(tcp_state(req), -1);
    EXPECT_FALSE(peer_closed(req));
    Loopback lb;
    lb.req.remote_port = lb.req.remote_port == 1 ? 2 : 1;  // no such connection
    EXPECT_FALSE(peer_closed(lb.req));
}

}  // namespace

// get_int: numbers past int64's range are refused with 400 before any conversion (fuzz_server found the
// undefined double -> int64 conversion of 2.7e38 under UBSan).
namespace {

std::string get_int_error(const char* json) {
    try {
        bee::server::get_int(bee::server::Json::parse(json), "n", 0, -1, 100);
    } catch (const bee::server::HttpError& e) {
        return e.what();
    }
    return "";
}

TEST(GetInt, OutOfRangeNumbersAreRefusedNotConverted) {
    EXPECT_EQ(bee::server::get_int(bee::server::Json::parse(R"({"n": 64.0})"), "n", 0, -1, 100), 64);
    EXPECT_NE(get_int_error(R"({"n": 266666666666666666666666666666666666666})").find("must be in [-1, 100]"),
              std::string::npos);
    EXPECT_NE(get_int_error(R"({"n": -1e300})").find("must be in [-1, 100]"), std::string::npos);
    EXPECT_NE(get_int_error(R"({"n": 9223372036854775808.0})").find("must be in [-1, 100]"), std::string::npos);
    EXPECT_NE(get_int_error(R"({"n": 18446744073709551615})").find("18446744073709551615"),
              std::string::npos);  // not -1
    EXPECT_NE(get_int_error(R"({"n": 1.5})").find("must be an integer"), std::string::npos);
}

}  // namespace
