#pragma once

// Pieces every subcommand of the tool uses.

#include <redisync/client.hpp>

#include "testbed/monotonic.hpp"
#include "testbed/redis_server.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/program_options.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <tuple>
#include <stdexcept>
#include <string>
#include <vector>

namespace redisync::cli {

namespace po = boost::program_options;

// A mistake in how the tool was called (a bad option, URL or number): main prints it on one line
// with the command's name and exits with 2. Any other exception exits with 1.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The client configuration for `url`, with the tool's event printer: warnings and errors on stderr
// with a timestamp once the client has connected (every event, from the start, with -v); a
// usage_error naming the part of the URL that does not parse.
config config_from_url(std::string const& url);

// Waits for the client's first connection. Throws a runtime_error naming the address and the cause
// as soon as an attempt fails (refused, unresolvable, TLS, a wrong password, no answer within the
// connect timeout), having stopped the client: a command pointed at the wrong place says why
// within seconds.
boost::asio::awaitable<void> connect(client& c);

// `value` of option or variable `what`, refused with a usage_error outside [min, max].
std::int64_t in_range(std::string_view what, std::int64_t value, std::int64_t min, std::int64_t max);
// The whole number in environment variable `name`, or `fallback` if unset; checked as in_range.
std::int64_t env_number(char const* name, std::int64_t fallback, std::int64_t min, std::int64_t max);

// Longest hold, lease or wait the tool accepts: longer is a typo.
inline constexpr std::int64_t one_day_ms = 24 * 3600 * 1000;

// The server a command talks to: the one given by URL, or a private redis-server started for the
// command and stopped when this object goes away.
struct redis_target {
  std::unique_ptr<process::redis_server> own;
  std::string url;
};
redis_target open_target(std::optional<std::string> const& url);

using process::monotonic_ns;

// Parses `args` (without the subcommand), with the options every command has (--help, -v); prints
// usage and returns false on --help or an error.
bool parse(std::string_view command, std::string_view summary, po::options_description const& options,
           po::positional_options_description const& positional, std::vector<std::string> const& args,
           po::variables_map& vm, int& exit_code);

// Runs `main` on `ctx` to completion and returns its exit code once `ctx` has no work left; if
// `main` throws, stops `ctx` at once and rethrows it.
int run(boost::asio::io_context& ctx, boost::asio::awaitable<int> main);

// One command through the client; throws on failure or a server error, naming it.
boost::asio::awaitable<resp::value> command(client& c, resp::request req);

// The integer of a reply; 0 for a missing key (a null) or a string that is no integer.
std::int64_t number_in(resp::value const& v);

// One command through the client: its reply, or the error (a server error reply as its code).
boost::asio::awaitable<std::tuple<boost::system::error_code, resp::value>> try_command(client& c, resp::request req);

// Polls `done` (a coroutine that answers true or false) every `every` until it holds or `limit`
// has passed: for what has no event to await, another process or a key on the server.
template <class Condition>
boost::asio::awaitable<bool> poll_until(Condition done, std::chrono::milliseconds limit,
                                        std::chrono::milliseconds every) {
  auto const deadline = std::chrono::steady_clock::now() + limit;
  boost::asio::steady_timer pause{co_await boost::asio::this_coro::executor};
  for (;;) {
    if (co_await done()) co_return true;
    if (std::chrono::steady_clock::now() >= deadline) co_return false;
    pause.expires_after(every);
    co_await pause.async_wait(boost::asio::use_awaitable);
  }
}

}  // namespace redisync::cli
