#include <redisync/client.hpp>

#include "script/user_script.hpp"
#include <scripts.hpp>
#include "sync/client_core.hpp"
#include "sync/launch.hpp"
#include "sync/validate.hpp"
#include "routing/request_slot.hpp"

#include "sync/hold_kind.hpp"
#include "primitives/rw_lock/protocol.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/steady_timer.hpp>

#include <boost/asio/post.hpp>
#include <boost/system/system_error.hpp>

namespace redisync {

namespace asio = boost::asio;
using boost::system::error_code;

client::client(executor_type ex, config cfg)
    : core_{detail::sync::client_core::create(std::move(ex), std::move(cfg))} {}

client::~client() {
  stop();
  core_->finish_own_thread(std::chrono::seconds{2});
}

void client::start() { core_->start(); }

void client::stop() {
  core_->request_stop();
  asio::post(core_->strand(), [core = core_] { core->stop(); });
}

std::string const& client::id() const noexcept { return core_->id(); }

owner client::new_owner() { return owner{core_, core_->id() + ":" + std::to_string(core_->next_owner_number())}; }

bool owner::holds(std::string_view name) const {
  if (!core_) return false;
  return core_->holds(id_, name) || core_->holds(detail::rw_protocol::field_of(lock_kind::write, id_), name);
}

owner client::make_owner(std::string id) {
  if (auto ec = detail::sync::validate_owner(id)) throw boost::system::system_error{ec, "redisync: invalid owner id"};
  return owner{core_, std::move(id)};
}


metrics_snapshot client::metrics() const { return core_->take_metrics(); }

std::string client::last_connect_failure() const { return core_->router().last_failure(); }

std::string client::node_of(std::string_view key) const {
  auto& r = core_->router();
  return r.address_of(r.slot_of(key));
}

client::executor_type client::get_executor() const noexcept { return core_->application_executor(); }

config const& client::cfg() const noexcept { return core_->cfg(); }

void client::start_run(core_ptr const& core, asio::any_completion_handler<void(error_code)> h) {
  core->run(core->for_application(std::move(h)));
}

namespace {

using core_ptr = std::shared_ptr<detail::sync::client_core>;

// The slot of a request's keys in a cluster (any master's for none; on one server, 0), or
// error::cross_slot for keys that no one node serves together.
std::pair<detail::routing::slot_type, error_code> slot_of(core_ptr const& core, detail::io::outgoing const& out) {
  if (core->cfg().mode != topology::cluster) return {0, {}};
  auto const r = detail::routing::slot_of_request(core->router(), out.payload);
  return {r.slot.value_or(0), r.ec == error{} ? error_code{} : error_code{r.ec}};
}

// Sends `req` to the node of its keys; a request it cannot send fails without I/O.
template <class Handler>
void send_routed(core_ptr const& core, resp::request req, Handler handler) {
  auto out = detail::io::outgoing::from(std::move(req));
  auto const [slot, ec] = slot_of(core, out);
  if (ec) {
    detail::pending_handler<void(error_code, response)> pending{std::move(handler), core->homes()};
    asio::post(core->strand(), [pending = std::move(pending), ec]() mutable { pending.complete(ec, {}); });
    return;
  }
  core->router().exec(slot, std::move(out), {}, std::move(handler));
}

}  // namespace

void client::start_exec(core_ptr const& core, resp::request req,
                        asio::any_completion_handler<void(error_code, response)> h) {
  send_routed(core, std::move(req), core->for_application(std::move(h)));
}

void client::start_flush(core_ptr const& core, asio::any_completion_handler<void(error_code)> h) {
  detail::pending_handler<void(error_code)> handler{std::move(h), core->homes()};
  asio::post(core->strand(), [core, handler = std::move(handler)]() mutable {
    core->subscriptions().flush([handler = std::make_shared<decltype(handler)>(std::move(handler))](error_code ec) {
      handler->complete(ec);
    });
  });
}

namespace {

// The last reply, or the first server error among the replies.
asio::awaitable<std::tuple<error_code, resp::value>> query_op(core_ptr core, resp::request req) {
  constexpr auto tuple_token = asio::as_tuple(asio::deferred);
  auto send = [&](auto handler) {
    send_routed(core, std::move(req), asio::any_completion_handler<void(error_code, response)>{std::move(handler)});
  };
  auto [ec, replies] = co_await asio::async_initiate<decltype(tuple_token), void(error_code, response)>(send, tuple_token);
  if (!ec) ec = check_replies(replies);
  if (!ec && replies.empty()) ec = error::unexpected_reply;
  if (ec) co_return std::tuple{ec, resp::value{}};
  co_return std::tuple{error_code{}, std::move(replies.back())};
}

detail::script_args keys_and_args(std::vector<std::string> keys, std::vector<std::string> args) {
  return {std::move(keys), std::move(args)};
}

asio::awaitable<std::tuple<error_code, resp::value>> eval_op(core_ptr core,
                                                             std::shared_ptr<detail::user_script const> s,
                                                             detail::script_args args) {
  auto const slot = args.keys.empty() ? detail::routing::slot_type{0} : core->router().slot_of(args.keys.front());
  for (auto const& key : args.keys) {
    if (core->router().slot_of(key) != slot) co_return std::tuple{error_code{error::cross_slot}, resp::value{}};
  }
  co_return co_await detail::run_script(core->scripts(), core->keep_script(s), slot, args);
}

asio::awaitable<std::tuple<error_code, bool>> fenced_set_op(core_ptr core, fenced_write w) {
  detail::script_args args{{w.fence_key, w.key}, {std::to_string(w.token), std::move(w.value)}};
  if (w.expected) args.argv.push_back(std::move(*w.expected));
  auto const slot = core->router().slot_of(w.fence_key);
  auto [ec, reply] = co_await detail::run_script(core->scripts(), detail::scripts::fenced_set, slot, args);
  if (ec) co_return std::tuple{ec, false};
  auto accepted = read_reply<std::int64_t>(reply);
  if (!accepted || (*accepted != 0 && *accepted != 1)) co_return std::tuple{error_code{error::unexpected_reply}, false};
  co_return std::tuple{error_code{}, *accepted == 1};
}

// Releases the levels of `hold` this client's guards still hold, innermost first, one after the
// other: each release tells the server the hold count it expects.
asio::awaitable<void> release_every_level(core_ptr core, std::shared_ptr<detail::sync::hold_state> hold) {
  constexpr auto tuple_token = asio::as_tuple(asio::deferred);
  while (hold->active()) {
    auto level = hold->let_go_innermost();
    if (!level) co_return;
    auto send = [&](auto handler) {
      hold->kind->release(core, hold, level, std::move(handler));
    };
    co_await asio::async_initiate<decltype(tuple_token), void(error_code)>(send, tuple_token);
  }
}

// The stages of a shutdown share one deadline. A stage is started with the callback that ends it,
// which may come after the stage gave up, or never: only the current stage's ends its wait.
class shutdown_stages {
 public:
  shutdown_stages(asio::any_io_executor strand, std::chrono::milliseconds limit)
      : state_{std::make_shared<state>(std::move(strand), limit)} {}

