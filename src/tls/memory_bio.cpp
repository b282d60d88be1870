// SPDX-License-Identifier: Apache-2.0
// The BIO between OpenSSL and a stream's ciphertext buffers. OpenSSL sees an empty
// input as "retry later" and a full output as "retry later"; the stream's operations
// then move bytes with the socket and call OpenSSL again.
#include <openssl/bio.h>

#include <algorithm>
#include <cstring>

#include "record_buffer_cache.hpp"
#include "stream_state.hpp"

namespace ringio::tls::detail {
namespace {

stream_state& state_of(BIO* b) { return *static_cast<stream_state*>(BIO_get_data(b)); }

int bio_read(BIO* b, char* dst, int len) {
  BIO_clear_retry_flags(b);
  stream_state& s = state_of(b);
  if (s.has_input()) {
    std::size_t n = std::min(static_cast<std::size_t>(len), s.in_end - s.in_begin);
    std::memcpy(dst, s.in + s.in_begin, n);
    s.in_begin += n;
    return static_cast<int>(n);
  }
  if (s.peer_eof) return 0;
  BIO_set_retry_read(b);
  return -1;
}

int bio_write(BIO* b, const char* src, int len) {
  BIO_clear_retry_flags(b);
  stream_state& s = state_of(b);
  if (s.write_failure) return len;  // nothing can be sent any more: output is dropped
  if (s.out == nullptr) {
    s.out = borrow_record_buffer();
    s.out_begin = s.out_end = 0;
  }
  if (!s.flushing && s.out_begin > 0) {  // nothing points into out: compact it
    std::memmove(s.out, s.out + s.out_begin, s.out_end - s.out_begin);
    s.out_end -= s.out_begin;
    s.out_begin = 0;
  }
  std::size_t room = record_buffer_size - s.out_end;
  if (room == 0) {
    BIO_set_retry_write(b);
    return -1;
  }
  std::size_t n = std::min(room, static_cast<std::size_t>(len));
  std::memcpy(s.out + s.out_end, src, n);
  s.out_end += n;
  return static_cast<int>(n);
}

long bio_ctrl(BIO* b, int cmd, long, void*) {
  stream_state& s = state_of(b);
  switch (cmd) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_EOF:
      return s.peer_eof && !s.has_input() ? 1 : 0;
    case BIO_CTRL_PENDING:
      return static_cast<long>(s.in_end - s.in_begin);
    case BIO_CTRL_WPENDING:
      return static_cast<long>(s.out_end - s.out_begin);
    default:
      return 0;
  }
}

int bio_create(BIO* b) {
  BIO_set_init(b, 1);
  return 1;
}

BIO_METHOD* memory_method() {
  static BIO_METHOD* method = [] {
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "ringio tls records");
    BIO_meth_set_read(m, bio_read);
    BIO_meth_set_write(m, bio_write);
    BIO_meth_set_ctrl(m, bio_ctrl);
    BIO_meth_set_create(m, bio_create);
    return m;
  }();
  return method;
}

}  // namespace

BIO* make_memory_bio(stream_state& state) {
  BIO* b = BIO_new(memory_method());
  if (b != nullptr) BIO_set_data(b, &state);
  return b;
}

}  // namespace ringio::tls::detail
