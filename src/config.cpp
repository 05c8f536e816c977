#include <redisync/config.hpp>
#include <redisync/error.hpp>

#include <boost/system/system_error.hpp>
#include <boost/url/parse.hpp>

#include <charconv>

namespace redisync {

config config::from_url(std::string_view url, boost::system::error_code& ec) {
  config out;
  auto const parsed = boost::urls::parse_uri(url);
  if (!parsed) {
    ec = error::invalid_argument;
    return out;
  }
  auto const& u = *parsed;
  if (u.scheme() == "rediss") {
    out.tls = true;
  } else if (u.scheme() != "redis") {
    ec = error::invalid_argument;
    return out;
  }
  if (u.encoded_host().empty()) {
    ec = error::invalid_argument;
    return out;
  }
  out.host = u.host_address();
  if (u.has_port()) {
    std::string_view const p = u.port();
    unsigned v = 0;
    auto const [end, rc] = std::from_chars(p.data(), p.data() + p.size(), v);
    if (rc != std::errc{} || end != p.data() + p.size() || v == 0 || v > 65535) {
      ec = error::invalid_argument;
      return out;
    }
    out.port = static_cast<std::uint16_t>(v);
  }
  if (u.has_userinfo()) {
    out.username = u.user();
    out.password = u.password();
    // redis://:secret@host means "default user, password secret".
    if (!u.has_password()) std::swap(out.username, out.password);
  }
  std::string_view path = u.encoded_path();
  if (!path.empty() && path != "/") {
    path.remove_prefix(1);
    int db = 0;
    auto const [end, rc] = std::from_chars(path.data(), path.data() + path.size(), db);
    if (rc != std::errc{} || end != path.data() + path.size() || db < 0) {
      ec = error::invalid_argument;
      return out;
    }
    out.database = db;
  }
  ec = {};
  return out;
}

config config::from_url(std::string_view url) {
  boost::system::error_code ec;
  config out = from_url(url, ec);
  if (ec) throw boost::system::system_error{ec, "redisync: bad Redis URL"};
  return out;
}

std::string config::problem() const {
  // A longer poll would hold a core for a whole network round trip instead of a loopback one.
  constexpr std::chrono::microseconds max_reply_spin{10000};
  if (watchdog_lease.count() <= 0) return "watchdog_lease must be positive";
  if (watchdog_tick.count() <= 0 || watchdog_tick >= watchdog_lease / 3) {
    return "watchdog_tick must be positive and below a third of watchdog_lease";
  }
  if (wait_poll_cap.count() <= 0) return "wait_poll_cap must be positive";
  if (subscription_linger.count() < 0) return "subscription_linger must not be negative";
  if (connect_timeout.count() <= 0) return "connect_timeout must be positive";
  if (reply_spin.count() < 0 || reply_spin > max_reply_spin) return "reply_spin must be between 0 and 10 ms";
  if (client_name.empty() || client_name.find_first_of(" \r\n") != std::string::npos) {
    return "client_name must be one word";
  }
  if (host.empty()) return "host must not be empty";
  return {};
}

std::string config::endpoint() const {
  bool const ipv6 = host.find(':') != std::string::npos;
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

}  // namespace redisync
