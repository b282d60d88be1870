// SPDX-License-Identifier: Apache-2.0
// raw_uring_server: the "no framework" io_uring peer, a bound on what any
// io_uring runtime can reach on this machine.
//
// Every thread owns one ring (single issuer, deferred task work), one
// SO_REUSEPORT listener with a multishot accept, and one provided-buffer ring
// that feeds a multishot recv on every connection. Replies go out with plain
// sends, at most one in flight per connection so bytes stay in order. The
// loop makes one io_uring_submit_and_wait call per iteration and reaps the
// completions in a batch.
#include <liburing.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <latch>
#include <string>
#include <string_view>
#include <vector>

#include "../common/http.hpp"
#include "../common/peer.hpp"

namespace {

constexpr const char* kProgram = "raw_uring_server";
constexpr unsigned kSubmitEntries = 4096;
constexpr unsigned kBufferCount = 4096;  // provided buffers per thread, a power of two
constexpr unsigned kBufferSize = peers::kReadBufferSize;
constexpr int kBufferGroup = 0;

// The operation a completion belongs to, kept in the low bits of user_data
// next to the connection pointer.
enum Op : std::uint64_t { kAccept = 0, kRecv = 1, kSend = 2 };
constexpr std::uint64_t kOpMask = 7;

// A provided buffer that holds echo bytes waiting to be sent.
struct Chunk {
  std::uint16_t buffer_id;
  std::uint32_t length;
};

struct Connection {
  explicit Connection(int socket) : fd(socket) {}

  int fd;
  bool recv_armed = false;       // a multishot recv is in the kernel
  bool waiting_buffers = false;  // recv stopped on -ENOBUFS, re-armed once buffers return
  bool send_in_flight = false;
  bool read_done = false;     // the peer closed its side
  bool close_wanted = false;  // close once the output is written (http)
  bool failed = false;        // an error: drop the output and close
  bool shut_down = false;     // shutdown() was called to end the pending recv

  // echo: received buffers sent back as they are, the front one from `chunk_sent`.
  std::deque<Chunk> chunks;
  std::uint32_t chunk_sent = 0;

  // pong and http: `sending` is in the kernel (from `sending_offset`), and
  // `queued` collects what goes after it.
  std::string sending;
  std::size_t sending_offset = 0;
  std::string queued;

  std::string pong_input;  // bytes of the pong block being assembled
  peers::http::Session http;

  bool output_idle() const { return !send_in_flight && chunks.empty() && queued.empty(); }
};

class Worker {
 public:
  Worker(const peers::Options& options, int listener) : options_(options), listener_(listener) {}

  [[noreturn]] void run(std::latch& ready) {
    setup_ring();
    setup_buffers();
    arm_accept();
    ready.count_down();
    for (;;) {
      return_buffers();
      int rc = io_uring_submit_and_wait(&ring_, 1);
      if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
        peers::die(kProgram, "io_uring_submit_and_wait", -rc);
      }
      unsigned head;
      unsigned seen = 0;
      io_uring_cqe* cqe;
      io_uring_for_each_cqe(&ring_, head, cqe) {
        handle(cqe);
        ++seen;
      }
      io_uring_cq_advance(&ring_, seen);
    }
  }

 private:
  void setup_ring() {
    // Newer kernels take all of these flags; drop them one by one for older ones.
    const unsigned flag_sets[] = {
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_COOP_TASKRUN,
        IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_COOP_TASKRUN,
        IORING_SETUP_COOP_TASKRUN,
        0,
    };
    int rc = -EINVAL;
    for (unsigned flags : flag_sets) {
      io_uring_params params{};
      params.flags = flags | IORING_SETUP_CQSIZE;
      params.cq_entries = 4 * kSubmitEntries;
      rc = io_uring_queue_init_params(kSubmitEntries, &ring_, &params);
      if (rc != -EINVAL) break;
    }
    if (rc < 0) peers::die(kProgram, "io_uring_queue_init_params", -rc);
  }

