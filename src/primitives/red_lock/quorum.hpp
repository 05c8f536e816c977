#pragma once

// A RedLock's arithmetic over N independent masters, without sockets or a clock of its own: the
// masters' answers and the times they were sent come in; whether an attempt holds, must raise its
// fencing token, must be undone or cannot succeed now comes out, as does a hold's validity and
// which masters may vote. The operations on the masters feed it their replies; the unit tests feed
// it every order and timing a network could produce (docs/design.md, "RedLock").

#include <redisync/held.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::detail::red_lock {

using clock_type = std::chrono::steady_clock;

// The votes a hold needs among `masters`.
constexpr std::size_t majority(std::size_t masters) noexcept { return masters / 2 + 1; }

// How much less than its lease a holder counts on: the masters' clocks may run faster than ours
// (redis.io's reference clients allow 1% of the lease and 2 ms).
struct drift_allowance {
  double rate = 0.01;
  std::chrono::microseconds fixed{2000};
};
// The part of `lease` a grant sent at some time is valid for, counted from that send; zero if the
// allowance eats the lease.
clock_type::duration usable_lease(clock_type::duration lease, drift_allowance drift);

enum class member_state : std::uint8_t {
  waiting,      // no answer yet
  held,         // granted to us
  refused,      // held by another owner
  unreachable,  // no answer: an error, a dropped connection, past the attempt's bound
  excluded,     // may not vote now: restarted lately, or a second address of a server counted once
};

// One attempt's acquire round: each master was sent the reentrant acquire with a token proposal at
// `sent`. Answers count once per master; a later answer of the same master is ignored.
class acquire_round {
 public:
  enum class verdict : std::uint8_t {
    undecided,    // fewer than k grants, and k still possible
    held,         // k grants proposing one token: it is recorded on a majority already
    raise,        // k grants proposing different tokens: the largest must be recorded on k masters
    expired,      // k grants, but too late to hold anything: undo them
    split,        // k can no longer be granted: undo the grants, try again later
    unavailable,  // more than N - k masters unreachable or excluded: no quorum can form now
  };

  // `excluded[i]`: master i may not vote in this round (it is not sent the acquire).
  acquire_round(std::vector<bool> const& excluded, clock_type::time_point sent, clock_type::duration lease,
                drift_allowance drift);

  void granted(std::size_t master, std::uint64_t proposal);
  // Held by another owner, whose field there expires in `holder_pttl`.
  void refused(std::size_t master, std::chrono::milliseconds holder_pttl);
  void unreachable(std::size_t master);

  // Settled once k grants came in or k became impossible; grants after that join the hold (or are
  // undone with it) without changing the verdict, except that time may still expire it.
  verdict judge(clock_type::time_point now) const;

  // The send time plus the usable lease: how long the hold is valid unless renewed.
  clock_type::time_point valid_until() const noexcept { return valid_until_; }
  // The largest proposal among the first k grants: the hold's token.
  std::uint64_t token() const noexcept { return token_; }
  // Every master that granted, counted or late: where the hold is renewed or undone.
  std::vector<std::size_t> grants() const;
  std::vector<member_state> const& members() const noexcept { return members_; }
  std::size_t needed() const noexcept { return needed_; }

  // After a split: how long until enough of the other holders' fields will have expired that k
  // masters could be free (zero: they are free now, the attempts of contenders split them); none
  // when too many masters are unreachable or excluded for a quorum whatever expires.
  std::optional<std::chrono::milliseconds> free_after() const;

 private:
  std::size_t count(member_state state) const;
  bool answer(std::size_t master, member_state state);

  std::vector<member_state> members_;
  std::vector<std::chrono::milliseconds> holder_pttls_;  // of refusing masters
  std::size_t needed_;
  clock_type::time_point valid_until_;
  std::size_t counted_ = 0;  // grants that count toward the verdict (at most k)
  bool first_k_agree_ = true;
  std::uint64_t token_ = 0;
};

