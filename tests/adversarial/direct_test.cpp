// SPDX-License-Identifier: Apache-2.0
// Adversarial: a direct-descriptor socket awaited on another loop must fail with
// cross_device_link and touch nothing of that loop's connections, for every operation
// kind not covered by direct_descriptor_test: send, gather sends, shutdown, close,
// multishot_receiver, receive_pooled, with_timeout wrappers, and the sender forms.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ringio/exec.hpp"
#include "ringio/net/buffered_stream.hpp"
#include "ringio/net/pooled_receive.hpp"
#include "ringio/net/send_file.hpp"
#include "ringio/ringio.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

task<std::pair<stream_socket, stream_socket>> connect_pair(stream_listener& l, socket_address at) {
  auto [c, s] = co_await when_all(stream_socket::connect(at), l.accept());
  EXPECT_TRUE(c && s);
  co_return std::pair<stream_socket, stream_socket>{std::move(*c), std::move(*s)};
}

std::error_code err_of(const auto& r) { return r ? std::error_code{} : r.error(); }

struct check {
  const char* name;
  std::function<task<std::error_code>(stream_socket& foreign, buffer_pool& pool)> run;
};

class AdversarialDirect : public ::testing::TestWithParam<check> {};

TEST_P(AdversarialDirect, ForeignLoopOperationFailsAndTouchesNothing) {
  const check& ck = GetParam();
  std::optional<io_context> home;
  try {
    home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  } catch (const std::system_error&) {
    GTEST_SKIP() << "no uring";
  }
  if (home->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors on this kernel";
  auto l = listen_loopback({.direct_descriptors = true});
  auto at = address_of(l);
  auto first = sync_wait(*home, connect_pair(l, at));
  ASSERT_TRUE(first.second.is_direct());

  io_context other(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  auto l2 = listen_loopback({.direct_descriptors = true});
  auto at2 = address_of(l2);
  sync_wait(other,
            [](stream_listener& l2, socket_address at2, stream_socket& foreign, const check& ck,
               io_context& other) -> task<void> {
              auto [c2, s2] = co_await connect_pair(l2, at2);
              EXPECT_TRUE(s2.is_direct());
              buffer_pool pool(other, 8, 4096);
              EXPECT_TRUE(co_await c2.send_all(std::string_view("other loop's secret")));
              (void)(void)co_await sleep_for(10ms);
              auto e = co_await with_timeout(ck.run(foreign, pool), 2s);
              if (!e) {
                ADD_FAILURE() << ck.name << ": did not complete: " << e.error().message();
              } else {
                EXPECT_EQ(*e, std::errc::cross_device_link) << ck.name << ": " << e->message();
              }
              // The other loop's connection is intact: its bytes, its open state, both directions.
              std::array<char, 64> buf{};
              auto mine = co_await with_timeout(s2.recv_exact(std::as_writable_bytes(std::span(buf).first(19))), 1s);
              EXPECT_TRUE(mine && *mine == 19u)
                  << ck.name << ": " << (mine ? std::to_string(*mine) : mine.error().message());
              EXPECT_EQ(std::string_view(buf.data(), 19), "other loop's secret") << ck.name;
              char probe;
              errno = 0;
              EXPECT_EQ(::recv(c2.native_handle(), &probe, 1, MSG_DONTWAIT), -1)
                  << ck.name << ": the other connection received bytes or an EOF";
              EXPECT_TRUE(co_await s2.send_all(std::string_view("pong"))) << ck.name;
              auto back = co_await with_timeout(c2.recv_exact(std::as_writable_bytes(std::span(buf).first(4))), 1s);
              EXPECT_TRUE(back && *back == 4u) << ck.name << ": the other connection cannot send any more";
              EXPECT_TRUE(s2.is_open()) << ck.name;
            }(l2, at2, first.second, ck, other));
  // Still works at home.
  bool ok = sync_wait(*home, [](stream_socket& a, stream_socket& b) -> task<bool> {
    auto s = co_await a.send_all(std::string_view("home"));
    std::array<char, 4> buf{};
    auto r = co_await with_timeout(b.recv_exact(std::as_writable_bytes(std::span(buf))), 1s);
    co_return s&& r&&* r == 4u;
  }(first.first, first.second));
  EXPECT_TRUE(ok) << ck.name << ": the socket no longer works on its own loop";
}

std::array<char, 64> scratch;
mutable_buffer sbuf() { return std::as_writable_bytes(std::span(scratch)); }
const_buffer cbuf() { return std::as_bytes(std::span(scratch).first(8)); }

const check checks[] = {
    {"send",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await f.send(cbuf())); }},
    {"gather_send",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       std::array<const_buffer, 2> b{cbuf(), cbuf()};
       co_return err_of(co_await f.send(std::span<const const_buffer>(b)));
     }},
    {"gather_send_all",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       std::array<const_buffer, 2> b{cbuf(), cbuf()};
       co_return err_of(co_await f.send_all(std::span<const const_buffer>(b)));
     }},
    {"shutdown_wr",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await f.shutdown(SHUT_WR)); }},
    {"shutdown_rdwr",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await f.shutdown(SHUT_RDWR)); }},
    {"close", [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await f.close()); }},
    {"multishot_receiver",
     [](stream_socket& f, buffer_pool& p) -> task<std::error_code> {
       multishot_receiver rx(f, p);
       auto r = co_await rx.next();
       co_return err_of(r);
     }},
    {"receive_pooled",
     [](stream_socket& f, buffer_pool& p) -> task<std::error_code> {
       co_return err_of(co_await receive_pooled(f, p));
     }},
    {"with_timeout_recv",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await with_timeout(f.recv(sbuf()), 500ms));
     }},
    {"with_timeout_recv_exact",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await with_timeout(f.recv_exact(sbuf()), 500ms));
     }},
    {"with_timeout_send_all",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await with_timeout(f.send_all(cbuf()), 500ms));
     }},
    {"exec_recv",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await exec::recv(f, sbuf())); }},
    {"exec_recv_exact",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await exec::recv_exact(f, sbuf()));
     }},
    {"exec_send",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await exec::send(f, cbuf())); }},
    {"exec_send_all",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await exec::send_all(f, cbuf()));
     }},
    {"exec_shutdown",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await exec::shutdown(f)); }},
    {"exec_close",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> { co_return err_of(co_await exec::close(f)); }},
    {"exec_as_sender_timeout",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await exec::as_sender(with_timeout(f.recv(sbuf()), 500ms)));
     }},
    {"exec_when_any_fail_after",
     [](stream_socket& f, buffer_pool&) -> task<std::error_code> {
       co_return err_of(co_await exec::when_any(exec::recv(f, sbuf()), exec::fail_after(500ms)));
     }},
};