  // True if the stage ended before the deadline.
  asio::awaitable<bool> run(std::function<void(std::function<void()> done)> start) {
    auto const stage = ++state_->stage;
    state_->finished = false;
    start([state = state_, stage] {
      if (state->stage != stage) return;
      state->finished = true;
      state->deadline.cancel();
    });
    if (!state_->finished) co_await state_->deadline.async_wait(asio::as_tuple(asio::deferred));
    co_return state_->finished;
  }

 private:
  struct state {
    state(asio::any_io_executor strand, std::chrono::milliseconds limit) : deadline{std::move(strand), limit} {}
    asio::steady_timer deadline;
    int stage = 0;
    bool finished = false;
  };
  std::shared_ptr<state> state_;
};

void release_every_hold(core_ptr const& core, std::function<void()> done) {
  auto const holds = core->active_holds();
  auto pending = std::make_shared<std::size_t>(holds.size());
  if (holds.empty()) return done();
  for (auto const& hold : holds) {
    asio::co_spawn(core->strand(), release_every_level(core, hold), [pending, done](std::exception_ptr) {
      if (--*pending == 0) done();
    });
  }
}

// Acquires under way complete first (failing, their grants undone) with the clean-up they and
// earlier releases left running, so that every hold granted before the shutdown is known when
// the holds are released.
asio::awaitable<std::tuple<error_code>> shutdown_op(core_ptr core, std::chrono::milliseconds limit) {
  shutdown_stages stages{core->strand(), limit};
  core->begin_shutdown();
  auto settle = [core](std::function<void()> done) { core->when_idle(std::move(done)); };
  auto release = [core](std::function<void()> done) { release_every_hold(core, std::move(done)); };
  auto unsubscribe = [core](std::function<void()> done) {
    core->subscriptions().flush([done = std::move(done)](error_code) { done(); });
  };
  // The second settling waits for the releases that others started meanwhile (a guard dropped
  // while the holds were released), which stop() would cut off.
  bool const in_time = co_await stages.run(settle) && co_await stages.run(release) &&
                       co_await stages.run(settle) && co_await stages.run(unsubscribe);
  core->stop();
  co_return std::tuple{in_time ? error_code{} : error_code{error::timeout}};
}

}  // namespace

void client::start_shutdown(core_ptr const& core, std::chrono::milliseconds limit,
                            asio::any_completion_handler<void(error_code)> h) {
  detail::sync::launch(core->strand(), core->homes(), shutdown_op(core, limit), std::move(h), false);
}

void client::start_query(core_ptr const& core, resp::request req,
                         asio::any_completion_handler<void(error_code, resp::value)> h) {
  detail::sync::launch(core->strand(), core->homes(), query_op(core, std::move(req)), std::move(h), true);
}

void client::start_eval(core_ptr const& core, std::shared_ptr<detail::user_script const> const& s,
                        std::vector<std::string> keys, std::vector<std::string> args,
                        asio::any_completion_handler<void(error_code, resp::value)> h) {
  detail::sync::launch(core->strand(), core->homes(),
                       eval_op(core, s, keys_and_args(std::move(keys), std::move(args))), std::move(h), true);
}

void client::start_fenced_set(core_ptr const& core, fenced_write w,
                              asio::any_completion_handler<void(error_code, bool)> h) {
  detail::sync::launch(core->strand(), core->homes(), fenced_set_op(core, std::move(w)), std::move(h),
                       true);
}

error_code check_replies(response const& replies) noexcept { return detail::io::check_replies(replies); }

}  // namespace redisync
