// tests/unit/server/test_stream_sessions: the resumable-stream buffers (server/stream_sessions) — byte
// offsets, the per-session size cap, readers woken by the end, the session count cap, replacement and
// stop, lookup's matching, and router mode's conversation tickets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <thread>

#include "server/stream_sessions.h"

using namespace bee::server;

TEST(StreamSession, ReadsFromAnyOffsetUntilTheEnd) {
    StreamSession s("c");
    s.append("data: a\n\n");
    s.append("data: b\n\n");
    std::string out;
    EXPECT_EQ(s.read(0, out, 0), StreamSession::Read::data);
    EXPECT_EQ(out, "data: a\n\ndata: b\n\n");
    out.clear();
    EXPECT_EQ(s.read(9, out, 0), StreamSession::Read::data);
    EXPECT_EQ(out, "data: b\n\n");
    out.clear();
    EXPECT_EQ(s.read(18, out, 0), StreamSession::Read::data);  // nothing yet, not finished
    EXPECT_EQ(out, "");
    s.finish();
    s.append("late");  // ignored after the end
    EXPECT_EQ(s.read(18, out, 0), StreamSession::Read::end);
    EXPECT_EQ(s.read(100, out, 0), StreamSession::Read::end);
    const StreamSession::Info i = s.info();
    EXPECT_TRUE(i.done);
    EXPECT_EQ(i.total_bytes, 18u);
    EXPECT_GT(i.completed_at, 0);
}

TEST(StreamSession, KeepsOnlyTheNewestBytesPastTheCap) {
    StreamSession s("c");
    const std::string chunk(1u << 20, 'x');
    for (int i = 0; i < 5; i++) s.append(chunk);
    s.append("tail");
    const StreamSession::Info i = s.info();
    EXPECT_EQ(i.total_bytes, 5 * chunk.size() + 4);
    EXPECT_EQ(i.total_bytes - i.dropped_bytes, kMaxSessionBytes);
    std::string out;
    EXPECT_EQ(s.read(0, out, 0), StreamSession::Read::lost);
    EXPECT_EQ(s.read(i.dropped_bytes, out, 0), StreamSession::Read::data);
    EXPECT_EQ(out.size(), kMaxSessionBytes);
    EXPECT_EQ(out.substr(out.size() - 4), "tail");
}

TEST(StreamSession, AWaitingReaderWakesAtTheEnd) {
    StreamSession s("c");
    std::thread t([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        s.append("x");
        s.finish();
    });
    std::string out;
    size_t offset = 0;
    StreamSession::Read r;
    while ((r = s.read(offset, out, 5000)) == StreamSession::Read::data) offset = out.size();
    t.join();
    EXPECT_EQ(r, StreamSession::Read::end);
    EXPECT_EQ(out, "x");
}

TEST(StreamSessions, ANewRequestOfTheIdStopsTheOldOne) {
    StreamSessions all;
    auto first = all.create("c");
    ASSERT_TRUE(first);
    auto second = all.create("c");
    EXPECT_TRUE(first->cancelled());
    EXPECT_TRUE(first->info().done);
    EXPECT_FALSE(second->cancelled());
    EXPECT_EQ(all.find("c"), second);
    EXPECT_EQ(all.size(), 1u);
    EXPECT_FALSE(all.create(""));
    EXPECT_FALSE(all.create(std::string(kMaxConvIdBytes + 1, 'x')));
}

TEST(StreamSessions, CancelStopsAndForgets) {
    StreamSessions all;
    auto s = all.create("c");
    EXPECT_TRUE(all.cancel("c"));
    EXPECT_TRUE(s->cancelled());
    EXPECT_TRUE(s->info().done);
    EXPECT_FALSE(all.find("c"));
    EXPECT_FALSE(all.cancel("c"));
}

TEST(StreamSessions, CountCapEvictsFinishedSessionsOnly) {
    StreamSessions all;
    std::vector<std::shared_ptr<StreamSession>> live;
    for (size_t i = 0; i < kMaxSessions; i++) live.push_back(all.create("live-" + std::to_string(i)));
    EXPECT_FALSE(all.create("one-more"));  // every session is generating: the newcomer gets none
    EXPECT_EQ(all.size(), kMaxSessions);
    live[3]->finish();
    EXPECT_TRUE(all.create("one-more"));  // the finished one made room
    EXPECT_FALSE(all.find("live-3"));
    EXPECT_TRUE(all.find("live-4"));
    EXPECT_EQ(all.size(), kMaxSessions);
}

TEST(StreamSessions, LookupMatchesTheIdAndItsPerModelIds) {
    StreamSessions all;
    all.create("conv");
    all.create("conv::org/model:Q4");
    all.create("conv2");
    all.create("other::conv");
    std::vector<std::string> got;
    for (const auto& s : all.lookup({"conv", "missing"})) got.push_back(s->conv_id());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::string>{"conv", "conv::org/model:Q4"}));
    EXPECT_TRUE(all.lookup({}).empty());
}

TEST(ConvOwners, AStopInvalidatesTheTicket) {
    ConvOwners owners;
    EXPECT_EQ(owners.remember("", "m"), 0u);
    EXPECT_EQ(owners.remember("c", ""), 0u);
    const uint64_t t1 = owners.remember("c", "m1");
    EXPECT_TRUE(owners.alive("c", t1));
    EXPECT_EQ(owners.owner("c"), "m1");
    const uint64_t t2 = owners.remember("c", "m2");  // a newer request of the conversation
    EXPECT_FALSE(owners.alive("c", t1));
    EXPECT_TRUE(owners.alive("c", t2));
    owners.forget("c");
    EXPECT_FALSE(owners.alive("c", t2));
    EXPECT_EQ(owners.owner("c"), "");
}
