#include <redisync/config.hpp>
#include <redisync/error.hpp>
#include <redisync/lock.hpp>

#include "address.hpp"

#include <boost/system/system_error.hpp>
#include <boost/url/parse.hpp>

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>

namespace redisync {

namespace {

constexpr std::string_view schemes = "redis, rediss, redis-cluster, rediss-cluster, redis-sentinel or rediss-sentinel";

// Fills `out` from a URL of one host (the first seed's, for a cluster or Sentinel set, whose mode
// `out` already has); the part that is wrong, or empty.
std::string parse_one_host(std::string_view url, config& out) {
  auto const parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    return url.find("://") == std::string_view::npos ? fmt::format("it has no scheme ({})", schemes)
                                                     : "it is not a valid URL";
  }
  auto const& u = *parsed;
  if (u.scheme() == "rediss") {
    out.tls = true;
  } else if (u.scheme() != "redis") {
    return fmt::format("the scheme must be {}, not {}", schemes, std::string_view{u.scheme()});
  }
  if (u.encoded_host().empty()) return "it names no host";
  out.host = u.host_address();
  if (u.has_port()) {
    std::string_view const p = u.port();
    auto const port = detail::parse_port(p);
    if (!port) return "the port must be a number from 1 to 65535, not '" + std::string{p} + "'";
    out.port = *port;
  }
  if (u.has_userinfo()) {
    out.username = u.user();
    out.password = u.password();
    // redis://:secret@host means "default user, password secret".
    if (!u.has_password()) std::swap(out.username, out.password);
  }
  std::string_view path = u.encoded_path();
  if (out.mode == topology::sentinel) {
    if (path.size() <= 1) return "it names no master: redis-sentinel://host:port[,host:port...]/MASTER_NAME";
    out.sentinel_master_name = std::string{u.path()}.substr(1);
    if (out.sentinel_master_name.find('/') != std::string::npos) {
      return "the master name '" + out.sentinel_master_name + "' must not contain '/'";
    }
  } else if (out.mode == topology::cluster && !path.empty() && path != "/") {
    return "a cluster has database 0 only: remove '" + std::string{path} + "'";
  } else if (!path.empty() && path != "/") {
    path.remove_prefix(1);
    int db = 0;
    auto const [end, rc] = std::from_chars(path.data(), path.data() + path.size(), db);
    if (rc != std::errc{} || end != path.data() + path.size() || db < 0) {
      return "the database must be a number from 0 up, not '" + std::string{path} + "'";
    }
    out.database = db;
  }
  if (u.has_fragment()) return "it has a fragment, which redisync does not read";
  for (auto const& param : u.params()) {
    if (param.key == "tls_ca_file") {
      out.tls_ca_file = param.value;
    } else if (param.key == "tls_cert_file") {
      out.tls_cert_file = param.value;
    } else if (param.key == "tls_key_file") {
      out.tls_key_file = param.value;
    } else if (param.key == "tls_verify") {
      if (param.value != "yes" && param.value != "no") return "tls_verify must be yes or no, not '" + param.value + "'";
      out.tls_verify_peer = param.value == "yes";
    } else if (out.mode == topology::sentinel && param.key == "sentinel_password") {
      out.sentinel_password = param.value;
      continue;
    } else if (out.mode == topology::sentinel && param.key == "sentinel_username") {
      out.sentinel_username = param.value;
      continue;
    } else {
      return "it has the query parameter '" + param.key +
             "', which redisync does not know (tls_ca_file, tls_cert_file, tls_key_file, tls_verify" +
             (out.mode == topology::sentinel ? ", sentinel_username, sentinel_password)" : ")");
    }
    if (!out.tls) return "the query parameter '" + param.key + "' is for TLS: use rediss://";
  }
  return {};
}

// Fills `out` from `url`; the part that is wrong, or empty. A cluster's or Sentinel set's URL
// lists its hosts, comma-separated: each is checked alone, and the rest of the URL with the first.
std::string parse_url(std::string_view url, config& out) {
  auto const colon = url.find("://");
  std::string_view const scheme = url.substr(0, colon == std::string_view::npos ? 0 : colon);
  bool const tls = scheme.starts_with("rediss");
  if (scheme.ends_with("-cluster")) {
    out.mode = topology::cluster;
  } else if (scheme.ends_with("-sentinel")) {
    out.mode = topology::sentinel;
  } else {
    return parse_one_host(url, out);
  }
  std::string_view const bare = scheme.substr(0, scheme.find('-'));
  if (bare != "redis" && bare != "rediss") return fmt::format("the scheme must be {}, not {}", schemes, scheme);
  std::string_view rest = url.substr(colon + 3);
  std::size_t const authority_end = std::min(rest.find_first_of("/?#"), rest.size());
  std::string_view authority = rest.substr(0, authority_end);
  std::string_view const tail = rest.substr(authority_end);
  std::string_view userinfo;
  if (auto const at = authority.rfind('@'); at != std::string_view::npos) {
    userinfo = authority.substr(0, at + 1);
    authority.remove_prefix(at + 1);
  }
  std::string const plain_scheme = tls ? "rediss://" : "redis://";
  while (!authority.empty() || out.seeds.empty()) {
    std::string_view const host = authority.substr(0, authority.find(','));
    authority.remove_prefix(std::min(host.size() + 1, authority.size()));
    if (host.empty()) return "it names an empty host in its list (host:port,host:port...)";
    config one;
    if (auto const problem = parse_one_host(plain_scheme + std::string{host}, one); !problem.empty()) {
      return "host '" + std::string{host} + "': " + problem;
    }
    out.seeds.push_back({one.host, one.port});
  }
  node_address const& first = out.seeds.front();
  std::string const first_host = first.host.find(':') != std::string::npos ? "[" + first.host + "]" : first.host;
  return parse_one_host(plain_scheme + std::string{userinfo} + first_host + ":" + std::to_string(first.port) +
                            std::string{tail},
                        out);
}

// The TLS settings that cannot work: a file that cannot be read, half of a client certificate.
std::string tls_problem(config const& c) {
  bool const files = !c.tls_ca_file.empty() || !c.tls_cert_file.empty() || !c.tls_key_file.empty();
  if (!c.tls && (files || !c.tls_verify_peer)) return "TLS settings are given but tls is off (use rediss://)";
  if (c.tls_cert_file.empty() != c.tls_key_file.empty()) return "tls_cert_file and tls_key_file go together";
  for (auto const& [name, path] : {std::pair<char const*, std::string const&>{"tls_ca_file", c.tls_ca_file},
                                   {"tls_cert_file", c.tls_cert_file}, {"tls_key_file", c.tls_key_file}}) {
    if (path.empty()) continue;
    std::ifstream file{path};
    if (!file) return fmt::format("{} '{}' cannot be read: {}", name, path, std::strerror(errno));
  }
  return {};
}

}  // namespace

