#include "sync/undo.hpp"

#include "script/runner.hpp"

namespace redisync::detail::sync {

namespace {

bool freed_something(resp::value const& reply) {
  if (reply.kind() == resp::type::integer) return reply.integer() >= 0;
  auto const e = reply.elements();
  return reply.kind() == resp::type::array && e.size() == 2 && e[0].kind() == resp::type::integer &&
         e[0].integer() == 0;
}

}  // namespace

boost::asio::awaitable<void> undo_with(std::shared_ptr<client_core> core, script const& s, script_args args,
                                       std::string name, std::string owner, std::chrono::milliseconds lease,
                                       std::string again) {
  auto const slot = core->router().slot_of(name);
  auto const give_up = clock_type::now() + lease;
  for (;;) {
    auto [ec, reply] = co_await run_script(core->scripts(), s, slot, args);
    bool const unknown = ec == error::ambiguous || ec == error::not_connected;
    if (unknown && !core->stopped() && clock_type::now() < give_up) continue;
    if (!ec && freed_something(reply)) {
      if (again.empty()) {
        core->emit(event_kind::grant_undone, event_level::info, name, owner);
      } else {
        core->emit(event_kind::release_made_again, event_level::warning, name, owner, {}, again);
      }
    }
    co_return;
  }
}

}  // namespace redisync::detail::sync
