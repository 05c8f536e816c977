#pragma once

// A redis-server with a TLS port as well as its plain one, and a self-signed certificate for
// 127.0.0.1 made for it with openssl.

#include "process/redis_server.hpp"

#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <memory>

namespace redisync::test {

struct tls_redis {
  std::filesystem::path dir;
  std::uint16_t tls_port = process::free_loopback_port();
  std::unique_ptr<process::redis_server> server;

  tls_redis() {
    dir = std::filesystem::temp_directory_path() / fmt::format("redisync-tls-{}", tls_port);
    std::filesystem::create_directories(dir);
    auto const cmd = fmt::format(
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout {0}/key.pem -out {0}/cert.pem -days 1 "
        "-subj /CN=localhost -addext subjectAltName=IP:127.0.0.1,DNS:localhost >/dev/null 2>&1",
        dir.string());
    BOOST_TEST_REQUIRE(std::system(cmd.c_str()) == 0);
    process::redis_options options;
    options.extra_args = {"--tls-port",          std::to_string(tls_port),
                          "--tls-cert-file",     (dir / "cert.pem").string(),
                          "--tls-key-file",      (dir / "key.pem").string(),
                          "--tls-ca-cert-file",  (dir / "cert.pem").string(),
                          "--tls-auth-clients",  "no"};
    server = std::make_unique<process::redis_server>(options);
  }
  ~tls_redis() {
    server.reset();
    std::filesystem::remove_all(dir);
  }
};

}  // namespace redisync::test
