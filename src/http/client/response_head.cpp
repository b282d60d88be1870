// SPDX-License-Identifier: Apache-2.0
// The strict response-head parser of the client.
#include "ringio/http/response_head.hpp"

#include "ringio/http/client_error.hpp"

namespace ringio::http {
namespace {

bool is_tchar(char c) noexcept {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  switch (c) {
    case '!':
    case '#':
    case '$':
    case '%':
    case '&':
    case '\'':
    case '*':
    case '+':
    case '-':
    case '.':
    case '^':
    case '_':
    case '`':
    case '|':
    case '~':
      return true;
    default:
      return false;
  }
}

// Field values: visible ASCII, obs-text, SP and HTAB; no CR, LF, NUL or other controls.
bool valid_value(std::string_view v) noexcept {
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string_view trim(std::string_view v) noexcept {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  return v;
}

// One Content-Length field value, which may be a list of equal numbers ("5, 5").
bool parse_length_list(std::string_view v, std::uint64_t& out, bool& seen) noexcept {
  for (;;) {
    const std::size_t comma = v.find(',');
    std::string_view item = trim(v.substr(0, comma));
    if (item.empty() || item.size() > 18) return false;
    std::uint64_t n = 0;
    for (char c : item) {
      if (c < '0' || c > '9') return false;
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (seen && n != out) return false;
    out = n;
    seen = true;
    if (comma == std::string_view::npos) return true;
    v.remove_prefix(comma + 1);
  }
}

// Counts the transfer codings of a Transfer-Encoding value (empty list elements
// skipped) and whether each is exactly "chunked".
void count_codings(std::string_view v, int& codings, bool& all_chunked) noexcept {
  for (;;) {
    const std::size_t comma = v.find(',');
    const std::string_view item = trim(v.substr(0, comma));
    if (!item.empty()) {
      ++codings;
      if (!iequals(item, "chunked")) all_chunked = false;
    }
    if (comma == std::string_view::npos) return;
    v.remove_prefix(comma + 1);
  }
}

bool has_token(std::string_view v, std::string_view token) noexcept {
  while (!v.empty()) {
    const std::size_t comma = v.find(',');
    if (iequals(trim(v.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace

result<std::size_t> parse_response_head(std::string_view data, bool head_request, response_head& out,
                                        std::size_t max_bytes) noexcept {
  auto fail = [](client_errc e) { return unexpected(make_error_code(e)); };
  const std::size_t end = data.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    // A bare LF ending a line is not accepted: find one early so garbage fails fast.
    const std::size_t lf = data.find('\n');
    if (lf != std::string_view::npos && (lf == 0 || data[lf - 1] != '\r')) return fail(client_errc::bad_header);
    if (data.size() >= 5 && !data.starts_with("HTTP/")) return fail(client_errc::bad_status_line);
    if (data.size() > max_bytes) return fail(client_errc::head_too_large);
    return std::size_t{0};
  }
  if (end + 4 > max_bytes) return fail(client_errc::head_too_large);
  std::string_view head = data.substr(0, end + 2);  // every line with its CRLF
  out = response_head{};

  // Status line: HTTP/1.x SP 3DIGIT SP reason
  const std::size_t line_end = head.find("\r\n");
  std::string_view line = head.substr(0, line_end);
  if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') || line[8] != ' ')
    return fail(client_errc::bad_status_line);
  out.version_minor = line[7] - '0';
  int status = 0;
  for (int i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') return fail(client_errc::bad_status_line);
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100) return fail(client_errc::bad_status_line);
  if (line.size() > 12) {
    if (line[12] != ' ') return fail(client_errc::bad_status_line);
    out.reason = line.substr(13);
    if (!valid_value(out.reason)) return fail(client_errc::bad_status_line);
  }
  out.status = status;

  bool length_seen = false;
  int codings = 0;
  bool all_chunked = true;
  bool transfer_encoding = false;
  bool close = false;
  bool keep_alive_token = false;
  std::string_view rest = head.substr(line_end + 2);
  while (!rest.empty()) {
    const std::size_t eol = rest.find("\r\n");
    std::string_view field = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    if (field.empty() || field.front() == ' ' || field.front() == '\t')
      return fail(client_errc::bad_header);  // obs-fold
    if (field.find('\n') != std::string_view::npos || field.find('\r') != std::string_view::npos)
      return fail(client_errc::bad_header);
    const std::size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0) return fail(client_errc::bad_header);
    std::string_view name = field.substr(0, colon);
    for (char c : name)
      if (!is_tchar(c)) return fail(client_errc::bad_header);
    std::string_view value = trim(field.substr(colon + 1));
    if (!valid_value(value)) return fail(client_errc::bad_header);
    if (!out.headers.push({name, value})) return fail(client_errc::head_too_large);
    if (iequals(name, "content-length")) {
      if (!parse_length_list(value, out.content_length, length_seen)) return fail(client_errc::bad_content_length);
    } else if (iequals(name, "transfer-encoding")) {
      if (value.empty()) return fail(client_errc::bad_transfer_encoding);
      transfer_encoding = true;
      count_codings(value, codings, all_chunked);  // over every field
    } else if (iequals(name, "connection")) {
      if (has_token(value, "close")) close = true;
      if (has_token(value, "keep-alive")) keep_alive_token = true;
    }
  }
  if (transfer_encoding && out.version_minor == 0) return fail(client_errc::bad_transfer_encoding);

  out.keep_alive = out.version_minor == 1 ? !close : (keep_alive_token && !close);
  if (head_request || (status >= 100 && status < 200) || status == 204 || status == 304) {
    out.framing = body_framing::none;
  } else if (transfer_encoding) {
    // Content-Length is ignored next to Transfer-Encoding, and the connection cannot be
    // trusted for another request.
    // Only chunked alone can be decoded: a body in any other coding (gzip, ...) would
    // be handed over still encoded, or framed by the close.
    if (codings != 1 || !all_chunked) return fail(client_errc::bad_transfer_encoding);
    if (length_seen) out.keep_alive = false;
    out.framing = body_framing::chunked;
  } else if (length_seen) {
    out.framing = out.content_length == 0 ? body_framing::none : body_framing::content_length;
  } else {
    out.framing = body_framing::until_close;
    out.keep_alive = false;
  }
  return end + 4;
}

}  // namespace ringio::http
