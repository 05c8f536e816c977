#include <redisync/latch.hpp>

#include "primitives/latch/wait.hpp"
#include "sync/launch.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <boost/asio/system_executor.hpp>

namespace redisync {

namespace asio = boost::asio;
namespace proto = detail::latch_protocol;
using boost::system::error_code;

asio::any_io_executor latch::get_executor() const {
  return core_ ? core_->application_executor() : asio::any_io_executor{asio::system_executor{}};
}

namespace {

using core_type = std::shared_ptr<detail::sync::client_core>;

// The largest count (counts stay exact in Lua numbers).
constexpr std::int64_t most_count = std::int64_t{1} << 40;

// One call of latch_calls.lua that answers a number: set, count-down or count.
asio::awaitable<std::tuple<error_code, std::int64_t>> count_call(core_type core, std::string name, std::string op,
                                                                 std::int64_t n) {
  if (auto ec = detail::sync::validate_name(name)) co_return std::tuple{ec, std::int64_t{0}};
  detail::script_args args{{name}, {op}};
  if (op == "set") {
    if (n < 1 || n > most_count) co_return std::tuple{error_code{error::invalid_argument}, std::int64_t{0}};
    args.argv.push_back(std::to_string(n));
  }
  if (op != "count") args.argv.push_back(proto::channel_of(name));
  co_return co_await detail::run_script_for_integer(core->scripts(), detail::scripts::latch_calls,
                                                    core->router().slot_of(name), args);
}

asio::awaitable<std::tuple<error_code, bool>> try_set(core_type core, std::string name, std::int64_t count) {
  auto [ec, set] = co_await count_call(std::move(core), std::move(name), "set", count);
  co_return std::tuple{ec, !ec && set == 1};
}

}  // namespace

void latch::start_wait(core_ptr const& core, std::string const& name, std::chrono::milliseconds bound,
                       asio::any_completion_handler<wait_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  proto::start_wait(core, {name, bound}, std::move(h));
}

void latch::start_try_set(core_ptr const& core, std::string const& name, std::int64_t count,
                          asio::any_completion_handler<void(error_code, bool)> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), try_set(core, name, count), std::move(h), true);
}

void latch::start_count(core_ptr const& core, std::string const& name, char const* op,
                        asio::any_completion_handler<count_signature> h) {
  if (!core) return detail::sync::fail_at_once(std::move(h), error::empty_handle);
  detail::sync::launch(core->strand(), core->homes(), count_call(core, name, op, 0), std::move(h), true);
}

}  // namespace redisync
