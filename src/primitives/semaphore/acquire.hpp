#pragma once

// Acquiring permits of a Redisson RSemaphore (semaphore_calls.lua): the core's acquire loop with no
// hold at all (the semaphore has no owners on the server; this client counts what each owner took,
// so that it gives back no more). Waiters sleep until a message says permits are free (each one
// wakes that many waiters here), or a poll: Redisson's permits have no lease to wait for.

#include "sync/acquire_op.hpp"
#include "sync/client_core.hpp"

#include <boost/asio/any_completion_handler.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

namespace redisync::detail::semaphore_protocol {

// What a client keeps of Redisson semaphores (sync::client_core::books), on the strand: the
// permits each owner took and has not given back (by hold_key: an owner gives back no more than it
// took), and per semaphore the ids of calls whose outcome it learned (they leave its trace with its
// next call there).
struct semaphore_books {
  std::unordered_map<std::string, std::int64_t> taken;
  std::unordered_map<std::string, std::vector<std::string>> learned;
};

using acquire_signature = void(io::error_code);
using try_acquire_signature = void(io::error_code, bool);

std::string channel_of(std::string_view name);
// The trace of this client's calls on `name` (semaphore_calls.lua).
std::string trace_key_of(std::string_view name, std::string_view client_id);
// How long a trace lasts after its last write: a call whose outcome was lost is asked again or
// undone within it (a retry waits no longer for a connection).
inline constexpr std::chrono::milliseconds trace_lifetime{60'000};
// The end of a traced call's arguments: the ids of calls on `name` whose outcome this client has
// learned (a count, then the ids), which leave the trace with it and the client's books.
void append_learned(sync::client_core& core, std::string const& name, std::vector<std::string>& argv);
// This client learned the outcome of its call `id` on `name`.
void learned(sync::client_core& core, std::string const& name, std::string id);
// The most permits one call takes or gives (counts stay exact in Lua numbers).
inline constexpr std::int64_t most_permits = std::int64_t{1} << 40;

struct acquire_args {
  std::string name;
  std::string owner;
  std::int64_t count = 1;
  std::optional<std::chrono::milliseconds> wait;  // nothing: until taken
};

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<acquire_signature> h);
void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   boost::asio::any_completion_handler<try_acquire_signature> h);

class semaphore_acquire final : public sync::acquire_op {
 public:
  using handler_type = std::variant<pending_handler<acquire_signature>, pending_handler<try_acquire_signature>>;
  semaphore_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler);

 private:
  io::error_code check_arguments() const override;
  bool prepare() override { return false; }
  std::optional<primitive> counted_as() const override { return primitive::semaphore; }
  script const& attempt_script() const override;
  sync::message_policy policy() const override;
  io::outgoing attempt(bool retry, bool by_digest) override;
  void undo_late_grant(io::error_code ec, io::response const& replies, std::function<void()> then) override;
  outcome read(io::error_code ec, io::response& replies) override;
  void undo(std::function<void()> then) override;
  void complete(io::error_code ec, bool held) override;

  std::shared_ptr<sync::client_core> core_;
  std::int64_t count_;
  std::string trace_;  // this client's trace key
  std::string id_;     // this acquire's id in it
  std::optional<std::chrono::milliseconds> wait_;
  std::optional<sync::clock_type::time_point> first_unknown_;  // the send of an attempt whose outcome was lost
  handler_type handler_;
  sync::work_ticket in_progress_;
};

}  // namespace redisync::detail::semaphore_protocol
