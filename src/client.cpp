#include <redisync/client.hpp>

#include "sync/client_core.hpp"
#include "sync/validate.hpp"

#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;

client::client(executor_type ex, config cfg)
    : core_{detail::sync::client_core::create(std::move(ex), std::move(cfg))} {}

client::~client() { stop(); }

void client::start() { core_->start(); }

void client::stop() {
  asio::post(core_->strand(), [core = core_] { core->stop(); });
}

std::string const& client::id() const noexcept { return core_->id(); }

owner client::new_owner() { return owner{core_, core_->id() + ":" + std::to_string(core_->next_owner_number())}; }

owner client::make_owner(std::string id) {
  if (auto ec = detail::sync::validate_owner(id)) throw boost::system::system_error{ec, "redisync: invalid owner id"};
  return owner{core_, std::move(id)};
}

client_stats client::stats() const { return core_->stats(); }

std::string client::last_connect_failure() const { return core_->router().last_failure(); }

client::executor_type client::get_executor() const noexcept { return core_->strand(); }

config const& client::cfg() const noexcept { return core_->cfg(); }

void client::start_run(core_ptr const& core, asio::any_completion_handler<void(error_code)> h) {
  core->run(std::move(h));
}

void client::start_exec(core_ptr const& core, resp::request req,
                        asio::any_completion_handler<void(error_code, response)> h) {
  // A request names no key the router could read: on one server every slot is the same.
  core->router().exec(0, detail::io::outgoing::from(std::move(req)), {}, std::move(h));
}

void client::start_flush(core_ptr const& core, asio::any_completion_handler<void(error_code)> h) {
  detail::pending_handler<void(error_code)> handler{std::move(h), core->completion_executor()};
  asio::post(core->strand(), [core, handler = std::move(handler)]() mutable {
    core->subscriptions().flush([handler = std::make_shared<decltype(handler)>(std::move(handler))](error_code ec) {
      handler->complete(ec);
    });
  });
}

error_code check_replies(response const& replies) noexcept { return detail::io::check_replies(replies); }

}  // namespace redisync