config config::from_url(std::string_view url, boost::system::error_code& ec) {
  config out;
  ec = parse_url(url, out).empty() ? boost::system::error_code{} : make_error_code(error::invalid_argument);
  return out;
}

config config::from_url(std::string_view url) {
  config out;
  if (auto const problem = parse_url(url, out); !problem.empty()) {
    throw boost::system::system_error{make_error_code(error::invalid_argument),
                                      "redisync: bad Redis URL '" + std::string{url} + "': " + problem};
  }
  return out;
}

std::string config::url_problem(std::string_view url) {
  config ignored;
  return parse_url(url, ignored);
}

std::string config::problem() const {
  // A longer poll would hold a core for a whole network round trip instead of a loopback one.
  constexpr std::chrono::microseconds max_reply_spin{10000};
  if (watchdog_lease < shortest_lease) {
    return fmt::format("watchdog_lease must be at least {} ms", shortest_lease.count());
  }
  if (watchdog_tick.count() <= 0 || watchdog_tick >= watchdog_lease / 3) {
    return "watchdog_tick must be positive and below a third of watchdog_lease";
  }
  if (wait_poll_cap.count() <= 0) return "wait_poll_cap must be positive";
  if (fair_waiter_liveness <= watchdog_tick * 6) return "fair_waiter_liveness must be above 6 watchdog ticks";
  if (subscription_linger.count() < 0) return "subscription_linger must not be negative";
  if (connect_timeout.count() <= 0) return "connect_timeout must be positive";
  if (connection_wait_limit.count() <= 0) return "connection_wait_limit must be positive";
  if (reply_spin.count() < 0 || reply_spin > max_reply_spin) return "reply_spin must be between 0 and 10 ms";
  if (client_name.empty() || client_name.find_first_of(" \r\n") != std::string::npos) {
    return "client_name must be one word";
  }
  if (host.empty()) return "host must not be empty";
  for (auto const& seed : seeds) {
    if (seed.host.empty() || seed.port == 0) return "every seed needs a host and a port";
  }
  if (mode == topology::sentinel && sentinel_master_name.empty()) return "sentinel_master_name must be set";
  if (mode == topology::cluster && database != 0) return "a cluster has database 0 only";
  if (wait_replicas > 0 && wait_replicas_timeout.count() <= 0) {
    return "wait_replicas_timeout must be positive (WAIT 0 would wait for ever)";
  }
  return tls_problem(*this);
}

std::vector<node_address> config::seed_nodes() const {
  if (!seeds.empty()) return seeds;
  return {{host, port}};
}

config config::for_node(node_address const& at) const {
  config c = *this;
  c.host = at.host;
  c.port = at.port;
  return c;
}

config config::for_sentinel(node_address const& at) const {
  config c = for_node(at);
  c.username = sentinel_username;
  c.password = sentinel_password;
  c.database = 0;
  return c;
}

std::string config::endpoint() const { return detail::address_text({host, port}); }

}  // namespace redisync
