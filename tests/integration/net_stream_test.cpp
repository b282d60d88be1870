// SPDX-License-Identifier: Apache-2.0
// Stream sockets: partial counts of recv_exact / send_all that stop early,
// stream_socket::cancel() and stream_listener::cancel(), and a receive that waited on
// a closed descriptor never reading the socket that reuses its number.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

#include "ringio/ringio.hpp"
#include "support/backend_test.hpp"
#include "support/loopback.hpp"

using namespace ringio;
using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

std::string_view text(std::span<const std::byte> b) { return {reinterpret_cast<const char*>(b.data()), b.size()}; }

class NetStream : public backend_test {};

// ---- recv_exact / send_all stopped part-way: the count of bytes moved ----

// abort(): the peer reads connection_reset, not end of stream, even with data it has
// not read yet; the aborted socket is empty.
TEST_P(NetStream, AbortResetsThePeerInsteadOfEndingTheStream) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto err = run([](stream_listener& l, socket_address at) -> task<std::error_code> {
    auto [a, c] = co_await when_all(l.accept(), stream_socket::connect(at));
    if (!a || !c) co_return std::make_error_code(std::errc::io_error);
    auto sent = co_await c->send_all(std::string_view("partial answer"));
    EXPECT_TRUE(sent);
    c->abort();
    EXPECT_FALSE(c->is_open());
    std::array<std::byte, 64> buf;
    for (;;) {  // what arrived before the reset may be read first, then the reset
      auto n = co_await with_timeout(a->recv(buf), 5s);
      if (!n) co_return n.error();
      if (*n == 0) co_return std::error_code();  // a clean end: wrong
    }
  }(l, at));
  EXPECT_EQ(err, std::errc::connection_reset) << err.message();
}

TEST_P(NetStream, StoppedSendAllReportsExactlyTheBytesThePeerReceives) {
  socket_pair p;
  auto data = random_bytes(8 << 20, 41);  // far more than the socket buffers hold
  struct outcome {
    result<std::size_t> sent = 0;
    std::vector<std::byte> received;
  };
  auto o = run([](socket_pair& p, const std::vector<std::byte>& data) -> task<outcome> {
    outcome o;
    std::stop_source stop;
    auto sender = [](stream_socket& s, const std::vector<std::byte>& d, std::stop_token t,
                     result<std::size_t>& sent) -> task<void> {
      sent = co_await s.send_all(d).with_stop(t);
      auto shut = co_await s.shutdown();  // the peer reads the end right after those bytes
      EXPECT_TRUE(shut);
    };
    auto reader = [](stream_socket& s, std::stop_source& stop, std::vector<std::byte>& got) -> task<void> {
      std::array<std::byte, 4096> buf;
      // Read slowly: the sender stays blocked in the middle of its buffer.
      for (int i = 0; i < 10; ++i) {
        auto r = co_await with_timeout(s.recv(buf), 5s);
        if (!r || *r == 0) {
          ADD_FAILURE() << "early end";
          co_return;
        }
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*r));
        auto slept = co_await sleep_for(2ms);
        EXPECT_TRUE(slept);
      }
      stop.request_stop();
      for (;;) {
        auto r = co_await with_timeout(s.recv(buf), 5s);
        if (!r) {
          ADD_FAILURE() << r.error().message();
          co_return;
        }
        if (*r == 0) co_return;
        got.insert(got.end(), buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(*r));
      }
    };
    co_await when_all(sender(p.a, data, stop.get_token(), o.sent), reader(p.b, stop, o.received));
    co_return o;
  }(p, data));
  ASSERT_TRUE(o.sent) << "a send_all stopped after moving bytes must report them: " << o.sent.error().message();
  EXPECT_GT(*o.sent, 0u);
  EXPECT_LT(*o.sent, data.size());
  EXPECT_EQ(*o.sent, o.received.size()) << "the count differs from what the peer received";
  EXPECT_TRUE(std::equal(o.received.begin(), o.received.end(), data.begin()));
}

