#include "primitives/red_lock/quorum.hpp"

#include <algorithm>
#include <functional>

namespace redisync::detail::red_lock {

clock_type::duration usable_lease(clock_type::duration lease, drift_allowance drift) {
  auto const allowance = std::chrono::duration_cast<clock_type::duration>(lease * drift.rate) +
                         std::chrono::duration_cast<clock_type::duration>(drift.fixed);
  return std::max(lease - allowance, clock_type::duration::zero());
}

acquire_round::acquire_round(std::vector<bool> const& excluded, clock_type::time_point sent,
                             clock_type::duration lease, drift_allowance drift)
    : members_(excluded.size(), member_state::waiting),
      holder_pttls_(excluded.size()),
      needed_{majority(excluded.size())},
      valid_until_{sent + usable_lease(lease, drift)} {
  for (std::size_t i = 0; i < excluded.size(); ++i) {
    if (excluded[i]) members_[i] = member_state::excluded;
  }
}

bool acquire_round::answer(std::size_t master, member_state state) {
  if (master >= members_.size() || members_[master] != member_state::waiting) return false;
  members_[master] = state;
  return true;
}

void acquire_round::granted(std::size_t master, std::uint64_t proposal) {
  if (!answer(master, member_state::held) || counted_ == needed_) return;
  if (counted_ > 0 && proposal != token_) first_k_agree_ = false;
  token_ = std::max(token_, proposal);
  ++counted_;
}

void acquire_round::refused(std::size_t master, std::chrono::milliseconds holder_pttl) {
  // A field without an expiry never frees the master by itself.
  if (answer(master, member_state::refused)) {
    holder_pttls_[master] = holder_pttl.count() < 0 ? std::chrono::milliseconds::max() : holder_pttl;
  }
}

void acquire_round::unreachable(std::size_t master) { answer(master, member_state::unreachable); }

std::size_t acquire_round::count(member_state state) const {
  return std::size_t(std::count(members_.begin(), members_.end(), state));
}

acquire_round::verdict acquire_round::judge(clock_type::time_point now) const {
  if (counted_ == needed_) {
    if (now >= valid_until_) return verdict::expired;
    return first_k_agree_ ? verdict::held : verdict::raise;
  }
  // More than N - k masters that cannot grant leave fewer than k that can.
  auto const cannot_vote = count(member_state::unreachable) + count(member_state::excluded);
  if (cannot_vote + needed_ > members_.size()) return verdict::unavailable;
  if (cannot_vote + count(member_state::refused) + needed_ > members_.size()) return verdict::split;
  return verdict::undecided;
}

std::vector<std::size_t> acquire_round::grants() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == member_state::held) out.push_back(i);
  }
  return out;
}

std::optional<std::chrono::milliseconds> acquire_round::free_after() const {
  // Ours (undone) or unanswered masters are free for the next attempt as far as we know.
  auto const free_now = count(member_state::held) + count(member_state::waiting);
  if (free_now >= needed_) return std::chrono::milliseconds::zero();
  auto const more = needed_ - free_now;
  std::vector<std::chrono::milliseconds> pttls;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i] == member_state::refused) pttls.push_back(holder_pttls_[i]);
  }
  if (more > pttls.size()) return std::nullopt;
  std::nth_element(pttls.begin(), pttls.begin() + std::ptrdiff_t(more - 1), pttls.end());
  return pttls[more - 1];
}

raise_round::raise_round(std::size_t masters, std::vector<bool> const& excluded, std::uint64_t token,
                         clock_type::time_point valid_until)
    : answers_(masters, answer_state::waiting),
      needed_{majority(masters)},
      token_{token},
      next_token_{token + 1},
      valid_until_{valid_until} {
  for (std::size_t i = 0; i < masters && i < excluded.size(); ++i) {
    if (excluded[i]) answers_[i] = answer_state::excluded;
  }
}

void raise_round::accepted(std::size_t master) {
  if (master < answers_.size() && answers_[master] == answer_state::waiting) answers_[master] = answer_state::accepted;
}

