#pragma once

// A redis-server with a TLS port as well as its plain one, and certificates made for it with
// openssl (test_certificates, also for a cluster that serves TLS): a private CA (ca.pem), the server's certificate for 127.0.0.1 signed by it, a client
// certificate signed by it (client.pem, client.key), and a client certificate of another,
// self-signed, CA (stranger.pem, stranger.key). With `auth_clients`, the server asks every
// client for a certificate of its CA (Redis's default, tls-auth-clients yes).

#include "testbed/redis_server.hpp"

#include <boost/test/unit_test.hpp>
#include <fmt/core.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

namespace redisync::test {

// Certificates made with openssl in a directory of their own, removed with it.
struct test_certificates {
  std::filesystem::path dir;

  explicit test_certificates(std::string const& tag) {
    dir = std::filesystem::temp_directory_path() / fmt::format("redisync-tls-{}", tag);
    std::filesystem::create_directories(dir);
    std::ofstream{dir / "server.ext"} << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
    auto const key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto const made = fmt::format(
        "cd {0} && openssl req -x509 {1} -keyout ca.key -out ca.pem -days 1 -subj /CN=redisync-test-ca && "
        "openssl req {1} -keyout server.key -out server.csr -subj /CN=localhost && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem -days 1 "
        "-extfile server.ext && "
        "openssl req {1} -keyout client.key -out client.csr -subj /CN=redisync-client && "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out client.pem -days 1 && "
        "openssl req -x509 {1} -keyout stranger.key -out stranger.pem -days 1 -subj /CN=stranger",
        dir.string(), key);
    BOOST_TEST_REQUIRE(std::system(("(" + made + ") >/dev/null 2>&1").c_str()) == 0);
  }
  ~test_certificates() { std::filesystem::remove_all(dir); }
  test_certificates(test_certificates const&) = delete;
  test_certificates& operator=(test_certificates const&) = delete;

  std::string file(std::string_view name) const { return (dir / name).string(); }
};

struct tls_redis {
  std::uint16_t tls_port = process::free_loopback_port();
  test_certificates certificates{std::to_string(tls_port)};
  std::unique_ptr<process::redis_server> server;  // (goes before its certificates)

  explicit tls_redis(bool auth_clients = false) {
    process::redis_options options;
    options.extra_args = {"--tls-port",         std::to_string(tls_port),
                          "--tls-cert-file",    file("server.pem"),
                          "--tls-key-file",     file("server.key"),
                          "--tls-ca-cert-file", file("ca.pem"),
                          "--tls-auth-clients", auth_clients ? "yes" : "no"};
    server = std::make_unique<process::redis_server>(options);
  }

  std::string file(std::string_view name) const { return certificates.file(name); }
  // rediss:// to the TLS port, with `query` ("tls_ca_file=...") if not empty.
  std::string url(std::string const& query = {}) const {
    return fmt::format("rediss://127.0.0.1:{}{}{}", tls_port, query.empty() ? "" : "/?", query);
  }
};

}  // namespace redisync::test
