#include "cli/common.hpp"

#include <tool_scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fmt/core.h>

#include <charconv>
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

bool parse(std::string_view command, std::string_view summary, po::options_description const& options,
           po::positional_options_description const& positional, std::vector<std::string> const& args,
           po::variables_map& vm, int& exit_code) {
  po::options_description all;
  all.add_options()("help,h", "show this help");
  all.add(options);
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
  } catch (po::error const& e) {
    std::cerr << "redisync " << command << ": " << e.what() << "\n\n";
    usage(std::cerr);
    exit_code = 2;
    return false;
  }
  return true;
}

config config_from_url(std::string const& url) {
  boost::system::error_code ec;
  auto cfg = config::from_url(url, ec);
  if (ec) throw usage_error{fmt::format("bad Redis URL '{}': {}", url, ec.message())};
  return cfg;
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

asio::awaitable<resp::value> command(client& c, resp::request req) {
  auto [ec, reply] = co_await try_command(c, std::move(req));
  if (ec && reply.text().empty()) throw std::runtime_error{ec.message()};
  if (ec) throw std::runtime_error{fmt::format("{} ({})", ec.message(), reply.text())};
  co_return std::move(reply);
}

asio::awaitable<std::tuple<boost::system::error_code, bool>> fenced_set(client& c, std::string const& fence_key,
                                                                        std::string const& key, std::uint64_t token,
                                                                        std::string const& expected,
                                                                        std::string const& value) {
  auto const& script = detail::scripts::fenced_set;
  std::string const token_text = std::to_string(token);
  for (bool by_digest : {true, false}) {
    resp::request req;
    req.push(by_digest ? "EVALSHA" : "EVAL", by_digest ? script.sha1 : script.source, 2, fence_key, key, token_text,
             expected, value);
    auto [ec, reply] = co_await try_command(c, std::move(req));
    if (ec == error::no_script && by_digest) continue;  // the server lacks it: send it whole
    co_return std::tuple{ec, !ec && reply.integer() == 1};
  }
  co_return std::tuple{boost::system::error_code{error::no_script}, false};
}

}  // namespace redisync::cli