std::string check_name(const ::testing::TestParamInfo<check>& i) { return i.param.name; }

INSTANTIATE_TEST_SUITE_P(, AdversarialDirect, ::testing::ValuesIn(checks), check_name);

}  // namespace

namespace {

// Focused: what a multishot_receiver on a foreign direct socket hands out, and what a
// foreign close() does to the socket's home slot and peer.
TEST(AdversarialDirectFocused, ForeignMultishotReceiverReadsTheOtherLoopsConnection) {
  std::optional<io_context> home;
  try {
    home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  } catch (const std::system_error&) {
    GTEST_SKIP() << "no uring";
  }
  if (home->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors on this kernel";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*home, connect_pair(l, address_of(l)));
  io_context other(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  auto l2 = listen_loopback({.direct_descriptors = true});
  std::string leaked;
  std::error_code err;
  sync_wait(other,
            [](stream_listener& l2, stream_socket& foreign, io_context& other, std::string& leaked,
               std::error_code& err) -> task<void> {
              auto [c2, s2] = co_await connect_pair(l2, address_of(l2));
              buffer_pool pool(other, 8, 4096);
              EXPECT_TRUE(co_await c2.send_all(std::string_view("other loop's secret")));
              multishot_receiver rx(foreign, pool);
              auto r = co_await with_timeout(rx.next(), 1s);
              if (r) leaked.assign(reinterpret_cast<const char*>(r->data()), r->size());
              else err = r.error();
            }(l2, first.second, other, leaked, err));
  EXPECT_EQ(leaked, "") << "a multishot_receiver on a socket of another loop received that loop's connection's bytes";
  EXPECT_EQ(err, std::errc::cross_device_link) << err.message();
}

TEST(AdversarialDirectFocused, ForeignCloseLeavesHomeSlotAndPeer) {
  std::optional<io_context> home;
  try {
    home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  } catch (const std::system_error&) {
    GTEST_SKIP() << "no uring";
  }
  if (home->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors on this kernel";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*home, connect_pair(l, address_of(l)));
  const auto free_before = home->direct_free();
  io_context other(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  std::error_code err;
  sync_wait(other, [](stream_socket& foreign, std::error_code& err) -> task<void> {
    auto r = co_await foreign.close();
    err = err_of(r);
  }(first.second, err));
  EXPECT_EQ(err, std::errc::cross_device_link) << err.message();
  EXPECT_TRUE(first.second.is_open()) << "a close refused on another loop emptied the socket";
  // Either the close worked (the peer sees EOF and the slot is free) or nothing changed.
  sync_wait(*home, [](stream_socket& a) -> task<void> { (void)co_await sleep_for(20ms); }(first.first));
  char probe;
  const auto n = ::recv(first.first.native_handle(), &probe, 1, MSG_DONTWAIT);
  std::printf("after foreign close: socket open=%d, home free slots %u -> %u, peer recv=%zd\n",
              int(first.second.is_open()), unsigned(free_before), unsigned(home->direct_free()), n);
  if (!first.second.is_open()) {
    EXPECT_EQ(n, 0) << "the socket was emptied but its connection was never closed (peer sees no EOF)";
    EXPECT_EQ(home->direct_free(), free_before + 1) << "the socket was emptied but its home slot leaked";
  }
}

}  // namespace

namespace {

struct two_loops {
  std::optional<io_context> home;
  std::optional<io_context> other;
  bool ok = false;
  two_loops() {
    try {
      home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
      other.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
    } catch (const std::system_error&) {
      return;
    }
    ok = home->direct_table_size() > 0 && other->direct_table_size() > 0;
  }
};

// cancel() of a home-loop direct socket, called from a task of another loop on the
// same thread, must not cancel that loop's operations on the same slot number.
TEST(AdversarialDirectFocused, ForeignCancelLeavesTheOtherLoopsOperations) {
  two_loops t;
  if (!t.ok) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*t.home, connect_pair(l, address_of(l)));
  auto l2 = listen_loopback({.direct_descriptors = true});
  std::error_code err;
  std::size_t got = 0;
  sync_wait(*t.other,
            [](stream_listener& l2, stream_socket& foreign, std::error_code& err, std::size_t& got) -> task<void> {
              auto [c2, s2] = co_await connect_pair(l2, address_of(l2));
              EXPECT_TRUE(s2.is_direct());
              auto reader = [&]() -> task<void> {
                std::array<std::byte, 8> b{};
                auto r = co_await with_timeout(s2.recv(b), 2s);
                if (r) got = *r;
                else err = r.error();
              };
              auto canceller = [&]() -> task<void> {
                (void)(void)co_await sleep_for(20ms);
                foreign.cancel();  // not this loop's socket
                (void)(void)co_await sleep_for(20ms);
                (void)co_await c2.send_all(std::string_view("hi"));
              };
              scope s;
              s.spawn(reader());
              s.spawn(canceller());
              co_await s.join();
            }(l2, first.second, err, got));
  EXPECT_EQ(got, 2u) << "the other loop's recv on the same slot: " << err.message();
}

// native_handle() of a home-loop direct socket, called while another loop runs on the
// same thread, must give this socket's connection, never the other loop's slot.
TEST(AdversarialDirectFocused, ForeignNativeHandleIsNeverTheOtherLoopsConnection) {
  two_loops t;
  if (!t.ok) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*t.home, connect_pair(l, address_of(l)));
  auto home_peer = first.first.local_address();
  auto l2 = listen_loopback({.direct_descriptors = true});
  int fd = -2;
  std::string other_peer;
  sync_wait(*t.other, [](stream_listener& l2, stream_socket& foreign, int& fd, std::string& other_peer) -> task<void> {
    auto [c2, s2] = co_await connect_pair(l2, address_of(l2));
    other_peer = c2.local_address()->to_string();
    fd = foreign.native_handle();
    co_return;
  }(l2, first.second, fd, other_peer));
  std::printf("native_handle() on the other loop gave %d\n", fd);
  if (fd >= 0) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ASSERT_EQ(::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len), 0);
    auto peer = socket_address::from_native(reinterpret_cast<sockaddr*>(&ss), len);
    EXPECT_EQ(peer.to_string(), home_peer->to_string())
        << "native_handle() on another loop gave a descriptor of that loop's connection (" << other_peer << ")";
  }
}

// buffered_stream and send_file on another loop (they install the descriptor first).
TEST(AdversarialDirectFocused, ForeignBufferedReadAndSendFile) {
  two_loops t;
  if (!t.ok) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*t.home, connect_pair(l, address_of(l)));
  auto l2 = listen_loopback({.direct_descriptors = true});
  std::string read_result, file_result;
  std::FILE* f = std::tmpfile();
  std::fputs("file data", f);
  std::fflush(f);
  sync_wait(*t.other,
            [](stream_listener& l2, stream_socket& foreign, std::string& read_result, std::string& file_result,
               std::FILE* f) -> task<void> {
              auto [c2, s2] = co_await connect_pair(l2, address_of(l2));
              EXPECT_TRUE(co_await c2.send_all(std::string_view("other loop's secret\n")));
              (void)(void)co_await sleep_for(10ms);
              {
                buffered_stream bs(foreign, 4096);
                auto r = co_await with_timeout(bs.read_line(), 300ms);
                read_result = r ? "read: " + std::string(*r) : r.error().message();
              }
              auto sf = co_await with_timeout(send_file(foreign, ::fileno(f), 0, 9), 300ms);
              file_result = sf ? "sent " + std::to_string(*sf) : sf.error().message();
              // the other loop's connection: intact
              std::array<char, 20> buf{};
              auto mine = co_await with_timeout(s2.recv_exact(std::as_writable_bytes(std::span(buf))), 500ms);
              EXPECT_TRUE(mine && *mine == 20u) << "the other loop's connection lost its bytes";
              char probe;
              EXPECT_EQ(::recv(c2.native_handle(), &probe, 1, MSG_DONTWAIT), -1)
                  << "the other loop's peer received file data";
            }(l2, first.second, read_result, file_result, f));
  std::fclose(f);
  std::printf("foreign buffered read: %s; foreign send_file: %s\n", read_result.c_str(), file_result.c_str());
  EXPECT_EQ(read_result.find("secret"), std::string::npos) << read_result;
  // The documented error of an operation awaited on another loop (minor if it differs).
  EXPECT_EQ(read_result, std::make_error_code(std::errc::cross_device_link).message());
  EXPECT_EQ(file_result, std::make_error_code(std::errc::cross_device_link).message());
}

}  // namespace

