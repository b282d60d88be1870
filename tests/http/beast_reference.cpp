// SPDX-License-Identifier: Apache-2.0
// beast_reference — Boost.Beast's request parser as the reference of the differential
// test. Limits match ringio's defaults: 16 KiB of head, 1 MiB of body.
#include <boost/beast/http/basic_parser.hpp>

#include "http/parse_outcome.hpp"

namespace ringio_test {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;

class recorder final : public bhttp::basic_parser<true> {
 public:
  explicit recorder(parse_outcome& out) : out_(out) {}

 private:
  void on_request_impl(bhttp::verb, beast::string_view method, beast::string_view target, int version,
                       beast::error_code&) override {
    out_.method.assign(method.data(), method.size());
    out_.target.assign(target.data(), target.size());
    out_.version = version;
  }
  void on_response_impl(int, beast::string_view, int, beast::error_code&) override {}
  void on_field_impl(bhttp::field, beast::string_view name, beast::string_view value, beast::error_code&) override {
    // Trailer fields come through here too; only the head's are compared.
    if (!head_done_)
      out_.fields.emplace_back(std::string(name.data(), name.size()), std::string(value.data(), value.size()));
  }
  void on_header_impl(beast::error_code&) override { head_done_ = out_.head_complete = true; }
  void on_body_init_impl(const boost::optional<std::uint64_t>&, beast::error_code&) override {}
  std::size_t on_body_impl(beast::string_view s, beast::error_code&) override {
    out_.body.append(s.data(), s.size());
    return s.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, beast::error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, beast::string_view s, beast::error_code&) override {
    out_.body.append(s.data(), s.size());
    return s.size();
  }
  void on_finish_impl(beast::error_code&) override {}

  parse_outcome& out_;
  bool head_done_ = false;
};

}  // namespace

parse_outcome beast_parse(const std::string& in) {
  parse_outcome out;
  recorder p(out);
  p.eager(true);
  p.header_limit(16 * 1024);
  p.body_limit(1 << 20);
  beast::error_code ec;
  std::size_t used = 0;
  while (!p.is_done()) {
    std::size_t n = p.put(boost::asio::buffer(in.data() + used, in.size() - used), ec);
    used += n;
    if (ec == bhttp::error::need_more || (!ec && n == 0)) {
      if (used == in.size() || n == 0) break;  // everything given: the message is incomplete
      ec = {};
      continue;
    }
    if (ec) {
      out = parse_outcome{};
      out.kind = parse_outcome::rejected;
      out.error = ec.message();
      return out;
    }
  }
  if (!p.is_done()) {
    out.kind = parse_outcome::incomplete;  // what the head said is kept
    return out;
  }
  out.kind = parse_outcome::accepted;
  out.consumed = used;
  return out;
}

}  // namespace ringio_test
