// SPDX-License-Identifier: Apache-2.0
// A real browser against http_server --root: headless Chromium loads tests/http/site
// (HTML, a stylesheet, a deferred script and a PNG) and the script writes what it
// found into the DOM, which Chromium dumps; over HTTP, then over HTTPS (a throw-away
// certificate that Chromium accepts by its key's hash). Skipped only when chromium is
// missing.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/child_process.hpp"

using namespace ringio_test;
using namespace std::chrono_literals;

namespace {

std::string find_chromium() {
  for (const char* p : {"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"})
    if (::access(p, X_OK) == 0) return p;
  return {};
}

// Loads the test site from http_server started with `server_args` (after --port 0
// --root) at `scheme`://127.0.0.1:port/, with `browser_args`; checks what it rendered.
void render_site(const std::vector<std::string>& server_args, const std::string& scheme,
                 const std::string& browser_args) {
  std::string chromium = find_chromium();
  if (chromium.empty()) GTEST_SKIP() << "chromium is not installed (scripts/install-deps.sh test installs it)";

  std::vector<std::string> argv{HTTP_SERVER_PATH, "--port", "0", "--root", HTTP_SITE_DIR};
  argv.insert(argv.end(), server_args.begin(), server_args.end());
  child_process srv(argv);
  auto line = srv.read_line(10s);
  ASSERT_TRUE(line) << srv.stderr_text();
  auto pos = line->find("127.0.0.1:");
  ASSERT_NE(pos, std::string::npos) << *line;
  std::string url = scheme + "://127.0.0.1:" + std::to_string(std::stoi(line->substr(pos + 10))) + "/";

  char tmpl[] = "/tmp/ringio-chromium-XXXXXX";
  std::string profile = ::mkdtemp(tmpl);
  // Through sh so that Chromium's chatty stderr goes nowhere (a full pipe would stall it).
  std::string cmd = "exec '" + chromium +
                    "' --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking"
                    " --disable-component-update --disable-sync --disable-quic " +
                    browser_args + " --user-data-dir='" + profile + "' --virtual-time-budget=10000 --dump-dom '" + url +
                    "' 2>/dev/null";
  child_process browser({"/bin/sh", "-c", cmd});
  std::string dom;
  auto deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline) {
    auto l = browser.read_line(5s);
    if (l) dom += *l + "\n";
    else if (browser.wait(0ms)) break;
  }
  auto status = browser.wait(10s);
  std::filesystem::remove_all(profile);
  EXPECT_EQ(status, std::optional<int>(0));
  EXPECT_NE(dom.find("<title>ringio http_server test site</title>"), std::string::npos) << dom;
  EXPECT_NE(dom.find("<p id=\"result\">css:ok js:ok img:4x3</p>"), std::string::npos)
      << "the stylesheet, the script or the image did not load:\n"
      << dom;

  srv.signal(SIGTERM);
  EXPECT_EQ(srv.wait(10s), std::optional<int>(0)) << srv.stderr_text();
}

TEST(HttpServerBrowser, ChromiumRendersThePageWithItsCssScriptAndImage) { render_site({}, "http", ""); }

TEST(HttpServerBrowser, ChromiumRendersThePageOverHttps) {
  if (::access("/usr/bin/openssl", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/openssl to make a certificate";
  char tmpl[] = "/tmp/ringio-https-XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string make = "cd " + dir +
                     " && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout key.pem"
                     " -out cert.pem -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1"
                     " && openssl x509 -pubkey -noout -in cert.pem | openssl pkey -pubin -outform der"
                     " | openssl dgst -sha256 -binary | base64 > spki.txt";
  ASSERT_EQ(std::system(make.c_str()), 0);
  std::string spki;
  std::getline(std::ifstream(dir + "/spki.txt"), spki);
  ASSERT_FALSE(spki.empty());
  render_site({"--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"}, "https",
              "--ignore-certificate-errors-spki-list=" + spki);
  std::filesystem::remove_all(dir);
}

}  // namespace
