#include <redisync/semaphore.hpp>

#include "primitives/semaphore/acquire.hpp"
#include "primitives/semaphore/release.hpp"
#include "sync/launch.hpp"
#include "sync/replicas.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/system_executor.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::semaphore_protocol;
using boost::system::error_code;

asio::any_io_executor semaphore::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

using core_type = std::shared_ptr<detail::sync::client_core>;

// One call of semaphore_calls.lua that answers a number: set, add, available or drain.
asio::awaitable<std::tuple<error_code, std::int64_t>> count_call(core_type core, std::string owner, std::string name,
                                                                 std::string op, std::int64_t n) {
  if (auto ec = detail::sync::validate_name(name)) co_return std::tuple{ec, std::int64_t{0}};
  bool const takes_number = op == "set" || op == "add";
  if (takes_number && (n < -proto::most_permits || n > proto::most_permits || (op == "set" && n < 0))) {
    co_return std::tuple{error_code{error::invalid_argument}, std::int64_t{0}};
  }
  detail::script_args args{{name}, {op}};
  if (takes_number) {
    args.argv.push_back(std::to_string(n));
    args.argv.push_back(proto::channel_of(name));
  }
  auto [ec, count] = co_await detail::run_script_for_integer(core->scripts(), detail::scripts::semaphore_calls,
                                                             core->router().slot_of(name), args);
  // Drained permits are this owner's, to give back.
  if (!ec && op == "drain" && count > 0) core->books<proto::semaphore_books>().taken[detail::sync::hold_key(owner, name)] += count;
  co_return std::tuple{ec, count};
}

asio::awaitable<std::tuple<error_code, bool>> try_set(core_type core, std::string name, std::int64_t n) {
  auto [ec, set] = co_await count_call(std::move(core), {}, std::move(name), "set", n);
  co_return std::tuple{ec, !ec && set == 1};
}

// What an acquire answered: permits taken (acquire: always; try_acquire: when it says so).
bool taken() { return true; }
bool taken(bool got) { return got; }

// Permits taken whose grant too few replicas acknowledged (config::wait_replicas) go back.
asio::awaitable<void> give_back(core_type core, std::string name, std::string owner, std::int64_t k) {
  auto const release = [&](auto h) {
    proto::start_release(core, name, owner, k, asio::any_completion_handler<void(error_code)>{std::move(h)});
  };
  auto token = asio::as_tuple(asio::use_awaitable);
  co_await asio::async_initiate<decltype(token), void(error_code)>(release, token);
}

template <class Signature>
void start(core_type const& core, std::string owner, std::string name, std::int64_t k,
           std::optional<std::chrono::milliseconds> wait, asio::any_completion_handler<Signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  auto const granted = [](auto&... answer) { return taken(answer...); };
  auto const give_back_taken = [core, name, owner, k](auto&...) { return give_back(core, name, owner, k); };
  // Made, not assigned: Asio 1.26's any_completion_handler move assignment recurses without end.
  asio::any_completion_handler<Signature> confirmed =
      detail::sync::replicated(core, name, std::move(h), granted, give_back_taken);
  proto::start_acquire(core, {std::move(name), std::move(owner), k, wait}, std::move(confirmed));
}

}  // namespace

void semaphore::start_acquire(core_ptr const& core, std::string owner, std::string name, std::int64_t k,
                              std::optional<std::chrono::milliseconds> wait,
                              asio::any_completion_handler<acquire_signature> h) {
  start(core, std::move(owner), std::move(name), k, wait, std::move(h));
}

void semaphore::start_acquire(core_ptr const& core, std::string owner, std::string name, std::int64_t k,
                              std::optional<std::chrono::milliseconds> wait,
                              asio::any_completion_handler<try_acquire_signature> h) {
  start(core, std::move(owner), std::move(name), k, wait, std::move(h));
}

void semaphore::start_release(core_ptr const& core, std::string const& owner, std::string const& name, std::int64_t k,
                              asio::any_completion_handler<void(error_code)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  proto::start_release(core, name, owner, k, std::move(h));
}

void semaphore::start_try_set(core_ptr const& core, std::string const& name, std::int64_t n,
                              asio::any_completion_handler<void(error_code, bool)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), try_set(core, name, n), std::move(h), true);
}

void semaphore::start_count(core_ptr const& core, std::string const& owner, std::string const& name, char const* op,
                            std::int64_t n, asio::any_completion_handler<count_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), count_call(core, owner, name, op, n), std::move(h), true);
}

}  // namespace redisync