// A raise round: the token t is recorded on every master where our field is (or the lock is free);
// a master whose counter is past t, or equal but recorded by another owner, refuses with its counter.
class raise_round {
 public:
  enum class verdict : std::uint8_t {
    undecided,  // fewer than k accepted, and k still possible
    committed,  // k masters recorded the token within the validity
    again,      // refusals make k impossible: raise again with next_token()
    expired,    // the validity ended first: undo the hold
    failed,     // more than N - k masters unreachable: undo the hold
  };

  raise_round(std::size_t masters, std::vector<bool> const& excluded, std::uint64_t token,
              clock_type::time_point valid_until);

  void accepted(std::size_t master);
  void refused(std::size_t master, std::uint64_t counter);
  void unreachable(std::size_t master);

  verdict judge(clock_type::time_point now) const;
  std::uint64_t token() const noexcept { return token_; }
  // The largest counter a master answered, plus one (at least the token plus one).
  std::uint64_t next_token() const noexcept { return next_token_; }

 private:
  enum class answer_state : std::uint8_t { waiting, accepted, refused, unreachable, excluded };
  std::size_t count(answer_state state) const;

  std::vector<answer_state> answers_;
  std::size_t needed_;
  std::uint64_t token_;
  std::uint64_t next_token_;
  clock_type::time_point valid_until_;
};

// A hold's validity while it lives: each member's deadline is the send time of its last good grant
// or renewal plus the usable lease; the hold is valid until the k-th latest of them, so renewals kept
// by a minority end it.
class member_deadlines {
 public:
  explicit member_deadlines(std::size_t masters);

  // A grant or renewal sent at `sent` that the master confirmed.
  void confirmed(std::size_t master, clock_type::time_point sent, clock_type::duration lease, drift_allowance drift);
  // A renewal that got no answer: the member keeps its deadline, but is not known to be renewed.
  void unanswered(std::size_t master);
  // The master no longer has our field (expired, deleted, another owner's now): no deadline.
  void gone(std::size_t master);
  // Another owner holds the lock there.
  void taken(std::size_t master);

  // The k-th latest deadline (the time point's minimum when fewer than k members have one).
  clock_type::time_point valid_until() const;
  // held while k members' last renewal was confirmed, uncertain while fewer but the hold is valid,
  // lost once the k-th deadline passed or more than N - k masters are held by another owner.
  hold_status status(clock_type::time_point now) const;

 private:
  struct member {
    std::optional<clock_type::time_point> deadline;
    bool renewed = false;
    bool taken = false;
  };
  std::vector<member> members_;
  std::size_t needed_;
};

// Delayed restarts: a master that lost its data may have granted a hold that is still valid to
// someone else, so after a restart (its run_id changed, or it has been up for less than the rejoin
// delay) it counts toward no quorum until the delay has passed since the restart was seen.
class master_standing {
 public:
  explicit master_standing(clock_type::duration rejoin_delay) : rejoin_delay_{rejoin_delay} {}

  // What INFO server said at `read_at`. A run_id that differs from the last one seen is a restart
  // (or another server at the address, as after a failover) seen at `read_at`.
  void observed(std::string_view run_id, std::chrono::seconds uptime, clock_type::time_point read_at);

  bool votes(clock_type::time_point now) const noexcept { return known_ && now >= excluded_until_; }
  clock_type::time_point excluded_until() const noexcept { return excluded_until_; }
  std::string const& run_id() const noexcept { return run_id_; }

 private:
  clock_type::duration rejoin_delay_;
  std::string run_id_;
  bool known_ = false;
  clock_type::time_point excluded_until_{};
};

// For each master, whether an earlier one in the list has the same run_id: two addresses that
// reach one server are one vote. Empty run_ids (not read yet) are never the same.
std::vector<bool> second_addresses(std::vector<std::string> const& run_ids);

}  // namespace redisync::detail::red_lock
