#include <redisync/client.hpp>

#include "lock/client_core.hpp"

#include <boost/asio/detached.hpp>
#include <boost/system/system_error.hpp>

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// A longer poll would hold a core for a whole network round trip instead of a loopback one.
constexpr std::chrono::microseconds max_reply_spin{10000};

config validated(config cfg) {
  bool const ok = cfg.watchdog_lease.count() > 0 && cfg.watchdog_tick.count() > 0 &&
                  cfg.watchdog_tick < cfg.watchdog_lease / 3 && cfg.wait_poll_cap.count() > 0 &&
                  cfg.subscription_linger.count() >= 0 && cfg.connect_timeout.count() > 0 &&
                  cfg.reply_spin.count() >= 0 && cfg.reply_spin <= max_reply_spin &&
                  !cfg.client_name.empty() &&
                  cfg.client_name.find_first_of(" \r\n") == std::string::npos;
  if (!ok) {
    throw boost::system::system_error{make_error_code(error::invalid_argument),
                                      "redisync: invalid client configuration"};
  }
  return cfg;
}

}  // namespace

client::client(executor_type ex, config cfg)
    : core_{std::make_shared<detail::client_core>(std::move(ex), validated(std::move(cfg)))} {
  core_->init();
}

client::~client() { stop(); }

void client::start() { core_->conn.run(asio::detached); }

void client::stop() {
  asio::post(core_->strand(), [core = core_] { core->stop(); });
}

std::string const& client::id() const noexcept { return core_->id; }

owner client::new_owner() {
  return owner{core_, core_->id + ":" + std::to_string(core_->next_owner++)};
}

owner client::make_owner(std::string id) {
  if (auto ec = detail::validate_owner(id)) {
    throw boost::system::system_error{ec, "redisync: invalid owner id"};
  }
  return owner{core_, std::move(id)};
}

client_stats client::stats() const {
  return {core_->holds_count, core_->waiters_count, core_->subs.count(), core_->renewals,
          core_->renewal_batches, core_->handoffs};
}

redisync::connection& client::connection() const noexcept { return core_->conn; }

client::executor_type client::get_executor() const noexcept { return core_->conn.get_executor(); }

config const& client::cfg() const noexcept { return core_->conn.cfg(); }

void client::start_flush(asio::any_completion_handler<void(error_code)> h) {
  auto flush = [](std::shared_ptr<detail::client_core> core) -> asio::awaitable<std::tuple<error_code>> {
    co_return std::tuple{co_await core->subs.flush()};
  };
  core_->launch(flush(core_), std::move(h), false);
}

}  // namespace redisync