namespace {

// On one loop: cancel() of a normal socket whose descriptor number equals a direct
// socket's slot number must not cancel the direct socket's operations, and the other
// way round.
TEST(AdversarialDirectFocused, CancelDistinguishesSlotsFromDescriptorNumbers) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 256});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  if (ctx->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors";
  socket_pair normal;
  const int fd = normal.a.native_handle();
  ASSERT_LT(fd, 200);
  auto l = listen_loopback({.direct_descriptors = true});
  std::vector<std::pair<stream_socket, stream_socket>> conns;
  // Accept until some direct socket's slot is `fd` (slots are handed out from 0 up).
  for (int i = 0; i <= fd + 2; ++i) conns.push_back(sync_wait(*ctx, connect_pair(l, address_of(l))));
  stream_socket* same = nullptr;
  std::size_t same_i = 0;
  for (std::size_t i = 0; i < conns.size(); ++i)
    if (conns[i].second.is_direct() && conns[i].second.operation_fd() == fd) {
      same = &conns[i].second;
      same_i = i;
    }
  if (same == nullptr) GTEST_SKIP() << "no slot numbered " << fd;
  for (int dir = 0; dir < 2; ++dir) {
    std::size_t got_direct = 0, got_normal = 0;
    std::error_code err_direct, err_normal;
    sync_wait(*ctx, [&]() -> task<void> {
      auto rd = [&]() -> task<void> {
        std::array<std::byte, 8> b{};
        auto r = co_await with_timeout(same->recv(b), 2s);
        if (r) got_direct = *r;
        else err_direct = r.error();
      };
      auto rn = [&]() -> task<void> {
        std::array<std::byte, 8> b{};
        auto r = co_await with_timeout(normal.a.recv(b), 2s);
        if (r) got_normal = *r;
        else err_normal = r.error();
      };
      auto poke = [&]() -> task<void> {
        (void)(void)co_await sleep_for(20ms);
        if (dir == 0) normal.a.cancel();
        else same->cancel();
        (void)(void)co_await sleep_for(20ms);
        (void)::send(normal.b.native_handle(), "n", 1, 0);
        (void)co_await conns[same_i].first.send_all(std::string_view("d"));
      };
      scope s;
      s.spawn(rd());
      s.spawn(rn());
      s.spawn(poke());
      co_await s.join();
    }());
    if (dir == 0) {
      EXPECT_EQ(err_normal, std::errc::operation_canceled);
      EXPECT_EQ(got_direct, 1u) << "normal fd " << fd << ".cancel() hit the direct slot " << fd << ": "
                                << err_direct.message();
    } else {
      EXPECT_EQ(err_direct, std::errc::operation_canceled);
      EXPECT_EQ(got_normal, 1u) << "direct slot " << fd << ".cancel() hit the normal fd " << fd << ": "
                                << err_normal.message();
    }
  }
}

}  // namespace

