// SPDX-License-Identifier: Apache-2.0
#include "top/terminal.hpp"

#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <string_view>

namespace top {
namespace {

void write_all(std::string_view s) {
  while (!s.empty()) {
    ssize_t n = ::write(STDOUT_FILENO, s.data(), s.size());
    if (n <= 0) return;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Printable width of `line`: escapes take no room.
std::string cut_to(const std::string& line, std::size_t width) {
  std::string out;
  std::size_t shown = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b') {
      std::size_t end = line.find('m', i);
      if (end == std::string::npos) break;
      out.append(line, i, end - i + 1);
      i = end;
    } else if (shown < width) {
      out += line[i];
      ++shown;
    }
  }
  return out;
}

}  // namespace

terminal::terminal() {
  ::tcgetattr(STDIN_FILENO, &saved_);
  termios raw = saved_;
  raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);  // ISIG stays: Ctrl-C still stops it
  raw.c_cc[VMIN] = 0;
  raw.c_cc[VTIME] = 0;
  ::tcsetattr(STDIN_FILENO, TCSANOW, &raw);
  write_all("\x1b[?1049h\x1b[?25l");  // the alternate screen, no cursor
}

terminal::~terminal() {
  write_all("\x1b[0m\x1b[?25h\x1b[?1049l");
  ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
}

std::optional<char> terminal::read_key(int timeout_ms) {
  pollfd p{STDIN_FILENO, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return std::nullopt;
  char buf[8];
  ssize_t n = ::read(STDIN_FILENO, buf, sizeof buf);
  if (n <= 0) return std::nullopt;
  if (n >= 3 && buf[0] == '\x1b' && buf[1] == '[') {
    if (buf[2] == 'D') return '<';
    if (buf[2] == 'C') return '>';
    return std::nullopt;
  }
  return buf[0];
}

void terminal::draw(const std::vector<std::string>& lines) {
  std::size_t width = 1000;
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) width = ws.ws_col;
  std::string screen = "\x1b[H";
  for (const std::string& line : lines) screen += cut_to(line, width) + "\x1b[K\r\n";
  screen += "\x1b[J";
  write_all(screen);
}

}  // namespace top
