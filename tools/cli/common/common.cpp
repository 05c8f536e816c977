#include "cli/common/common.hpp"


#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <charconv>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <iostream>

namespace redisync::cli {

namespace asio = boost::asio;

redis_target open_target(std::optional<std::string> const& url) {
  if (url) return {nullptr, *url};
  auto server = std::make_unique<process::redis_server>();
  std::string u = server->url();
  return {std::move(server), std::move(u)};
}

namespace {

bool verbose = false;  // -v: every event of every client, not only warnings once connected

// --tls-*: the TLS settings of a rediss:// URL, which they override.
struct tls_flags {
  std::string ca_file, cert_file, key_file;
  bool insecure = false;
} tls;

std::string timestamp() {
  auto const now = std::chrono::system_clock::now();
  auto const t = std::chrono::system_clock::to_time_t(now);
  auto const ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&t, &utc);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday,
                     utc.tm_hour, utc.tm_min, utc.tm_sec, ms);
}

void print_event(event const& e) {
  std::string line = fmt::format("{} {} {}", timestamp(), to_string(e.level), to_string(e.kind));
  if (!e.lock.empty()) line += fmt::format(" lock {}", e.lock);
  if (!e.owner.empty()) line += fmt::format(" owner {}", e.owner);
  if (!e.detail.empty()) line += fmt::format(": {}", e.detail);
  if (e.error) line += fmt::format(" ({})", e.error.message());
  std::cerr << line << std::endl;
}

}  // namespace

bool parse(std::string_view command, std::string_view summary, po::options_description const& options,
           po::positional_options_description const& positional, std::vector<std::string> const& args,
           po::variables_map& vm, int& exit_code) {
  po::options_description all;
  all.add_options()("help,h", "show this help")("verbose,v", "print every event of the client on stderr");
  po::options_description tls_options{"TLS (with a rediss:// URL; the same as its tls_ query parameters)"};
  tls_options.add_options()
    ("tls-ca-file", po::value(&tls.ca_file), "PEM file of the CAs that sign the server's certificate")
    ("tls-cert-file", po::value(&tls.cert_file), "PEM client certificate, for a server with tls-auth-clients")
    ("tls-key-file", po::value(&tls.key_file), "PEM private key of --tls-cert-file")
    ("tls-insecure", po::bool_switch(&tls.insecure), "do not verify the server's certificate");
  all.add(options);
  all.add(tls_options);
  auto usage = [&](std::ostream& os) {
    os << "usage: redisync " << command << " [options]\n" << summary << "\n\n" << all << "\n";
  };
  try {
    po::store(po::command_line_parser(args).options(all).positional(positional).run(), vm);
    if (vm.count("help")) {
      usage(std::cout);
      exit_code = 0;
      return false;
    }
    po::notify(vm);
    verbose = vm.count("verbose") > 0;
  } catch (po::error const& e) {
    std::cerr << "redisync " << command << ": " << e.what() << "\n\n";
    usage(std::cerr);
    exit_code = 2;
    return false;
  }
  return true;
}

config config_from_url(std::string const& url) {
  if (auto const problem = config::url_problem(url); !problem.empty()) {
    throw usage_error{fmt::format("bad Redis URL '{}': {}", url, problem)};
  }
  auto cfg = config::from_url(url);
  bool const flags = !tls.ca_file.empty() || !tls.cert_file.empty() || !tls.key_file.empty() || tls.insecure;
  if (flags && !cfg.tls) throw usage_error{fmt::format("--tls-* options need a rediss:// URL, not '{}'", url)};
  if (!tls.ca_file.empty()) cfg.tls_ca_file = tls.ca_file;
  if (!tls.cert_file.empty()) cfg.tls_cert_file = tls.cert_file;
  if (!tls.key_file.empty()) cfg.tls_key_file = tls.key_file;
  if (tls.insecure) cfg.tls_verify_peer = false;
  if (auto const problem = cfg.problem(); !problem.empty()) throw usage_error{problem};
  // Before the first connection, connect() tells what went wrong in one line.
  cfg.on_event = [connected = false](event const& e) mutable {
    if (e.kind == event_kind::connected) connected = true;
    if (verbose || (connected && e.level >= event_level::warning)) print_event(e);
  };
  return cfg;
}

asio::awaitable<void> connect(client& c) {
  auto const limit = c.cfg().connect_timeout + std::chrono::seconds{2};
  auto const deadline = std::chrono::steady_clock::now() + limit;
  asio::steady_timer pause{co_await asio::this_coro::executor};
  for (;;) {
    if (c.metrics().connects > 0) co_return;
    std::string why = c.last_connect_failure();
    if (why.empty() && std::chrono::steady_clock::now() >= deadline) {
      why = fmt::format("{}: no connection within {} ms", c.cfg().endpoint(), limit.count());
    }
    if (!why.empty()) {
      c.stop();  // the command ends here; nothing may keep its io_context running
      throw std::runtime_error{"cannot connect to Redis at " + why};
    }
    // The first attempt's outcome is a few ms away for a refused port, up to the connect timeout
    // for a silent server: look again soon.
    pause.expires_after(std::chrono::milliseconds{5});
    co_await pause.async_wait(asio::use_awaitable);
  }
}

std::int64_t in_range(std::string_view what, std::int64_t value, std::int64_t min, std::int64_t max) {
  if (value < min || value > max) {
    throw usage_error{fmt::format("{} must be between {} and {}, not {}", what, min, max, value)};
  }
  return value;
}

std::int64_t env_number(char const* name, std::int64_t fallback, std::int64_t min, std::int64_t max) {
  char const* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  std::string_view const v{text};
  std::int64_t value = 0;
  auto const [end, rc] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (rc != std::errc{} || end != v.data() + v.size()) {
    throw usage_error{fmt::format("{}={} is not a whole number", name, v)};
  }
  return in_range(name, value, min, max);
}

int run(asio::io_context& ctx, asio::awaitable<int> main) {
  int code = 1;
  std::exception_ptr failure;
  asio::co_spawn(ctx, std::move(main), [&](std::exception_ptr e, int result) {
    code = result;
    failure = e;
    // A command that failed may leave a client running (the demo's outlives its coroutine): the
    // failure must end the tool, not wait for work that never ends.
    if (e) ctx.stop();
  });
  ctx.run();
  if (failure) std::rethrow_exception(failure);
  return code;
}

asio::awaitable<std::tuple<boost::system::error_code, resp::value>> try_command(client& c, resp::request req) {
  auto [ec, replies] = co_await c.exec(std::move(req), asio::as_tuple(asio::use_awaitable));
  if (!ec && replies.size() != 1) ec = error::unexpected_reply;
  if (ec) co_return std::tuple{ec, resp::value{}};
  co_return std::tuple{check_replies(replies), std::move(replies.front())};
}

std::int64_t number_in(resp::value const& v) {
  std::int64_t n = 0;
  if (!v.is_null()) v.as_integer(n);
  return n;
}

asio::awaitable<resp::value> command(client& c, resp::request req) {
  auto [ec, reply] = co_await try_command(c, std::move(req));
  if (ec && reply.text().empty()) throw std::runtime_error{ec.message()};
  if (ec) throw std::runtime_error{fmt::format("{} ({})", ec.message(), reply.text())};
  co_return std::move(reply);
}

}  // namespace redisync::cli
