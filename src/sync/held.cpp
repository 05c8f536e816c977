#include <redisync/held.hpp>

#include "sync/loss_wait.hpp"
#include "sync/hold_kind.hpp"
#include "sync/launch.hpp"

#include <boost/asio/post.hpp>

#include <algorithm>

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;

using detail::sync::level_state;

held::held(core_ptr core, state_ptr state, level_ptr level, std::uint64_t token)
    : core_{std::move(core)}, state_{std::move(state)}, level_{std::move(level)}, token_{token} {}

held::held(held&& other) noexcept
    : core_{std::move(other.core_)},
      state_{std::move(other.state_)},
      level_{std::move(other.level_)},
      notifier_{std::move(other.notifier_)},
      token_{other.token_} {}

held& held::operator=(held&& other) noexcept {
  if (this != &other) {
    held old{std::move(*this)};  // releases what this one held
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
    level_ = std::move(other.level_);
    notifier_ = std::move(other.notifier_);
    token_ = other.token_;
  }
  return *this;
}

held::~held() {
  // A destructor cannot wait: the release runs in the background.
  if (core_ && state_ && level_ && state_->active() && state_->let_go(*level_)) {
    state_->kind->release(core_, state_, level_, asio::any_completion_handler<void(error_code)>{[](error_code) {}});
  }
}

std::chrono::steady_clock::time_point held::valid_until() const noexcept {
  return state_ ? state_->valid_until() : std::chrono::steady_clock::time_point{};
}

hold_status held::status() const noexcept {
  if (!state_ || !level_) return hold_status::released;
  auto const level = level_->state.load();
  if (level == level_state::released) return hold_status::released;
  if (core_ && core_->stop_requested()) return hold_status::lost;  // the stop ends every hold
  auto const s = state_->status.load();
  if (s == hold_status::lost || s == hold_status::released) return s;
  // The client may not run (stopped, or its io_context idle) to notice the deadline itself.
  if (std::chrono::steady_clock::now() >= state_->valid_until()) return hold_status::lost;
  return level == level_state::releasing ? hold_status::uncertain : s;
}

bool held::is_held() const noexcept {
  if (!level_ || level_->state != level_state::held) return false;
  auto const s = status();
  return s == hold_status::held || s == hold_status::uncertain;
}

std::string const& held::name() const noexcept {
  static std::string const none;
  return state_ ? state_->name : none;
}

std::string const& held::owner_id() const noexcept {
  static std::string const none;
  return state_ ? state_->owner : none;
}

void held::start_release(core_ptr const& core, state_ptr const& state, level_ptr const& level,
                         asio::any_completion_handler<void(error_code)> h) {
  if (!core || !state || !level) return detail::sync::fail_at_once(std::move(h), error::not_held);
  if (!state->let_go(*level)) {
    auto const not_held = []() -> asio::awaitable<std::tuple<error_code>> {
      co_return std::tuple{error_code{error::not_held}};
    };
    detail::sync::launch(core->strand(), core->homes(), not_held(), std::move(h), false);
    return;
  }
  // The stop ends every hold as lost, and nothing is sent after it.
  if (core->stop_requested()) return detail::sync::fail_at_once(std::move(h), error::lease_lost);
  state->kind->release(core, state, level, std::move(h));
}

void held::start_wait_lost(core_ptr const& core, std::vector<state_ptr> states,
                           asio::any_completion_handler<wait_lost_signature> h) {
  bool const none = states.empty() || std::ranges::any_of(states, [](auto const& s) { return !s; });
  if (!core || none) return detail::sync::fail_at_once(std::move(h), error::not_held);
  detail::sync::launch(core->strand(), core->homes(), detail::sync::wait_lost(core, std::move(states)),
                       std::move(h), true);
}

asio::cancellation_slot held::loss_slot(asio::any_io_executor ex) {
  if (!notifier_ && (!state_ || !core_)) {
    // No hold to work under: what is bound to the slot is cancelled, as after a loss.
    notifier_ = std::make_shared<detail::sync::loss_notifier>(std::move(ex));
    asio::post(notifier_->ex, [n = notifier_] { n->signal.emit(asio::cancellation_type::terminal); });
  }
  if (!notifier_) {
    notifier_ = std::make_shared<detail::sync::loss_notifier>(std::move(ex));
    asio::post(core_->strand(), [state = state_, n = notifier_] {
      if (state->active()) {
        state->notifiers.push_back(n);
      } else if (state->status == hold_status::lost) {
        asio::post(n->ex, [n] { n->signal.emit(asio::cancellation_type::terminal); });
      }
    });
  }
  return notifier_->signal.slot();
}

}  // namespace redisync