namespace {

// cancel() ends a multishot_receiver's next() and a recv_exact on a direct socket, and
// the data that arrives afterwards is delivered whole.
TEST(AdversarialDirectFocused, CancelEndsMultishotAndRecvExactOnADirectSocket) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  if (ctx->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto pr = sync_wait(*ctx, connect_pair(l, address_of(l)));
  ASSERT_TRUE(pr.second.is_direct());
  buffer_pool pool(*ctx, 8, 4096);
  std::error_code e1, e2;
  std::string after;
  sync_wait(*ctx, [&]() -> task<void> {
    {
      multishot_receiver rx(pr.second, pool);
      auto reader = [&]() -> task<void> {
        auto r = co_await with_timeout(rx.next(), 2s);
        e1 = r ? std::error_code{} : r.error();
        (void)co_await pr.first.send_all(std::string_view("abc"));
        auto r2 = co_await with_timeout(rx.next(), 2s);
        if (r2) after.assign(reinterpret_cast<const char*>(r2->data()), r2->size());
      };
      auto canceller = [&]() -> task<void> {
        (void)(void)co_await sleep_for(20ms);
        pr.second.cancel();
      };
      scope s;
      s.spawn(reader());
      s.spawn(canceller());
      co_await s.join();
    }
    auto reader = [&]() -> task<void> {
      std::array<std::byte, 10> b{};
      auto r = co_await with_timeout(pr.second.recv_exact(b), 2s);
      e2 = r ? std::error_code{} : r.error();
    };
    auto canceller = [&]() -> task<void> {
      (void)(void)co_await sleep_for(20ms);
      pr.second.cancel();
    };
    scope s;
    s.spawn(reader());
    s.spawn(canceller());
    co_await s.join();
  }());
  EXPECT_EQ(e1, std::errc::operation_canceled) << e1.message();
  EXPECT_EQ(after, "abc");
  EXPECT_EQ(e2, std::errc::operation_canceled) << e2.message();
}

}  // namespace

