// SPDX-License-Identifier: Apache-2.0
#include "http.hpp"

#include <cctype>

namespace peers::http {
namespace {

// Sent when an HTTP/1.1 client asked for `Connection: close`.
constexpr std::string_view kCloseResponse =
    "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
    "Connection: close\r\n\r\nHello world!";

// Sent when an HTTP/1.0 client asked for `Connection: keep-alive`: HTTP/1.0
// clients (ab -k) only reuse the connection if the response says so.
constexpr std::string_view kKeepAliveResponse =
    "HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: text/plain\r\n"
    "Connection: keep-alive\r\n\r\nHello world!";

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  }
  return true;
}

// Whether `text` contains `word` (lower case), ignoring case.
bool contains_nocase(std::string_view text, std::string_view word) {
  for (std::size_t i = 0; i + word.size() <= text.size(); ++i) {
    if (iequals(text.substr(i, word.size()), word)) return true;
  }
  return false;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

struct Reply {
  std::string_view bytes;
  bool close;
};

// `head` is the request line and the header lines, each ending in "\r\n".
Reply reply_for(std::string_view head) {
  const std::size_t line_end = head.find("\r\n");
  const bool http10 = head.substr(0, line_end).ends_with("HTTP/1.0");
  bool wants_close = false;
  bool wants_keep_alive = false;
  for (std::size_t pos = line_end + 2; pos < head.size();) {
    const std::size_t end = head.find("\r\n", pos);
    const std::string_view field = head.substr(pos, end - pos);
    pos = end + 2;
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos || !iequals(trim(field.substr(0, colon)), "connection")) {
      continue;
    }
    const std::string_view value = field.substr(colon + 1);
    wants_close |= contains_nocase(value, "close");
    wants_keep_alive |= contains_nocase(value, "keep-alive");
  }
  if (http10) {
    if (wants_keep_alive && !wants_close) return {kKeepAliveResponse, false};
    return {kResponse, true};
  }
  if (wants_close) return {kCloseResponse, true};
  return {kResponse, false};
}

}  // namespace

Answer answer_requests(std::string_view in, std::string& out) {
  Answer answer;
  for (;;) {
    const std::string_view rest = in.substr(answer.consumed);
    const std::size_t end = rest.find("\r\n\r\n");
    if (end == std::string_view::npos) {
      answer.close = rest.size() > kMaxRequestBytes;
      return answer;
    }
    answer.consumed += end + 4;
    const Reply reply = reply_for(rest.substr(0, end + 2));
    out.append(reply.bytes);
    if (reply.close) {
      answer.close = true;
      return answer;
    }
  }
}

bool Session::feed(std::string_view data, std::string& out) {
  // Parse straight from `data` unless part of a request is already waiting.
  std::string_view in = data;
  if (!pending_.empty()) {
    pending_.append(data);
    in = pending_;
  }
  const Answer answer = answer_requests(in, out);
  if (answer.close) {
    pending_.clear();
    return true;
  }
  if (pending_.empty()) {
    pending_.assign(data.substr(answer.consumed));
  } else {
    pending_.erase(0, answer.consumed);
  }
  return false;
}

}  // namespace peers::http
