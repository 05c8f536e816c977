#include <redisync/permits.hpp>

#include "primitives/permits/acquire.hpp"
#include "primitives/permits/protocol.hpp"
#include "sync/launch.hpp"
#include "sync/replicas.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/system_executor.hpp>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::permits_protocol;
using boost::system::error_code;

asio::any_io_executor permits::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

// One call of permits_calls.lua that answers a number: set, add or available.
asio::awaitable<std::tuple<error_code, std::int64_t>> count_call(std::shared_ptr<detail::sync::client_core> core,
                                                                 std::string name, std::string op,
                                                                 std::optional<std::int64_t> n) {
  if (auto ec = detail::sync::validate_name(name)) co_return std::tuple{ec, std::int64_t{0}};
  if (n && (*n < -proto::most_permits || *n > proto::most_permits)) {
    co_return std::tuple{error_code{error::invalid_argument}, std::int64_t{0}};
  }
  detail::script_args args{{name, proto::leases_key_of(name), proto::holders_key_of(name)}, {op}};
  if (n) args.argv.push_back(std::to_string(*n));
  args.argv.push_back(proto::channel_of(name));
  co_return co_await detail::run_script_for_integer(core->scripts(), detail::scripts::permits_calls,
                                                    core->router().slot_of(name), args);
}

asio::awaitable<std::tuple<error_code, bool>> try_set(std::shared_ptr<detail::sync::client_core> core, std::string name,
                                                      std::int64_t n) {
  if (n < 0) co_return std::tuple{error_code{error::invalid_argument}, false};
  auto [ec, set] = co_await count_call(std::move(core), std::move(name), "set", n);
  co_return std::tuple{ec, !ec && set == 1};
}

template <class Signature>
void start(std::shared_ptr<detail::sync::client_core> const& core, std::string const& owner, std::string name,
           std::int64_t k, std::optional<std::chrono::milliseconds> lease,
           std::optional<std::chrono::milliseconds> wait, bool fair, asio::any_completion_handler<Signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  // Made, not assigned: Asio 1.26's any_completion_handler move assignment recurses without end.
  asio::any_completion_handler<Signature> confirmed = detail::sync::replicated_hold(core, name, std::move(h));
  proto::start_acquire(k, fair, core, {std::move(name), proto::new_permit_id(owner), lease, wait},
                       std::move(confirmed));
}

}  // namespace

void permits::start_acquire(core_ptr const& core, std::string const& owner, std::string name, std::int64_t k,
                            duration lease, duration wait, bool fair, asio::any_completion_handler<acquire_signature> h) {
  start(core, owner, std::move(name), k, lease, wait, fair, std::move(h));
}

void permits::start_acquire(core_ptr const& core, std::string const& owner, std::string name, std::int64_t k,
                            duration lease, duration wait, bool fair,
                            asio::any_completion_handler<try_acquire_signature> h) {
  start(core, owner, std::move(name), k, lease, wait, fair, std::move(h));
}

void permits::start_try_set(core_ptr const& core, std::string const& name, std::int64_t n,
                            asio::any_completion_handler<void(error_code, bool)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), try_set(core, name, n), std::move(h), true);
}

void permits::start_count(core_ptr const& core, std::string const& name, char const* op, std::int64_t n,
                          asio::any_completion_handler<count_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  std::optional<std::int64_t> const argument = std::string_view{op} == "add" ? std::optional{n} : std::nullopt;
  detail::sync::launch(core->strand(), core->homes(), count_call(core, name, op, argument), std::move(h), true);
}

}  // namespace redisync