TEST_P(NetStream, SendAllTimingOutPartWayReportsTheBytesSent) {
  socket_pair p;
  auto data = random_bytes(8 << 20, 42);
  struct outcome {
    result<std::size_t> sent = 0;
    std::size_t received = 0;
  };
  auto o = run([](socket_pair& p, const std::vector<std::byte>& data) -> task<outcome> {
    outcome o;
    auto sender = [](stream_socket& s, const std::vector<std::byte>& d, result<std::size_t>& sent) -> task<void> {
      sent = co_await with_timeout(s.send_all(d), 50ms);
      auto shut = co_await s.shutdown();
      EXPECT_TRUE(shut);
    };
    auto reader = [](stream_socket& s, std::size_t& got) -> task<void> {
      std::array<std::byte, 4096> buf;
      for (int i = 0;; ++i) {
        auto r = co_await with_timeout(s.recv(buf), 5s);
        if (!r) {
          ADD_FAILURE() << r.error().message();
          co_return;
        }
        if (*r == 0) co_return;
        got += *r;
        if (i < 40) {  // slowly at first: the deadline passes in the middle of the buffer
          auto slept = co_await sleep_for(2ms);
          EXPECT_TRUE(slept);
        }
      }
    };
    co_await when_all(sender(p.a, data, o.sent), reader(p.b, o.received));
    co_return o;
  }(p, data));
  ASSERT_TRUE(o.sent) << "a send_all timing out after moving bytes must report them: " << o.sent.error().message();
  EXPECT_GT(*o.sent, 0u);
  EXPECT_LT(*o.sent, data.size());
  EXPECT_EQ(*o.sent, o.received);
}

TEST_P(NetStream, StoppedRecvExactReportsThePartialArrivalInTheBuffer) {
  socket_pair p;
  struct outcome {
    result<std::size_t> stopped = 0;
    std::string stopped_text;
    result<std::size_t> timed = 0;
    std::string timed_text;
    result<std::size_t> nothing = 0;
  };
  auto o = run([](socket_pair& p) -> task<outcome> {
    outcome o;
    std::array<std::byte, 1000> buf{};
    auto w = co_await p.b.send_all(std::string_view("partial"));
    EXPECT_TRUE(w);
    std::stop_source stop;
    auto stopper = [](std::stop_source& s) -> task<void> {
      auto slept = co_await sleep_for(20ms);  // recv_exact has the 7 bytes and waits for more
      EXPECT_TRUE(slept);
      s.request_stop();
    };
    auto [r, unused] = co_await when_all(p.a.recv_exact(buf).with_stop(stop.get_token()), stopper(stop));
    (void)unused;
    o.stopped = r;
    if (r) o.stopped_text = std::string(text(std::span(buf).first(*r)));

    std::array<std::byte, 1000> buf2{};
    w = co_await p.b.send_all(std::string_view("more"));
    EXPECT_TRUE(w);
    o.timed = co_await with_timeout(p.a.recv_exact(buf2), 20ms);
    if (o.timed) o.timed_text = std::string(text(std::span(buf2).first(*o.timed)));

    // Nothing arrives: then it is an error.
    o.nothing = co_await with_timeout(p.a.recv_exact(buf2), 20ms);
    co_return o;
  }(p));
  ASSERT_TRUE(o.stopped) << o.stopped.error().message();
  EXPECT_EQ(*o.stopped, 7u);
  EXPECT_EQ(o.stopped_text, "partial");
  ASSERT_TRUE(o.timed) << o.timed.error().message();
  EXPECT_EQ(*o.timed, 4u);
  EXPECT_EQ(o.timed_text, "more");
  ASSERT_FALSE(o.nothing);
  EXPECT_EQ(o.nothing.error(), std::errc::timed_out);
}

