#include "primitives/semaphore/acquire.hpp"

#include "routing/hash_slot.hpp"
#include "sync/launch_acquire.hpp"
#include "sync/undo.hpp"
#include "sync/validate.hpp"

#include <scripts.hpp>

#include <algorithm>
#include <iterator>

namespace redisync::detail::semaphore_protocol {

namespace asio = boost::asio;
using io::error_code;

std::string channel_of(std::string_view name) { return routing::key_beside("redisson_sc:", name); }

std::string trace_key_of(std::string_view name, std::string_view client_id) {
  return routing::key_beside("redisync_sc_trace:", name) + ":" + std::string{client_id};
}

// Few enough that a call stays small; a client learns one outcome per call it makes, so the list
// keeps up.
constexpr std::size_t most_forgotten_per_call = 32;

void append_learned(sync::client_core& core, std::string const& name, std::vector<std::string>& argv) {
  auto& books = core.books<semaphore_books>().learned;
  auto const found = books.find(name);
  if (found == books.end()) {
    argv.emplace_back("0");
    return;
  }
  auto& ids = found->second;
  auto const n = std::min(ids.size(), most_forgotten_per_call);
  argv.push_back(std::to_string(n));
  std::move(ids.end() - static_cast<std::ptrdiff_t>(n), ids.end(), std::back_inserter(argv));
  ids.resize(ids.size() - n);
  if (ids.empty()) books.erase(found);
}

// Ids of semaphores this client no longer calls would stay in its books: past this many semaphores
// the books are cleared (the traces expire by themselves; only their early cleanup is lost).
constexpr std::size_t most_semaphores_in_books = 1024;

void learned(sync::client_core& core, std::string const& name, std::string id) {
  auto& books = core.books<semaphore_books>().learned;
  if (books.size() >= most_semaphores_in_books && !books.contains(name)) books.clear();
  books[name].push_back(std::move(id));
}

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<acquire_signature> h) {
  sync::launch_acquire<semaphore_acquire>(std::move(core), std::move(a), std::move(h));
}

void start_acquire(std::shared_ptr<sync::client_core> core, acquire_args a,
                   asio::any_completion_handler<try_acquire_signature> h) {
  sync::launch_acquire<semaphore_acquire>(std::move(core), std::move(a), std::move(h));
}

semaphore_acquire::semaphore_acquire(std::shared_ptr<sync::client_core> core, acquire_args a, handler_type handler)
    : acquire_op{core,
                 {.name = a.name,
                  .owner = a.owner,
                  .channel = channel_of(a.name),
                  .slot = core->router().slot_of(a.name),
                  .deadline = a.wait ? std::optional{sync::clock_type::now() + *a.wait} : std::nullopt,
                  .once = a.wait && a.wait->count() == 0,
                  .recheck = std::chrono::milliseconds{1000}}},
      core_{std::move(core)},
      count_{a.count},
      trace_{trace_key_of(a.name, core_->id())},
      id_{std::to_string(core_->next_owner_number())},
      wait_{a.wait},
      handler_{std::move(handler)},
      in_progress_{core_->track()} {}

error_code semaphore_acquire::check_arguments() const {
  if (auto ec = sync::validate_name(args().name)) return ec;
  if (auto ec = sync::validate_owner(args().owner)) return ec;
  if (count_ < 1 || count_ > most_permits) return error::invalid_argument;
  if (wait_) return sync::validate_wait(*wait_);
  return {};
}

script const& semaphore_acquire::attempt_script() const { return scripts::semaphore_calls; }

sync::message_policy semaphore_acquire::policy() const { return sync::wake_as_many_as_free; }

io::outgoing semaphore_acquire::attempt(bool retry, bool by_digest) {
  script_args call{{args().name, trace_},
                   {retry ? "retry-acquire" : "acquire", std::to_string(count_), std::to_string(trace_lifetime.count()), id_}};
  append_learned(*core_, args().name, call.argv);
  auto out = script_call(scripts::semaphore_calls, args().slot, call, by_digest);
  if (retry && first_unknown_) {
    // The retry must find the trace of the attempt whose outcome was lost: it reaches Redis while
    // the trace lasts (with a margin), or fails with not_connected, and the undo takes over.
    auto const left = *first_unknown_ + trace_lifetime * 9 / 10 - core_->now();
    out.opts.connection_wait =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), std::chrono::milliseconds{0});
  }
  return out;
}

semaphore_acquire::outcome semaphore_acquire::read(error_code ec, io::response& replies) {
  if (ec == error::ambiguous) {
    if (!first_unknown_) first_unknown_ = sent();
    return {outcome_kind::unknown};
  }
  std::int64_t taken = 0;
  if (auto const o = read_flag(ec, replies, taken)) return *o;
  first_unknown_.reset();
  if (taken == 0) return {outcome_kind::busy, {}, std::chrono::milliseconds{-1}};
  core_->books<semaphore_books>().taken[key()] += count_;
  learned(*core_, args().name, id_);
  return {outcome_kind::granted};
}

// An attempt took nothing if the server refused it or answered 0; a lost or unreadable outcome, or
// 1, may have taken permits, which the undo gives back by the attempt's trace.
void semaphore_acquire::undo_late_grant(error_code ec, io::response const& replies, std::function<void()> then) {
  bool const took_nothing = ec ? ec != error::ambiguous
                               : replies.size() == 1 && (replies[0].is_error() || (replies[0].kind() == resp::type::integer &&
                                                                                   replies[0].integer() == 0));
  if (took_nothing) return then();
  undo(std::move(then));
}

void semaphore_acquire::undo(std::function<void()> then) {
  auto const& name = args().name;
  script_args release{{name, trace_}, {"undo", channel_of(name), id_}};
  core_->spawn_cleanup(sync::undo_with(core_, scripts::semaphore_calls, std::move(release), name,
                                       args().owner, trace_lifetime * 9 / 10),
                       std::move(then));
}

void semaphore_acquire::complete(error_code ec, bool taken) {
  in_progress_.reset();
  std::visit(
      [&](auto& h) {
        using handler = std::decay_t<decltype(h)>;
        if constexpr (std::is_same_v<handler, pending_handler<acquire_signature>>) {
          h.complete(taken ? error_code{} : ec ? ec : error_code{error::timeout});
        } else {
          h.complete(ec, taken);
        }
      },
      handler_);
}

}  // namespace redisync::detail::semaphore_protocol
