// SPDX-License-Identifier: Apache-2.0
// test_certs — a throw-away PKI made with the `openssl` command at first use: a test CA,
// a server certificate for "localhost" and 127.0.0.1, one for "other.test" (SNI), and a
// second CA with its own "localhost" certificate that nothing trusts.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace ringio_test {

struct test_certs {
  std::string dir;
  std::string ca, server_cert, server_key, other_cert, other_key, rogue_ca, rogue_cert, rogue_key;
  bool ok = false;

  static const test_certs& get() {
    static const test_certs certs;
    return certs;
  }
  ~test_certs() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }

 private:
  test_certs() {
    char tmpl[] = "/tmp/ringio-tls-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) return;
    dir = tmpl;
    ca = dir + "/ca.pem";
    server_cert = dir + "/localhost.pem";
    server_key = dir + "/localhost.key";
    other_cert = dir + "/other.pem";
    other_key = dir + "/other.key";
    rogue_ca = dir + "/rogue-ca.pem";
    rogue_cert = dir + "/rogue.pem";
    rogue_key = dir + "/rogue.key";
    ok = make_ca("ca") && make_ca("rogue-ca") && make_leaf("ca", "localhost", "DNS:localhost,IP:127.0.0.1") &&
         make_leaf("ca", "other", "DNS:other.test") && make_leaf("rogue-ca", "rogue", "DNS:localhost,IP:127.0.0.1");
  }

  bool run(const std::string& cmd) const {
    std::string full = "cd " + dir + " && " + cmd + " >/dev/null 2>&1";
    return std::system(full.c_str()) == 0;
  }
  bool make_ca(const std::string& name) const {
    return run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + name + ".key -out " +
               name + ".pem -days 2 -subj /CN=ringio-" + name);
  }
  bool make_leaf(const std::string& issuer, const std::string& name, const std::string& san) const {
    std::ofstream(dir + "/" + name + ".ext") << "subjectAltName=" << san << "\nbasicConstraints=CA:FALSE\n";
    std::string cn = name == "other" ? "other.test" : "localhost";
    return run("openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " + name + ".key -out " + name +
               ".csr -subj /CN=" + cn) &&
           run("openssl x509 -req -in " + name + ".csr -CA " + issuer + ".pem -CAkey " + issuer +
               ".key -CAcreateserial -days 2 -out " + name + ".pem -extfile " + name + ".ext");
  }
};

}  // namespace ringio_test
