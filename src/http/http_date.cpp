#include "http_date.hpp"

#include <time.h>

#include <cstring>

namespace ringio::http::detail {
namespace {

constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                  "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

void two(char* p, int v) noexcept {
  p[0] = static_cast<char>('0' + v / 10);
  p[1] = static_cast<char>('0' + v % 10);
}

bool number(std::string_view s, int& out) noexcept {
  out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    out = out * 10 + (c - '0');
  }
  return !s.empty();
}

struct date_cache {
  std::time_t second = -1;
  char text[http_date_size];
};
thread_local date_cache cache;

}  // namespace

void format_http_date(std::time_t t, char* out) noexcept {
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::memcpy(out, days[tm.tm_wday], 3);
  std::memcpy(out + 3, ", ", 2);
  two(out + 5, tm.tm_mday);
  out[7] = ' ';
  std::memcpy(out + 8, months[tm.tm_mon], 3);
  out[11] = ' ';
  int year = tm.tm_year + 1900;
  two(out + 12, year / 100);
  two(out + 14, year % 100);
  out[16] = ' ';
  two(out + 17, tm.tm_hour);
  out[19] = ':';
  two(out + 20, tm.tm_min);
  out[22] = ':';
  two(out + 23, tm.tm_sec);
  std::memcpy(out + 25, " GMT", 4);
}

std::optional<std::time_t> parse_http_date(std::string_view s) noexcept {
  // "Sun, 06 Nov 1994 08:49:37 GMT"
  if (s.size() != http_date_size || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT")
    return std::nullopt;
  std::tm tm{};
  int mon = -1;
  for (int i = 0; i < 12; ++i)
    if (s.substr(8, 3) == months[i]) mon = i;
  int year = 0;
  if (mon < 0 || !number(s.substr(5, 2), tm.tm_mday) || !number(s.substr(12, 4), year) ||
      !number(s.substr(17, 2), tm.tm_hour) || !number(s.substr(20, 2), tm.tm_min) ||
      !number(s.substr(23, 2), tm.tm_sec))
    return std::nullopt;
  if (tm.tm_mday < 1 || tm.tm_mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) return std::nullopt;
  tm.tm_mon = mon;
  tm.tm_year = year - 1900;
  return timegm(&tm);
}

std::string_view current_http_date() noexcept {
  timespec now{};
  clock_gettime(CLOCK_REALTIME_COARSE, &now);  // vDSO, no syscall
  if (now.tv_sec != cache.second) {
    cache.second = now.tv_sec;
    format_http_date(now.tv_sec, cache.text);
  }
  return {cache.text, http_date_size};
}

}  // namespace ringio::http::detail
