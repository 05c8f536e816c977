#pragma once

// Pieces every subcommand of the tool uses.

#include <redisync/client.hpp>

#include "process/monotonic.hpp"
#include "process/redis_server.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/program_options.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace redisync::cli {

namespace po = boost::program_options;

// The server a command talks to: the one given by URL, or a private redis-server started for the
// command and stopped when this object goes away.
struct redis_target {
  std::unique_ptr<process::redis_server> own;
  std::string url;
};
redis_target open_target(std::optional<std::string> const& url);

using process::monotonic_ns;

// Parses `args` (without the subcommand); prints usage and returns false on --help or an error.
bool parse(std::string_view command, std::string_view summary, po::options_description const& options,
           po::positional_options_description const& positional, std::vector<std::string> const& args,
           po::variables_map& vm, int& exit_code);

// Runs `main` on `ctx` to completion and returns its exit code.
int run(boost::asio::io_context& ctx, boost::asio::awaitable<int> main);

// One command on the client's connection; throws system_error on failure or a server error.
boost::asio::awaitable<resp::value> command(client& c, resp::request req);

}  // namespace redisync::cli
