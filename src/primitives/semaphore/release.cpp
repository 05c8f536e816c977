#include "primitives/semaphore/release.hpp"

#include "sync/validate.hpp"

#include <scripts.hpp>


namespace redisync::detail::semaphore_protocol {

namespace asio = boost::asio;
using io::error_code;

void start_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner, std::int64_t count,
                   asio::any_completion_handler<void(error_code)> h) {
  pending_handler<void(error_code)> handler{std::move(h), core->homes()};
  auto& host = *core;
  auto op = std::make_shared<semaphore_release>(std::move(core), std::move(name), std::move(owner), count,
                                                std::move(handler));
  host.to_strand([op = std::move(op)] { op->start(); });
}

semaphore_release::semaphore_release(std::shared_ptr<sync::client_core> core, std::string name, std::string owner,
                                     std::int64_t count, pending_handler<void(error_code)> handler)
    : release_op{core, {name, owner, core->router().slot_of(name)}},
      core_{std::move(core)},
      count_{count},
      key_{sync::hold_key(owner, name)},
      trace_{trace_key_of(args().name, core_->id())},
      id_{std::to_string(core_->next_owner_number())},
      handler_{std::move(handler)},
      in_progress_{core_->track()} {}

void semaphore_release::start() {
  if (auto ec = sync::validate_name(args().name)) return complete(ec);
  if (auto ec = sync::validate_owner(args().owner)) return complete(ec);
  if (count_ < 1 || count_ > most_permits) return complete(error::invalid_argument);
  auto& taken = core_->books<semaphore_books>().taken;
  auto const it = taken.find(key_);
  if (it == taken.end() || it->second < count_) return complete(error::not_owner);
  // Counted as given back from now on: a release that fails for sure counts them again.
  if ((it->second -= count_) == 0) taken.erase(it);
  first_sent_ = core_->now();
  send();
}

script const& semaphore_release::release_script() const { return scripts::semaphore_calls; }

io::outgoing semaphore_release::call(bool retry, bool by_digest) {
  script_args call{{args().name, trace_},
                   {"release", std::to_string(count_), channel_of(args().name), std::to_string(trace_lifetime.count()), id_}};
  append_learned(*core_, args().name, call.argv);
  auto out = script_call(scripts::semaphore_calls, args().slot, call, by_digest);
  if (retry) {
    lost_ = true;
    // Sent again only while the first call's trace is sure to last (see semaphore_acquire::attempt).
    auto const left = first_sent_ + trace_lifetime * 9 / 10 - core_->now();
    out.opts.connection_wait =
        std::max(std::chrono::duration_cast<std::chrono::milliseconds>(left), std::chrono::milliseconds{0});
  }
  return out;
}

bool semaphore_release::read(resp::value const& reply) {
  return reply.kind() == resp::type::integer && (reply.integer() == 0 || reply.integer() == 1);
}

bool semaphore_release::may_repeat() const {
  return !core_->stopped() && core_->now() < first_sent_ + trace_lifetime * 9 / 10;
}

void semaphore_release::succeeded() {
  learned(*core_, args().name, id_);
  handler_.complete({});
}

void semaphore_release::complete(error_code ec) {
  // Not given back for sure: the owner still has them (unless an outcome was lost: it may have
  // given them back).
  if (ec && !lost_ && ec != error::ambiguous && ec != error::not_owner && first_sent_ != sync::clock_type::time_point{}) {
    core_->books<semaphore_books>().taken[key_] += count_;
  }
  handler_.complete(ec);
}

}  // namespace redisync::detail::semaphore_protocol
