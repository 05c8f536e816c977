#include "primitives/rw_lock/protocol.hpp"

#include "primitives/lock_protocol/acquire.hpp"
#include "primitives/lock_protocol/protocol.hpp"
#include "primitives/rw_lock/acquire.hpp"
#include "routing/hash_slot.hpp"
#include "sync/undo.hpp"

#include <scripts.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>

namespace redisync::detail::rw_protocol {

namespace {

// The key of an owner's first read level, `{name}:<owner>:rwlock_timeout:1`.
std::string first_level_key(std::string_view base, std::string_view owner) {
  constexpr std::string_view suffix{":rwlock_timeout:1"};
  std::string out;
  out.reserve(base.size() + 1 + owner.size() + suffix.size());
  out.append(base).append(":").append(owner).append(suffix);
  return out;
}

class read_renewal_kind final : public sync::renewal_kind {
 public:
  script const& renewal_script() const override { return scripts::rw_renew_reads; }
  script_args renewal_args(std::span<std::shared_ptr<sync::hold_state>> holds,
                           std::chrono::milliseconds lease) const override {
    // A lock's readers side by side: its keys go once, and the script reads their counts at once.
    std::ranges::stable_sort(holds, {}, [](auto const& h) -> std::string_view { return h->name; });
    script_args args;
    args.argv.reserve(3 * holds.size() + 2);
    args.argv.push_back(std::to_string(lease.count()));
    // Looking for dead readers costs a renewal a third more: one call in `sweep_every` does.
    args.argv.push_back(calls_.fetch_add(1, std::memory_order_relaxed) % sweep_every == 0 ? "1" : "");
    for (std::size_t i = 0; i < holds.size();) {
      auto const& name = holds[i]->name;
      std::size_t end = i + 1;
      while (end < holds.size() && holds[end]->name == name) ++end;
      auto base = timeout_base_of(name);
      args.argv.push_back(std::to_string(end - i));
      for (auto k = i; k < end; ++k) args.argv.push_back(holds[k]->owner);
      for (; i < end; ++i) args.argv.push_back(first_level_key(base, holds[i]->owner));
      args.keys.push_back(name);
      args.keys.push_back(std::move(base));
    }
    return args;
  }

 private:
  static constexpr std::uint64_t sweep_every = 8;
  mutable std::atomic<std::uint64_t> calls_{0};  // (one kind serves every client of the process)
};

read_renewal_kind const renewal_of_reads;

bool is_writer(std::string_view owner) { return owner.ends_with(":write"); }

// A decimal number at the front of `text`, followed by `separator`, which is taken off with it.
template <class Number>
std::optional<Number> take_number(std::string_view& text, char separator) {
  Number n{};
  auto const [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc{} || end == text.data() + text.size() || *end != separator) return std::nullopt;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()) + 1);
  return n;
}

}  // namespace

std::optional<grant_message> read_grant(std::string_view message) {
  constexpr std::string_view prefix{"grant "};
  if (!message.starts_with(prefix)) return std::nullopt;
  message.remove_prefix(prefix.size());
  auto const token = take_number<std::uint64_t>(message, ' ');
  if (!token || !is_writer(message)) return std::nullopt;
  return grant_message{*token, message};
}

std::optional<writer_mark> read_mark(std::string_view after_client) {
  auto const lease = take_number<std::int64_t>(after_client, ':');
  if (!lease || !is_writer(after_client)) return std::nullopt;
  return writer_mark{*lease, after_client};
}

std::string channel_of(std::string_view name) { return routing::key_beside("redisson_rwlock:", name); }

std::string marks_key_of(std::string_view name) {
  return routing::key_beside("redisync_rwlock_writers:", name);
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

script_args release_args(sync::client_core& core, lock_kind side, std::string const& name, std::string const& field,
                         std::chrono::milliseconds lease, std::string retry, bool may_grant) {
  std::string keep = core.cfg().persistent_fencing_counter ? "1" : "";
  std::string alive_prefix = core.liveness().alive_prefix(core.router().slot_of(name));
  std::vector<std::string> keys{name, timeout_base_of(name), marks_key_of(name), lock_protocol::token_key_of(name)};
  if (side == lock_kind::read) {
    return {std::move(keys),
            {"read-release", field, channel_of(name), std::move(retry), std::move(keep), may_grant ? "1" : "",
             std::move(alive_prefix)}};
  }
  return {std::move(keys),
          {"write-release", field, std::to_string(lease.count()), channel_of(name), std::move(retry), std::move(keep),
           may_grant ? "1" : "", std::move(alive_prefix)}};
}

bool writer_waits_in(sync::waiter_queue const& queue) { return queue.first_kind_waits(); }

script_args force_args(std::string const& name) {
  return {{name, timeout_base_of(name), marks_key_of(name)}, {"force", channel_of(name)}};
}

sync::renewal_kind const& read_renewal() { return renewal_of_reads; }

void on_message(sync::waiter_queue& queue, std::string_view message) {
  if (auto const grant = read_grant(message)) {
    // Every waiter of a read-write lock's channel is its acquire.
    if (auto w = queue.find_named(grant->writer)) return static_cast<rw_acquire&>(*w).take_grant();
    // The lock is that writer's: nobody else need try, unless it is dead and takes nothing.
    return queue.tell_passed_over();
  }
  queue.wake_first_kind_or_all();
}

// Readers that an earlier grant asked to try need no second asking: walking the whole crowd on
// every grant made a drain of 9,000 readers quadratic.
void let_readers_share(sync::waiter_queue& queue) {
  if (queue.policy_mark == queue.changes) return;
  queue.policy_mark = queue.changes;
  queue.wake_until_first_kind();
}

boost::asio::awaitable<void> leave_marks(std::shared_ptr<sync::client_core> core, std::string name,
                                         std::string writer, std::chrono::milliseconds lease, bool release_grant) {
  auto const& liveness = core->liveness();
  script_args args{{marks_key_of(name), name, timeout_base_of(name), lock_protocol::token_key_of(name)},
                   {"leave", writer, std::to_string(lease.count()), std::to_string(liveness.liveness().count()),
                    channel_of(name), core->cfg().persistent_fencing_counter ? "1" : "", release_grant ? "1" : "",
                    core->id(), liveness.alive_prefix(core->router().slot_of(name))}};
  co_await sync::undo_with(std::move(core), scripts::rw_calls, std::move(args), std::move(name),
                           std::move(writer), lease);
}

}  // namespace redisync::detail::rw_protocol
