#include "cli/common.hpp"
#include "connection/exec_one.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/system_error.hpp>
#include <fmt/core.h>

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

int run(asio::io_context& ctx, asio::awaitable<int> main) {
  int code = 1;
  asio::co_spawn(ctx, std::move(main), [&](std::exception_ptr e, int result) {
    code = result;
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (std::exception const& ex) {
      std::cerr << "redisync: " << ex.what() << "\n";
      code = 1;
    }
  });
  ctx.run();
  return code;
}

asio::awaitable<resp::value> command(client& c, resp::request req) {
  auto [ec, reply] = co_await detail::exec_one(c.connection(), std::move(req));
  if (ec) throw boost::system::system_error{ec, std::string{reply.text()}};
  co_return std::move(reply);
}

}  // namespace redisync::cli
