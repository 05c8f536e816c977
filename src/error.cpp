#include <redisync/error.hpp>

#include <array>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace redisync {
namespace {

// Every redisync category has this id: codes compare equal by value whichever of them they carry.
constexpr unsigned long long category_id = 0x7265646973796e63;  // "redisync"

class category_impl : public boost::system::error_category {
 public:
  category_impl() noexcept : error_category{category_id} {}
  char const* name() const noexcept override { return "redisync"; }

  std::string message(int ev) const override {
    switch (static_cast<error>(ev)) {
      case error::invalid_argument: return "invalid argument";
      case error::not_owner: return "the lock is not held by this owner";
      case error::not_held: return "this hold level was already let go of (released or being released)";
      case error::lease_lost: return "the lease was lost";
      case error::timeout: return "timed out";
      case error::not_connected: return "not connected to Redis";
      case error::ambiguous: return "the connection dropped after the command was sent; it may have run";
      case error::connection_closed: return "the connection was closed";
      case error::auth_failed: return "authentication failed";
      case error::handshake_failed: return "the connection handshake failed";
      case error::health_check_failed: return "the server did not answer the health check";
      case error::protocol_error: return "the server reply is not valid RESP3";
      case error::server_error: return "the server replied with an error";
      case error::wrong_type: return "the key holds a value of the wrong type";
      case error::no_script: return "the script is not loaded on the server";
      case error::read_only: return "the server is a read-only replica";
      case error::loading: return "the server is loading its dataset";
      case error::busy: return "the server is busy running a script";
      case error::out_of_memory: return "the server is out of memory";
      case error::no_replicas: return "not enough replicas";
      case error::moved: return "the key moved to another cluster node";
      case error::ask: return "the key is migrating to another cluster node";
      case error::try_again: return "the cluster asked to try again";
      case error::cluster_down: return "the cluster is down";
      case error::no_permission: return "the user has no permission for this command";
      case error::unexpected_reply: return "the server reply has an unexpected shape";
      case error::token_exhausted:
        return "the lock's fencing-token counter is at its largest value (2^63 - 1)";
      case error::shutting_down: return "the client is shutting down";
      case error::upgrade_refused:
        return "this owner holds a read of the read-write lock: a read cannot become a write (release it first)";
      case error::not_started: return "the client was never started: call start() or run() first";
      case error::empty_handle: return "the handle belongs to no client (it was moved from)";
      case error::too_deep:
        return "the owner holds this lock max_hold_depth (1000) levels deep already, or its stored hold count "
               "is past that (tampered with)";
      case error::cross_slot:
        return "the request's keys hash to more than one cluster slot (use a hash tag such as {user1} in each)";
      case error::not_replicated:
        return "fewer replicas than config::wait_replicas acknowledged the acquire in time; it was undone";
      case error::too_many_permits:
        return "more permits asked for than the semaphore has in all (set them first with try_set_permits)";
    }
    return "unknown redisync error";
  }
};

// redisync's category with one server reply's words: message() gives them after the code's own.
class server_text_category final : public category_impl {
 public:
  explicit server_text_category(std::string text) : text_{std::move(text)} {}
  std::string message(int ev) const override { return category_impl::message(ev) + " (server: " + text_ + ")"; }

 private:
  std::string text_;
};

// The categories live as long as the program (an error code may outlive any client), so their
// number is bounded: server error texts are few (a script's error names its line, not its data).
class server_texts {
 public:
  boost::system::error_category const* category_of(std::string_view text) {
    std::lock_guard lock{mutex_};
    if (auto it = categories_.find(text); it != categories_.end()) return it->second.get();
    if (categories_.size() >= limit) return nullptr;
    auto made = std::make_unique<server_text_category>(std::string{text});
    auto const* out = made.get();
    categories_.emplace(std::string{text}, std::move(made));
    return out;
  }

 private:
  static constexpr std::size_t limit = 512;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<server_text_category>, std::less<>> categories_;
};

}  // namespace

boost::system::error_code server_error_code(std::string_view text) noexcept {
  constexpr std::size_t longest = 400;
  auto const code = static_cast<int>(error_from_server_text(text));
  static server_texts texts;
  try {
    if (auto const* cat = texts.category_of(text.substr(0, longest))) return {code, *cat};
  } catch (std::bad_alloc const&) {
    // Without the words, the code still says what failed.
  }
  return {code, error_category()};
}

boost::system::error_category const& error_category() noexcept {
  static category_impl const instance;
  return instance;
}

error error_from_server_text(std::string_view text) noexcept {
  static constexpr std::array<std::pair<std::string_view, error>, 19> prefixes{{
      {"WRONGTYPE", error::wrong_type},
      {"NOSCRIPT", error::no_script},
      {"READONLY", error::read_only},
      {"LOADING", error::loading},
      {"BUSY", error::busy},
      {"OOM", error::out_of_memory},
      {"NOREPLICAS", error::no_replicas},
      {"MOVED", error::moved},
      {"ASK", error::ask},
      {"TRYAGAIN", error::try_again},
      {"CLUSTERDOWN", error::cluster_down},
      {"NOAUTH", error::auth_failed},
      {"WRONGPASS", error::auth_failed},
      {"NOPERM", error::no_permission},
      {"TOKENLIMIT", error::token_exhausted},
      {"UPGRADE", error::upgrade_refused},
      {"DEPTH", error::too_deep},
      {"CROSSSLOT", error::cross_slot},
      {"PERMITS", error::too_many_permits},
  }};
  std::string_view const word = text.substr(0, text.find(' '));
  for (auto const& [prefix, code] : prefixes) {
    if (word == prefix) return code;
  }
  return error::server_error;
}

bool is_transient(error e) noexcept {
  return e == error::loading || e == error::busy || e == error::try_again ||
         e == error::cluster_down;
}

}  // namespace redisync
