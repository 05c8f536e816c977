#include "primitives/rw_lock/protocol.hpp"

#include "primitives/lock/protocol.hpp"

#include <scripts.hpp>

namespace redisync::detail::rw_protocol {

namespace {

class read_renewal_kind final : public sync::renewal_kind {
 public:
  script const& renewal_script() const override { return scripts::rw_renew_reads; }
  script_args renewal_args(std::span<std::shared_ptr<sync::hold_state> const> holds,
                           std::chrono::milliseconds lease) const override {
    script_args args;
    args.keys.reserve(2 * holds.size());
    args.argv.reserve(holds.size() + 1);
    args.argv.push_back(std::to_string(lease.count()));
    for (auto const& hold : holds) {
      args.keys.push_back(hold->name);
      args.keys.push_back(timeout_base_of(hold->name));
      args.argv.push_back(hold->owner);
    }
    return args;
  }
};

read_renewal_kind const renewal_of_reads;

bool is_writer(std::string_view owner) { return owner.ends_with(":write"); }

bool writer_waits(sync::waiter const& w) { return is_writer(w.owner()); }

}  // namespace

std::string channel_of(std::string_view name) { return lock_protocol::prefixed("redisson_rwlock:", name); }

std::string marks_key_of(std::string_view name) {
  return lock_protocol::prefixed("redisync_rwlock_writers:", name);
}

std::string timeout_base_of(std::string_view name) {
  if (name.find('{') != std::string_view::npos) return std::string{name};
  std::string out;
  out.reserve(name.size() + 2);
  out += '{';
  out.append(name);
  out += '}';
  return out;
}

std::string field_of(lock_kind side, std::string_view owner) {
  std::string out{owner};
  if (side == lock_kind::write) out += ":write";
  return out;
}

script_args release_args(lock_kind side, std::string const& name, std::string const& field,
                         std::chrono::milliseconds lease, std::optional<std::int64_t> retry_of) {
  std::string retry = retry_of ? std::to_string(*retry_of) : "";
  if (side == lock_kind::read) {
    return {{name, timeout_base_of(name)}, {"read-release", field, channel_of(name), std::move(retry)}};
  }
  return {{name, timeout_base_of(name)},
          {"write-release", field, std::to_string(lease.count()), channel_of(name), std::move(retry)}};
}

script_args force_args(std::string const& name) {
  return {{name, timeout_base_of(name), marks_key_of(name)}, {"force", channel_of(name)}};
}

sync::renewal_kind const& read_renewal() { return renewal_of_reads; }

void on_message(sync::waiter_queue& queue, std::string_view) { queue.wake_first_or_all(writer_waits); }

void let_readers_share(sync::waiter_queue& queue) { queue.wake_until(writer_waits); }

boost::asio::awaitable<void> leave_marks(std::shared_ptr<sync::client_core> core, std::string name,
                                         std::string writer) {
  script_args args{{marks_key_of(name)}, {"leave", std::move(writer)}};
  co_await run_script(core->scripts(), scripts::rw_calls, core->router().slot_of(name), args);
}

}  // namespace redisync::detail::rw_protocol
