#include "sync/replicas.hpp"

#include "routing/exec_one.hpp"

#include <fmt/core.h>

namespace redisync::detail::sync {

boost::asio::awaitable<io::error_code> confirm_replicas(client_core& core, routing::slot_type slot,
                                                        std::string_view name) {
  auto const& cfg = core.cfg();
  if (cfg.wait_replicas == 0) co_return io::error_code{};
  resp::request req;
  req.push("WAIT", static_cast<std::int64_t>(cfg.wait_replicas), cfg.wait_replicas_timeout.count());
  auto [ec, reply] = co_await routing::exec_one(core.router(), slot, std::move(req));
  std::int64_t acknowledged = 0;
  if (!ec && reply.as_integer(acknowledged) && acknowledged >= static_cast<std::int64_t>(cfg.wait_replicas)) {
    co_return io::error_code{};
  }
  core.emit(event_kind::not_replicated, event_level::warning, name, {}, ec,
            fmt::format("{} of {} replicas acknowledged within {} ms", acknowledged, cfg.wait_replicas,
                        cfg.wait_replicas_timeout.count()));
  co_return io::error_code{error::not_replicated};
}

}  // namespace redisync::detail::sync
