// SPDX-License-Identifier: Apache-2.0
#include "multipart_ranges.hpp"

#include <algorithm>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringio/buffer.hpp"
#include "ringio/fs/file.hpp"
#include "ringio/http/body_writer.hpp"

namespace ringio::http::detail {
namespace {

constexpr std::size_t read_chunk = 64 * 1024;

struct parts {
  ringio::detail::fd_handle fd;
  std::vector<byte_range> ranges;
  std::vector<std::string> heads;  // the delimiter and fields before each range
  std::string tail;                // the close delimiter
};

// Random, so that no file content can be made to hold the delimiter ahead of time.
std::string random_boundary() {
  static constexpr char hex[] = "0123456789abcdef";
  std::random_device rd;
  std::string b;
  for (int i = 0; i < 4; ++i)
    for (unsigned v = rd(), k = 0; k < 8; ++k, v >>= 4) b += hex[v & 15];
  return b;
}

task<void> write_parts(std::shared_ptr<const parts> p, body_writer& w) {
  auto buf = std::make_unique_for_overwrite<char[]>(read_chunk);
  for (std::size_t i = 0; i < p->ranges.size(); ++i) {
    auto head = co_await w.write_batched(p->heads[i]);
    if (!head) co_return;
    std::uint64_t offset = p->ranges[i].first, left = p->ranges[i].last - p->ranges[i].first + 1;
    while (left > 0) {
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, read_chunk));
      auto n = co_await ::ringio::detail::read_at_op(p->fd.get(), mutable_buffer(buf.get(), want), offset);
      // The part's Content-Range cannot be kept: abort rather than end the body short.
      if (!n || *n == 0) throw std::runtime_error("static file shrank while its ranges were sent");
      auto sent = co_await w.write_batched({buf.get(), *n});
      if (!sent) co_return;
      offset += *n;
      left -= *n;
    }
  }
  auto tail = co_await w.write_batched(p->tail);
  (void)tail;
}

}  // namespace

response multipart_ranges(ringio::detail::fd_handle fd, std::span<const byte_range> ranges, std::uint64_t size,
                          std::string_view content_type) {
  auto p = std::make_shared<parts>();
  p->fd = std::move(fd);
  p->ranges.assign(ranges.begin(), ranges.end());
  const std::string boundary = random_boundary();
  for (const byte_range& r : ranges) {
    std::string head = p->heads.empty() ? "--" : "\r\n--";
    head.append(boundary).append("\r\nContent-Type: ").append(content_type);
    head.append("\r\nContent-Range: bytes ").append(std::to_string(r.first)).append("-");
    head.append(std::to_string(r.last)).append("/").append(std::to_string(size)).append("\r\n\r\n");
    p->heads.push_back(std::move(head));
  }
  p->tail = "\r\n--" + boundary + "--\r\n";
  std::shared_ptr<const parts> shared = std::move(p);
  return response::stream(206, "multipart/byteranges; boundary=" + boundary,
                          [shared](body_writer& w) { return write_parts(shared, w); });
}

}  // namespace ringio::http::detail