TEST_P(NetStream, SendAllFailingPartWayReportsTheBytesSent) {
  socket_pair p;
  auto data = random_bytes(4 << 20, 43);
  auto o =
      run([](socket_pair& p, const std::vector<std::byte>& data) -> task<std::pair<result<std::size_t>, std::size_t>> {
        std::size_t received = 0;
        result<std::size_t> sent = 0;
        auto sender = [](stream_socket& s, const std::vector<std::byte>& d, result<std::size_t>& sent) -> task<void> {
          sent = co_await with_timeout(s.send_all(d), 5s);
        };
        auto reader = [](stream_socket& s, std::size_t& got) -> task<void> {
          std::array<std::byte, 4096> buf;
          for (int i = 0; i < 8; ++i) {
            auto r = co_await with_timeout(s.recv(buf), 5s);
            if (!r || *r == 0) break;
            got += *r;
          }
          s = stream_socket{};  // the peer goes away: the sender's next send fails (EPIPE)
        };
        co_await when_all(sender(p.a, data, sent), reader(p.b, received));
        co_return std::pair{sent, received};
      }(p, data));
  ASSERT_TRUE(o.first) << o.first.error().message();
  EXPECT_GE(*o.first, o.second);
  EXPECT_LT(*o.first, data.size());
}

// ---- stream_socket::cancel(), stream_listener::cancel() ----

TEST_P(NetStream, CancelReleasesAWaitingRecvAndTheSocketStaysUsable) {
  socket_pair p;
  struct outcome {
    result<std::size_t> cancelled = 0;
    std::string after;
  };
  auto o = run([](socket_pair& p) -> task<outcome> {
    outcome o;
    std::array<std::byte, 64> buf;
    auto canceller = [](stream_socket& s) -> task<void> {
      auto slept = co_await sleep_for(20ms);  // the recv waits by now
      EXPECT_TRUE(slept);
      s.cancel();
    };
    auto [r, unused] = co_await when_all(with_timeout(p.a.recv(buf), 2s), canceller(p.a));
    (void)unused;
    o.cancelled = r;
    auto w = co_await p.b.send_all(std::string_view("after"));
    EXPECT_TRUE(w);
    auto again = co_await with_timeout(p.a.recv(buf), 2s);
    if (again) o.after = std::string(text(std::span(buf).first(*again)));
    co_return o;
  }(p));
  ASSERT_FALSE(o.cancelled) << "the recv was not released";
  EXPECT_EQ(o.cancelled.error(), std::errc::operation_canceled) << o.cancelled.error().message();
  EXPECT_EQ(o.after, "after");
}

TEST_P(NetStream, CancelReleasesABlockedSendAllWithItsCount) {
  socket_pair p;
  auto data = random_bytes(8 << 20, 44);
  auto o =
      run([](socket_pair& p, const std::vector<std::byte>& data) -> task<std::pair<result<std::size_t>, std::size_t>> {
        result<std::size_t> sent = 0;
        std::size_t received = 0;
        auto sender = [](stream_socket& s, const std::vector<std::byte>& d, result<std::size_t>& sent) -> task<void> {
          sent = co_await with_timeout(s.send_all(d), 5s);
          auto shut = co_await s.shutdown();
          EXPECT_TRUE(shut);
        };
        auto controller = [](stream_socket& s, stream_socket& peer, std::size_t& got) -> task<void> {
          auto slept = co_await sleep_for(20ms);  // the send_all is blocked on a full buffer
          EXPECT_TRUE(slept);
          s.cancel();
          std::array<std::byte, 65536> buf;
          for (;;) {
            auto r = co_await with_timeout(peer.recv(buf), 5s);
            if (!r || *r == 0) co_return;
            got += *r;
          }
        };
        co_await when_all(sender(p.a, data, sent), controller(p.a, p.b, received));
        co_return std::pair{sent, received};
      }(p, data));
  ASSERT_TRUE(o.first) << o.first.error().message();
  EXPECT_GT(*o.first, 0u);
  EXPECT_LT(*o.first, data.size()) << "cancel() did not stop the send_all";
  EXPECT_EQ(*o.first, o.second);
}

