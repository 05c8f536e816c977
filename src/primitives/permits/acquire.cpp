#include "primitives/permits/acquire.hpp"

#include "primitives/permits/protocol.hpp"

#include <scripts.hpp>

#include <array>

namespace redisync::detail::permits_protocol {

namespace asio = boost::asio;
using io::error_code;


void start_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::acquire_signature> h) {
  sync::launch_acquire<permits_acquire>(std::move(core), std::move(a), std::move(h), count);
}

void start_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core, lock_protocol::acquire_args a,
                   asio::any_completion_handler<lock_protocol::try_acquire_signature> h) {
  sync::launch_acquire<permits_acquire>(std::move(core), std::move(a), std::move(h), count);
}

script_args release_args(std::string_view name, std::string_view id) {
  return {{std::string{name}, leases_key_of(name), holders_key_of(name)},
          {"release", std::string{id}, channel_of(name)}};
}

permits_acquire::permits_acquire(std::int64_t count, std::shared_ptr<sync::client_core> core,
                                 lock_protocol::acquire_args a, handler_type handler)
    : lock_acquire{channel_of(a.name), std::move(core), std::move(a), std::move(handler)}, count_{count} {}

error_code permits_acquire::check_arguments() const {
  if (count_ < 1 || count_ > most_permits) return error::invalid_argument;
  return lock_acquire::check_arguments();
}

script const& permits_acquire::attempt_script() const { return scripts::permits_calls; }

io::outgoing permits_acquire::attempt(bool retry, bool by_digest) {
  auto const& name = args().name;
  std::string const leases = leases_key_of(name), holders = holders_key_of(name), token = token_key_of(name);
  std::array<std::string_view, 4> const keys{name, leases, holders, token};
  std::string const count = std::to_string(count_), lease_ms = std::to_string(lease().count());
  bool const keep = core()->cfg().persistent_fencing_counter;
  std::array<std::string_view, 6> const argv{retry ? "retry-acquire" : "acquire", args().owner, count, lease_ms,
                                             args().channel, keep ? "1" : ""};
  return script_call(scripts::permits_calls, args().slot, keys, argv, by_digest);
}

permits_acquire::outcome permits_acquire::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) return {outcome_kind::unknown};
  if (ec) return {outcome_kind::failed, ec};
  if (replies.size() != 1) return {outcome_kind::unreadable};
  auto const& reply = replies[0];
  if (reply.is_error()) return {outcome_kind::failed, error_from_server_text(reply.text())};
  auto const answer = read_acquire_reply(reply);
  if (!answer.read) return {outcome_kind::unreadable};
  if (!answer.granted) return {outcome_kind::busy, {}, std::chrono::milliseconds{answer.bound}};
  // A grant past its deadline is never returned (see lock_acquire::read).
  if (too_late(sent())) return {outcome_kind::unknown};
  grant(answer.token, count_, sent());
  return {outcome_kind::granted};
}

bool permits_acquire::take_permits(std::uint64_t token, sync::clock_type::time_point sent) {
  if (too_late(sent)) return false;
  grant(token, count_, sent);
  return true;
}

bool permits_acquire::may_grant(resp::value const& reply) const {
  auto const answer = read_acquire_reply(reply);
  return !answer.read || answer.granted;
}

void permits_acquire::undo(std::function<void()> then) {
  core()->spawn_cleanup(lock_protocol::undo_with(core(), scripts::permits_calls, release_args(args().name, args().owner),
                                                 args().name, args().owner, lease()),
                        std::move(then));
}

}  // namespace redisync::detail::permits_protocol
