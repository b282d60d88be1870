// SPDX-License-Identifier: Apache-2.0
#include "http_date.hpp"

#include <time.h>

#include <cstring>

namespace ringio::http::detail {
namespace {

constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
constexpr const char* long_days[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

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

int day_of_week(std::string_view s, const char* const (&names)[7]) noexcept {
  for (int i = 0; i < 7; ++i)
    if (s == names[i]) return i;
  return -1;
}

int month_of(std::string_view s) noexcept {
  for (int i = 0; i < 12; ++i)
    if (s == months[i]) return i;
  return -1;
}

// "08:49:37"
bool time_of_day(std::string_view s, std::tm& tm) noexcept {
  return s.size() == 8 && s[2] == ':' && s[5] == ':' && number(s.substr(0, 2), tm.tm_hour) &&
         number(s.substr(3, 2), tm.tm_min) && number(s.substr(6, 2), tm.tm_sec);
}

// The time of `tm` (time of day already set) on the given date, if the fields are in range.
std::optional<std::time_t> at(std::tm tm, int mday, int mon, int year) noexcept {
  if (mon < 0 || mday < 1 || mday > 31 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60) return std::nullopt;
  tm.tm_mday = mday;
  tm.tm_mon = mon;
  tm.tm_year = year - 1900;
  return timegm(&tm);
}

// "Sun, 06 Nov 1994 08:49:37 GMT"
std::optional<std::time_t> parse_imf_fixdate(std::string_view s) noexcept {
  std::tm tm{};
  int mday = 0, year = 0;
  if (day_of_week(s.substr(0, 3), days) < 0 || s.substr(3, 2) != ", " || !number(s.substr(5, 2), mday) || s[7] != ' ' ||
      s[11] != ' ' || !number(s.substr(12, 4), year) || s[16] != ' ' || !time_of_day(s.substr(17, 8), tm) ||
      s.substr(25) != " GMT")
    return std::nullopt;
  return at(tm, mday, month_of(s.substr(8, 3)), year);
}

// "Sun Nov  6 08:49:37 1994" (the day of the month is 2DIGIT or SP DIGIT)
std::optional<std::time_t> parse_asctime(std::string_view s) noexcept {
  std::tm tm{};
  int mday = 0, year = 0;
  std::string_view day = s[8] == ' ' ? s.substr(9, 1) : s.substr(8, 2);
  if (day_of_week(s.substr(0, 3), days) < 0 || s[3] != ' ' || s[7] != ' ' || !number(day, mday) || s[10] != ' ' ||
      !time_of_day(s.substr(11, 8), tm) || s[19] != ' ' || !number(s.substr(20, 4), year))
    return std::nullopt;
  return at(tm, mday, month_of(s.substr(4, 3)), year);
}

// "Sunday, 06-Nov-94 08:49:37 GMT". RFC 9110 5.6.7: a two-digit year that would be
// more than 50 years after `now` is in the past century.
std::optional<std::time_t> parse_rfc850(std::string_view s, std::time_t now) noexcept {
  auto comma = s.find(',');
  if (comma == std::string_view::npos || day_of_week(s.substr(0, comma), long_days) < 0) return std::nullopt;
  std::string_view d = s.substr(comma + 1);  // " 06-Nov-94 08:49:37 GMT"
  std::tm tm{};
  int mday = 0, yy = 0;
  if (d.size() != 23 || d[0] != ' ' || !number(d.substr(1, 2), mday) || d[3] != '-' || d[7] != '-' ||
      !number(d.substr(8, 2), yy) || d[10] != ' ' || !time_of_day(d.substr(11, 8), tm) || d.substr(19) != " GMT")
    return std::nullopt;
  std::tm limit{};
  gmtime_r(&now, &limit);
  limit.tm_year += 50;
  const int latest = limit.tm_year + 1900;
  const int year = latest - (latest - yy) % 100;  // the latest year with these two digits
  const int mon = month_of(d.substr(4, 3));
  auto t = at(tm, mday, mon, year);
  if (t && *t > timegm(&limit)) t = at(tm, mday, mon, year - 100);  // later in that same year
  return t;
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

std::optional<std::time_t> parse_http_date(std::string_view s, std::time_t now) noexcept {
  if (s.size() == http_date_size && s[3] == ',') return parse_imf_fixdate(s);
  if (s.size() == 24) return parse_asctime(s);
  return parse_rfc850(s, now);
}

std::optional<std::time_t> parse_http_date(std::string_view s) noexcept {
  return parse_http_date(s, std::time(nullptr));
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
