#pragma once

// This client's liveness on the server, for waiters that Redis judges per client rather than one
// by one (the fair lock's queue): while any such waiter waits on a slot, the watchdog keeps a key
// of this client there (`alive_key`) for one liveness period, and scripts take a waiter whose
// client's key is gone for dead. So waiting costs Redis one beat per client and period, whatever
// the number of waiters. A beat that finds the key gone, or comes too late to have kept it, means
// this client may have been judged dead and its waiters dropped: each of them tries again.

#include "routing/router.hpp"
#include "sync/lease_registry.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>

namespace redisync::detail::sync {

// What a script appends a client's id to for that client's key beside keys of `slot`: one key per
// client on one server; in a cluster one per client and slot (a script reaches its own slot only).
std::string alive_prefix(bool sharded, routing::slot_type slot);

class client_liveness {
 public:
  client_liveness(lease_registry& leases, std::string client_id, bool sharded, std::chrono::milliseconds liveness)
      : leases_{leases}, client_id_{std::move(client_id)}, sharded_{sharded}, liveness_{liveness} {}

  std::string alive_prefix(routing::slot_type slot) const { return sync::alive_prefix(sharded_, slot); }
  std::string alive_key(routing::slot_type slot) const { return alive_prefix(slot) + client_id_; }
  std::chrono::milliseconds liveness() const noexcept { return liveness_; }

  // Keeps this client alive on `slot` until the waiter leaves; `on_lapse` tells the waiter that it
  // may have been dropped. Returns the waiter's ticket.
  std::uint64_t enlist(routing::slot_type slot, std::function<void()> on_lapse);
  void leave(routing::slot_type slot, std::uint64_t ticket);

 private:
  struct beating_slot {
    std::shared_ptr<hold_state> beat;  // the watchdog's entry: a hold of nothing, never lost
    std::map<std::uint64_t, std::function<void()>> waiters;
    clock_type::time_point confirmed;  // when the key was last known to be there
  };
  // The watchdog renews a beat like a hold (client_alive.lua), but a beat is no hold: it goes on
  // until its waiters leave, whatever the answer (a key found gone is made again by the beat
  // itself), and its flag goes to on_beat.
  class beat_renewal final : public renewal_kind {
   public:
    explicit beat_renewal(client_liveness& liveness) : liveness_{liveness} {}
    script const& renewal_script() const override;
    script_args renewal_args(std::span<std::shared_ptr<hold_state>> beats,
                             std::chrono::milliseconds liveness) const override;
    void settle(lease_registry& leases, std::shared_ptr<hold_state> const& beat, std::int64_t flag,
                clock_type::time_point sent, io::error_code ec) const override;
    bool endangered_when_disconnected() const noexcept override { return false; }

   private:
    client_liveness& liveness_;
  };

  void on_beat(routing::slot_type slot, hold_state const* beat, std::int64_t flag);

  beat_renewal beat_renewal_{*this};
  lease_registry& leases_;
  std::string client_id_;
  bool sharded_;
  std::chrono::milliseconds liveness_;
  std::unordered_map<routing::slot_type, beating_slot> slots_;
  std::uint64_t next_ticket_ = 1;
};

}  // namespace redisync::detail::sync