  void setup_buffers() {
    // liburing 2.3 has no io_uring_setup_buf_ring: the ring must be page
    // aligned, which mmap guarantees.
    const std::size_t ring_bytes = kBufferCount * sizeof(io_uring_buf);
    void* ring_memory = mmap(nullptr, ring_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* buffer_memory = mmap(nullptr, std::size_t{kBufferCount} * kBufferSize, PROT_READ | PROT_WRITE,
                               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (ring_memory == MAP_FAILED || buffer_memory == MAP_FAILED) {
      peers::die(kProgram, "mmap", errno);
    }
    buffer_ring_ = static_cast<io_uring_buf_ring*>(ring_memory);
    buffers_ = static_cast<char*>(buffer_memory);
    io_uring_buf_ring_init(buffer_ring_);

    io_uring_buf_reg registration{};
    registration.ring_addr = reinterpret_cast<std::uint64_t>(ring_memory);
    registration.ring_entries = kBufferCount;
    registration.bgid = kBufferGroup;
    if (int rc = io_uring_register_buf_ring(&ring_, &registration, 0); rc < 0) {
      peers::die(kProgram, "io_uring_register_buf_ring", -rc);
    }
    buffers_held_ = kBufferCount;
    for (unsigned id = 0; id < kBufferCount; ++id) release_buffer(static_cast<std::uint16_t>(id));
    return_buffers();
  }

  char* buffer(std::uint16_t id) { return buffers_ + std::size_t{id} * kBufferSize; }

  // Gives a buffer back to the kernel; it becomes visible at the next return_buffers().
  void release_buffer(std::uint16_t id) {
    io_uring_buf_ring_add(buffer_ring_, buffer(id), kBufferSize, id, io_uring_buf_ring_mask(kBufferCount),
                          buffers_to_return_++);
    --buffers_held_;
  }

  void return_buffers() {
    if (buffers_to_return_ == 0) return;
    io_uring_buf_ring_advance(buffer_ring_, buffers_to_return_);
    buffers_to_return_ = 0;
    // Connections whose recv ran out of buffers can read again.
    std::vector<Connection*> starved;
    starved.swap(starved_);
    for (Connection* c : starved) {
      c->waiting_buffers = false;
      if (c->failed || c->read_done || c->close_wanted) {
        settle(c);
      } else {
        arm_recv(c);
      }
    }
  }

  io_uring_sqe* next_sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    while (sqe == nullptr) {  // the submission queue is full: hand it over
      io_uring_submit(&ring_);
      sqe = io_uring_get_sqe(&ring_);
    }
    return sqe;
  }

  static std::uint64_t tag(Connection* c, Op op) { return reinterpret_cast<std::uint64_t>(c) | op; }

  void arm_accept() {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_multishot_accept(sqe, listener_, nullptr, nullptr, 0);
    io_uring_sqe_set_data64(sqe, tag(nullptr, kAccept));
  }

  void arm_recv(Connection* c) {
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_recv_multishot(sqe, c->fd, nullptr, 0, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = kBufferGroup;
    io_uring_sqe_set_data64(sqe, tag(c, kRecv));
    c->recv_armed = true;
  }

  // Starts the next send if none is in flight.
  void send_next(Connection* c) {
    if (c->send_in_flight || c->failed) return;
    const void* data;
    std::size_t length;
    if (!c->chunks.empty()) {
      const Chunk& chunk = c->chunks.front();
      data = buffer(chunk.buffer_id) + c->chunk_sent;
      length = chunk.length - c->chunk_sent;
    } else {
      if (c->sending_offset == c->sending.size()) {
        if (c->queued.empty()) return;
        c->sending.swap(c->queued);
        c->queued.clear();
        c->sending_offset = 0;
      }
      data = c->sending.data() + c->sending_offset;
      length = c->sending.size() - c->sending_offset;
    }
    io_uring_sqe* sqe = next_sqe();
    io_uring_prep_send(sqe, c->fd, data, length, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, tag(c, kSend));
    c->send_in_flight = true;
  }

  void handle(io_uring_cqe* cqe) {
    const std::uint64_t data = io_uring_cqe_get_data64(cqe);
    auto* c = reinterpret_cast<Connection*>(data & ~kOpMask);
    switch (data & kOpMask) {
      case kAccept:
        on_accept(cqe);
        break;
      case kRecv:
        on_recv(c, cqe);
        break;
      case kSend:
        on_send(c, cqe);
        break;
    }
  }

  void on_accept(io_uring_cqe* cqe) {
    if (cqe->res == -EINVAL) return;  // the listener was shut down: exiting
    if (cqe->res >= 0) {
      peers::set_nodelay(cqe->res);
      arm_recv(new Connection(cqe->res));
    } else if (cqe->res != -EINTR && cqe->res != -ECONNABORTED && !accept_error_reported_) {
      // Usually EMFILE: keep accepting, but say it once.
      std::fprintf(stderr, "%s: accept: %s\n", kProgram, std::strerror(-cqe->res));
      accept_error_reported_ = true;
    }
    if (!(cqe->flags & IORING_CQE_F_MORE)) arm_accept();
  }

  void on_recv(Connection* c, io_uring_cqe* cqe) {
    const bool more = cqe->flags & IORING_CQE_F_MORE;
    if (!more) c->recv_armed = false;
    const int res = cqe->res;

    if (res > 0) {
      const auto id = static_cast<std::uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
      ++buffers_held_;
      consume(c, id, static_cast<std::uint32_t>(res));
    } else if (res == 0) {
      c->read_done = true;
    } else if (res == -ENOBUFS) {
      // If every buffer is held by a connection, wait until one comes back;
      // otherwise the kernel may already see the ones returned since.
      if (buffers_held_ == kBufferCount && !c->failed && !c->read_done && !c->close_wanted) {
        c->waiting_buffers = true;
        starved_.push_back(c);
        return;
      }
    } else {
      fail(c);
    }

    if (!c->recv_armed && !c->failed && !c->read_done && !c->close_wanted) arm_recv(c);
    settle(c);
  }

  // Takes the bytes of provided buffer `id` according to the mode.
  void consume(Connection* c, std::uint16_t id, std::uint32_t length) {
    if (c->failed || c->close_wanted) {  // nobody wants these bytes any more
      release_buffer(id);
      return;
    }
    const std::string_view bytes(buffer(id), length);
    switch (options_.mode) {
      case peers::Mode::echo:
        c->chunks.push_back({id, length});  // sent straight from the buffer
        break;
      case peers::Mode::pong: {
        c->pong_input.append(bytes);
        release_buffer(id);
        const std::size_t ready = c->pong_input.size() - c->pong_input.size() % options_.block;
        if (ready == c->pong_input.size() && c->queued.empty()) {
          c->queued.swap(c->pong_input);
          c->pong_input.clear();
        } else if (ready > 0) {
          c->queued.append(c->pong_input, 0, ready);
          c->pong_input.erase(0, ready);
        }
        break;
      }
      case peers::Mode::http:
        c->close_wanted = c->http.feed(bytes, c->queued);
        release_buffer(id);
        break;
    }
    send_next(c);
  }

  void on_send(Connection* c, io_uring_cqe* cqe) {
    c->send_in_flight = false;
    if (cqe->res < 0) {
      fail(c);
    } else if (!c->failed) {
      const auto sent = static_cast<std::uint32_t>(cqe->res);
      if (!c->chunks.empty()) {
        c->chunk_sent += sent;
        if (c->chunk_sent == c->chunks.front().length) {
          release_buffer(c->chunks.front().buffer_id);
          c->chunks.pop_front();
          c->chunk_sent = 0;
        }
      } else {
        c->sending_offset += sent;
      }
      send_next(c);  // the rest of a short send, or what was queued meanwhile
    }
    settle(c);
  }

  void fail(Connection* c) {
    c->failed = true;
    for (const Chunk& chunk : c->chunks) release_buffer(chunk.buffer_id);
    c->chunks.clear();
    c->queued.clear();
  }

  // Closes the connection once it is finished and nothing is in the kernel.
  void settle(Connection* c) {
    const bool finished = c->failed || ((c->read_done || c->close_wanted) && c->output_idle());
    if (!finished) return;
    if (c->recv_armed || c->send_in_flight || c->waiting_buffers) {
      // Wake the pending operations; their completions come back here.
      if (!c->shut_down) {
        c->shut_down = true;
        shutdown(c->fd, SHUT_RDWR);
      }
      return;
    }
    close(c->fd);
    delete c;
  }

  const peers::Options& options_;
  const int listener_;
  io_uring ring_{};
  io_uring_buf_ring* buffer_ring_ = nullptr;
  char* buffers_ = nullptr;
  int buffers_to_return_ = 0;
  unsigned buffers_held_ = 0;
  std::vector<Connection*> starved_;
  bool accept_error_reported_ = false;
};

}  // namespace

int main(int argc, char** argv) {
  const peers::Options options = peers::parse_options(argc, argv, kProgram);
  peers::prepare_process();
  const std::vector<int> listeners = peers::open_listeners(options, options.threads, /*nonblocking=*/false, kProgram);
  peers::run_until_signal(kProgram, options, listeners,
                          [&](int listener, std::latch& ready) { Worker(options, listener).run(ready); });
}