namespace {

// A home-loop direct socket destroyed inside a task of another loop on the same thread
// must not close that loop's slot of the same number.
TEST(AdversarialDirectFocused, ForeignDestructionLeavesTheOtherLoopsSlot) {
  two_loops t;
  if (!t.ok) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  auto first = sync_wait(*t.home, connect_pair(l, address_of(l)));
  ASSERT_TRUE(first.second.is_direct());
  auto l2 = listen_loopback({.direct_descriptors = true});
  bool intact = false;
  std::string detail;
  sync_wait(*t.other, [](stream_listener& l2, stream_socket foreign, bool& intact, std::string& detail) -> task<void> {
    auto [c2, s2] = co_await connect_pair(l2, address_of(l2));
    EXPECT_TRUE(s2.is_direct());
    { stream_socket dying = std::move(foreign); }  // destroyed while `other` is current
    (void)(void)co_await sleep_for(10ms);
    EXPECT_TRUE(co_await c2.send_all(std::string_view("ping")));
    std::array<char, 4> buf{};
    auto r = co_await with_timeout(s2.recv_exact(std::as_writable_bytes(std::span(buf))), 1s);
    auto w = co_await with_timeout(s2.send_all(std::string_view("pong")), 1s);
    intact = r && *r == 4u && w;
    detail = r ? (w ? "ok" : "send: " + w.error().message()) : "recv: " + r.error().message();
  }(l2, std::move(first.second), intact, detail));
  EXPECT_TRUE(intact) << "the other loop's connection in the same slot broke: " << detail;
}

}  // namespace

