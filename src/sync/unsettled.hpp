#pragma once

// Keys whose outcome is not known yet: an acquire gave up while its attempt was in flight, and a
// grant may still arrive (and be undone). Until the key is settled, new acquires and releases of
// the same owner and name wait, so that a late grant is undone before anything else counts levels.

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

namespace redisync::detail::sync {

class unsettled_keys {
 public:
  void unsettle(std::string const& key) { ++entries_[key].pending; }

  void settle(std::string const& key) {
    auto it = entries_.find(key);
    if (it == entries_.end() || --it->second.pending > 0) return;
    auto waiting = std::move(it->second.waiting);
    entries_.erase(it);
    for (auto& f : waiting) f();
  }

  bool contains(std::string const& key) const { return entries_.contains(key); }

  // Runs `then` once `key` is settled (at once if it is).
  void when_settled(std::string const& key, std::function<void()> then) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      then();
      return;
    }
    it->second.waiting.push_back(std::move(then));
  }

  // Everyone waiting goes on (the client stops).
  void release_all() {
    auto all = std::move(entries_);
    entries_.clear();
    for (auto& [key, e] : all) {
      for (auto& f : e.waiting) f();
    }
  }

 private:
  struct entry {
    int pending = 0;
    std::vector<std::function<void()>> waiting;
  };
  std::unordered_map<std::string, entry> entries_;
};

}  // namespace redisync::detail::sync