void raise_round::refused(std::size_t master, std::uint64_t counter) {
  if (master >= answers_.size() || answers_[master] != answer_state::waiting) return;
  answers_[master] = answer_state::refused;
  next_token_ = std::max(next_token_, counter + 1);
}

void raise_round::unreachable(std::size_t master) {
  if (master < answers_.size() && answers_[master] == answer_state::waiting) answers_[master] = answer_state::unreachable;
}

std::size_t raise_round::count(answer_state state) const {
  return std::size_t(std::count(answers_.begin(), answers_.end(), state));
}

raise_round::verdict raise_round::judge(clock_type::time_point now) const {
  if (now >= valid_until_) return verdict::expired;
  if (count(answer_state::accepted) >= needed_) return verdict::committed;
  auto const cannot_vote = count(answer_state::unreachable) + count(answer_state::excluded);
  if (cannot_vote + needed_ > answers_.size()) return verdict::failed;
  if (cannot_vote + count(answer_state::refused) + needed_ > answers_.size()) return verdict::again;
  return verdict::undecided;
}

member_deadlines::member_deadlines(std::size_t masters) : members_(masters), needed_{majority(masters)} {}

void member_deadlines::confirmed(std::size_t master, clock_type::time_point sent, clock_type::duration lease,
                                 drift_allowance drift) {
  if (master >= members_.size()) return;
  auto& m = members_[master];
  // Replies may come back out of order: an older renewal never shortens a newer one's deadline.
  auto const deadline = sent + usable_lease(lease, drift);
  m.deadline = m.deadline ? std::max(*m.deadline, deadline) : deadline;
  m.renewed = true;
  m.taken = false;
}

void member_deadlines::unanswered(std::size_t master) {
  if (master < members_.size()) members_[master].renewed = false;
}

void member_deadlines::gone(std::size_t master) {
  if (master < members_.size()) members_[master] = member{};
}

void member_deadlines::taken(std::size_t master) {
  if (master >= members_.size()) return;
  members_[master] = member{};
  members_[master].taken = true;
}

clock_type::time_point member_deadlines::valid_until() const {
  std::vector<clock_type::time_point> deadlines;
  for (auto const& m : members_) {
    if (m.deadline) deadlines.push_back(*m.deadline);
  }
  if (deadlines.size() < needed_) return clock_type::time_point::min();
  std::nth_element(deadlines.begin(), deadlines.begin() + std::ptrdiff_t(needed_ - 1), deadlines.end(),
                   std::greater<>{});
  return deadlines[needed_ - 1];
}

hold_status member_deadlines::status(clock_type::time_point now) const {
  auto const taken = std::size_t(std::count_if(members_.begin(), members_.end(), [](member const& m) { return m.taken; }));
  if (taken + needed_ > members_.size() || now >= valid_until()) return hold_status::lost;
  auto const renewed = std::size_t(
      std::count_if(members_.begin(), members_.end(), [](member const& m) { return m.deadline && m.renewed; }));
  return renewed >= needed_ ? hold_status::held : hold_status::uncertain;
}

void master_standing::observed(std::string_view run_id, std::chrono::seconds uptime, clock_type::time_point read_at) {
  // INFO's uptime is whole seconds, rounded down: the start it implies is at or after the real one,
  // so the exclusion lasts at least the delay.
  auto until = read_at - uptime + rejoin_delay_;
  if (known_ && run_id != run_id_) until = std::max(until, read_at + rejoin_delay_);
  excluded_until_ = known_ ? std::max(excluded_until_, until) : until;
  run_id_ = std::string{run_id};
  known_ = true;
}

std::vector<bool> second_addresses(std::vector<std::string> const& run_ids) {
  std::vector<bool> out(run_ids.size(), false);
  for (std::size_t i = 0; i < run_ids.size(); ++i) {
    for (std::size_t j = 0; j < i && !run_ids[i].empty(); ++j) {
      if (run_ids[j] == run_ids[i]) out[i] = true;
    }
  }
  return out;
}

}  // namespace redisync::detail::red_lock