namespace {

// A direct socket awaited on a loop of another backend (epoll, uring-poll) or an
// io_uring loop without a file table: its slot number must never be used as a
// descriptor number there.
TEST(AdversarialDirectFocused, ForeignLoopOfAnotherKindNeverUsesTheSlotAsADescriptor) {
  std::optional<io_context> home;
  try {
    home.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 256});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  if (home->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors";
  socket_pair victim;  // a normal descriptor whose number some slot will have
  const int fd = victim.a.native_handle();
  ASSERT_LT(fd, 200);
  auto l = listen_loopback({.direct_descriptors = true});
  std::vector<std::pair<stream_socket, stream_socket>> conns;
  for (int i = 0; i <= fd + 2; ++i) conns.push_back(sync_wait(*home, connect_pair(l, address_of(l))));
  stream_socket* same = nullptr;
  for (auto& c : conns)
    if (c.second.is_direct() && c.second.operation_fd() == fd) same = &c.second;
  if (same == nullptr) GTEST_SKIP() << "no slot numbered " << fd;
  for (backend_kind k : {backend_kind::epoll, backend_kind::uring_poll, backend_kind::uring}) {
    std::optional<io_context> other;
    try {
      other.emplace(io_context_options{.backend = k, .quiet = true});  // no file table
    } catch (const std::system_error&) {
      continue;
    }
    (void)::send(victim.b.native_handle(), "secret", 6, 0);
    std::error_code es, er;
    sync_wait(*other, [](stream_socket& f, std::error_code& es, std::error_code& er) -> task<void> {
      auto s = co_await with_timeout(f.send(std::as_bytes(std::span("leak", 4))), 300ms);
      es = s ? std::error_code{} : s.error();
      std::array<char, 16> buf{};
      auto r = co_await with_timeout(f.recv(std::as_writable_bytes(std::span(buf))), 300ms);
      er = r ? std::error_code{} : r.error();
    }(*same, es, er));
    // The multishot path too.
    std::string ms_got;
    std::error_code ems;
    sync_wait(*other, [](io_context& o, stream_socket& f, std::string& got, std::error_code& e) -> task<void> {
      buffer_pool pool(o, 8, 4096);
      multishot_receiver rx(f, pool);
      auto r = co_await with_timeout(rx.next(), 300ms);
      if (r) got.assign(reinterpret_cast<const char*>(r->data()), r->size());
      else e = r.error();
    }(*other, *same, ms_got, ems));
    // receive_pooled too (before the multishot check, the data is still there only if
    // the multishot left it: send it again).
    (void)::send(victim.b.native_handle(), "second", 6, 0);
    std::string rp_got;
    std::error_code erp;
    sync_wait(*other, [](io_context& o, stream_socket& f, std::string& got, std::error_code& e) -> task<void> {
      buffer_pool pool(o, 8, 4096);
      auto r = co_await with_timeout(receive_pooled(f, pool), 300ms);
      if (r) got.assign(reinterpret_cast<const char*>(r->data()), r->size());
      else e = r.error();
    }(*other, *same, rp_got, erp));
    EXPECT_EQ(rp_got, "") << to_string(k) << ": receive_pooled read descriptor " << fd;
    EXPECT_EQ(erp, std::errc::cross_device_link) << to_string(k) << " receive_pooled: " << erp.message();
    EXPECT_EQ(ms_got, "") << to_string(k) << ": a multishot_receiver read descriptor " << fd;
    EXPECT_EQ(ems, std::errc::cross_device_link) << to_string(k) << " multishot: " << ems.message();
    std::array<char, 16> buf{};
    const auto leaked = ::recv(victim.b.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
    // Both messages are still there, in order: nothing on the other loop read them.
    const auto kept = ::recv(victim.a.native_handle(), buf.data(), buf.size(), MSG_DONTWAIT);
    const auto stolen = kept == 12 && std::string_view(buf.data(), 12) == "secretsecond" ? 6 : -1;
    std::printf("%s: send %s, recv %s, multishot %s [%s]\n", std::string(to_string(k)).c_str(), es.message().c_str(),
                er.message().c_str(), ems.message().c_str(), ms_got.c_str());
    EXPECT_EQ(leaked, -1) << to_string(k) << ": the send went to descriptor " << fd;
    EXPECT_EQ(stolen, 6) << to_string(k) << ": the recv read descriptor " << fd;
    EXPECT_EQ(es, std::errc::cross_device_link) << to_string(k) << " send: " << es.message();
    EXPECT_EQ(er, std::errc::cross_device_link) << to_string(k) << " recv: " << er.message();
  }
}

}  // namespace

namespace {

void spin(std::chrono::milliseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

// The same-batch cancel race on direct descriptors: recv_exact and send_all on a direct
// socket cancelled by a watchdog woken in the batch where their step completes.
TEST(AdversarialDirectFocused, SameBatchCancelOnDirectSockets) {
  std::optional<io_context> ctx;
  try {
    ctx.emplace(io_context_options{.backend = backend_kind::uring, .quiet = true, .direct_descriptors = 64});
  } catch (const std::system_error&) {
    GTEST_SKIP();
  }
  if (ctx->direct_table_size() == 0) GTEST_SKIP() << "no direct descriptors";
  auto l = listen_loopback({.direct_descriptors = true});
  for (int kind = 0; kind < 2; ++kind) {
    for (int round = 0; round < 16; ++round) {
      auto d = sync_wait(*ctx, connect_pair(l, address_of(l)));  // d.second direct
      auto t = sync_wait(*ctx, connect_pair(l, address_of(l)));  // t.second direct
      ASSERT_TRUE(d.second.is_direct());
      const int peer = d.first.native_handle();
      int sz = 4096;
      ::setsockopt(peer, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
      bool ended = false;
      sync_wait(*ctx, [&]() -> task<void> {
        std::vector<std::byte> big(4 << 20);
        std::array<std::byte, 2000> dst{};
        scope op;
        op.spawn([&]() -> task<void> {
          if (kind == 0) (void)co_await d.second.recv_exact(dst);
          else (void)co_await d.second.send_all(big);
        }());
        auto watchdog = [&]() -> task<void> {
          std::array<std::byte, 1> one{};
          (void)co_await t.second.recv(one);
          d.second.cancel();
        };
        auto busy = [&]() -> task<void> {
          (void)(void)co_await sleep_for(20ms);
          if (round % 2 == 0) (void)::send(t.first.native_handle(), "t", 1, 0);
          if (kind == 0) {
            std::array<std::byte, 1000> bytes{};
            (void)::send(peer, bytes.data(), bytes.size(), 0);
          } else {
            std::vector<std::byte> sink(1 << 16);
            for (int i = 0; i < 4; ++i) (void)::recv(peer, sink.data(), sink.size(), MSG_DONTWAIT);
          }
          if (round % 2 == 1) (void)::send(t.first.native_handle(), "t", 1, 0);
          spin(5ms);
        };
        scope s;
        s.spawn(watchdog());
        s.spawn(busy());
        co_await s.join();
        for (auto waited = 0ms; op.size() > 0 && waited < 3s; waited += 10ms) (void)co_await sleep_for(10ms);
        ended = op.size() == 0;
        op.request_stop();
        co_await op.join();
      }());
      ASSERT_TRUE(ended) << "kind " << kind << " round " << round << ": kept waiting after cancel()";
    }
  }
}

}  // namespace