TEST_P(NetStream, ListenerCancelReleasesAWaitingAccept) {
  auto l = listen_loopback();
  auto at = address_of(l);
  auto o = run([](stream_listener& l, socket_address at) -> task<std::pair<std::error_code, bool>> {
    auto canceller = [](stream_listener& l) -> task<void> {
      auto slept = co_await sleep_for(20ms);
      EXPECT_TRUE(slept);
      l.cancel();
    };
    auto [a, unused] = co_await when_all(with_timeout(l.accept(), 2s), canceller(l));
    (void)unused;
    std::error_code first = a ? std::error_code{} : a.error();
    auto c = co_await stream_socket::connect(at);
    EXPECT_TRUE(c);
    auto second = co_await with_timeout(l.accept(), 2s);
    co_return std::pair{first, static_cast<bool>(second)};
  }(l, at));
  EXPECT_EQ(o.first, std::errc::operation_canceled) << o.first.message();
  EXPECT_TRUE(o.second);
}

// ---- a descriptor number reused while a receive waited on the old socket ----

TEST_P(NetStream, AReceiveOnAClosedSocketNeverReadsTheSocketReusingItsNumber) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  const int old_fd = sv[0];
  stream_socket x{detail::fd_handle(sv[0])};
  stream_socket x_peer{detail::fd_handle(sv[1])};
  struct outcome {
    result<std::size_t> old_recv = 0;
    std::string old_text;
    result<std::size_t> new_recv = 0;
    std::string new_text;
    bool same_number = false;
  };
  auto o = run([](stream_socket& x, int old_fd) -> task<outcome> {
    outcome o;
    std::stop_source stop_old;
    std::array<std::byte, 64> old_buf{}, new_buf{};
    stream_socket y, y_peer;
    auto old_reader = [](stream_socket& x, std::span<std::byte> buf, std::stop_token t,
                         result<std::size_t>& out) -> task<void> { out = co_await x.recv(buf).with_stop(t); };
    auto rest = [](stream_socket& x, int old_fd, stream_socket& y, stream_socket& y_peer, std::span<std::byte> buf,
                   std::stop_source& stop_old, outcome& o) -> task<void> {
      auto slept = co_await sleep_for(10ms);  // the old receive waits
      EXPECT_TRUE(slept);
      x = stream_socket{};  // ringio closes the socket the receive waits on
      int sv[2];
      EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
      if (sv[1] == old_fd) std::swap(sv[0], sv[1]);
      if (sv[0] != old_fd && ::dup3(sv[0], old_fd, O_CLOEXEC) == old_fd) {
        ::close(sv[0]);
        sv[0] = old_fd;
      }
      o.same_number = sv[0] == old_fd;
      y = stream_socket(detail::fd_handle(sv[0]));
      y_peer = stream_socket(detail::fd_handle(sv[1]));
      auto new_reader = [](stream_socket& y, std::span<std::byte> buf, result<std::size_t>& out) -> task<void> {
        out = co_await with_timeout(y.recv(buf), 2s);
      };
      auto writer = [](stream_socket& y_peer) -> task<void> {
        auto slept = co_await sleep_for(10ms);  // the new receive waits too
        EXPECT_TRUE(slept);
        EXPECT_EQ(::send(y_peer.native_handle(), "new", 3, MSG_NOSIGNAL), 3);
      };
      co_await when_all(new_reader(y, buf, o.new_recv), writer(y_peer));
      stop_old.request_stop();
    };
    co_await when_all(old_reader(x, old_buf, stop_old.get_token(), o.old_recv),
                      rest(x, old_fd, y, y_peer, new_buf, stop_old, o));
    if (o.old_recv) o.old_text = std::string(text(std::span(old_buf).first(*o.old_recv)));
    if (o.new_recv) o.new_text = std::string(text(std::span(new_buf).first(*o.new_recv)));
    co_return o;
  }(x, old_fd));
  EXPECT_TRUE(o.same_number) << "could not give the new socket the old number";
  EXPECT_TRUE(!o.old_recv || *o.old_recv == 0) << "the old receive read the new socket: '" << o.old_text << "'";
  ASSERT_TRUE(o.new_recv) << o.new_recv.error().message();
  EXPECT_EQ(o.new_text, "new");
}

RINGIO_ALL_BACKENDS(NetStream);

}  // namespace
