#pragma once

#include <redisync/event.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace redisync {

// Every member has an initializer, so that a designated initializer may leave any out (GCC 12's
// -Wextra warns of an omitted member that has none).
struct node_address {
  std::string host;
  std::uint16_t port = 6379;
  friend bool operator==(node_address const&, node_address const&) = default;
};

// What kind of deployment the client speaks to.
enum class topology : std::uint8_t {
  standalone,  // one server at host:port
  cluster,     // Redis Cluster: `seeds` are nodes to learn the slot map from
  sentinel,    // a master found through the Sentinels in `seeds`, by `sentinel_master_name`
};

struct config {
  // Where and how to connect.
  topology mode = topology::standalone;
  std::string host = "127.0.0.1";  // standalone; a cluster's or Sentinel set's first seed
  std::uint16_t port = 6379;
  // A cluster's seed nodes or the Sentinels, tried in order; empty: host and port alone.
  std::vector<node_address> seeds{};
  std::string sentinel_master_name{};
  // The Sentinels' own credentials (their requirepass / ACL user), which may differ from the data
  // nodes' (username, password).
  std::string sentinel_username{};
  std::string sentinel_password{};
  std::string username{};  // empty: the default user
  std::string password{};  // empty: no AUTH
  int database = 0;        // standalone and Sentinel only: a cluster has database 0 alone
  // TLS (rediss://). A URL takes the same names as query parameters: rediss://host:port/0?
  // tls_ca_file=/etc/redis/ca.pem&tls_cert_file=...&tls_key_file=...&tls_verify=no
  bool tls = false;
  bool tls_verify_peer = true;   // false: any server certificate will do (tls_verify=no)
  std::string tls_ca_file{};     // PEM CAs that sign the server's certificate; empty: the system's
  std::string tls_cert_file{};   // PEM client certificate (chain), for servers with tls-auth-clients
  std::string tls_key_file{};    // PEM private key of tls_cert_file; both or neither
  std::string client_name = "redisync";

  // Connection behaviour.
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds health_check_interval{2000};  // ping when idle this long; 0 = off
  std::chrono::milliseconds reconnect_delay_min{50};
  std::chrono::milliseconds reconnect_delay_max{2000};
  std::chrono::milliseconds transient_retry_budget{10000};  // LOADING / BUSY resend window
  // How long a request waits for a connection before it fails with error::not_connected
  // (client::last_connect_failure() says why there is none). Acquires too: retry to wait longer.
  // Once a connect attempt has failed, a bounded acquire (try_acquire, with_lock's wait) waits
  // no longer than its own wait.
  std::chrono::milliseconds connection_wait_limit{10000};
  // While a reply is due, poll the socket this long before sleeping: a sleeping thread takes tens
  // of µs to wake, as long as a loopback round trip. Polls that come up empty back off, so a far
  // server costs almost nothing. 0 = always sleep at once. Not used with TLS.
  std::chrono::microseconds reply_spin{200};

  // Replication (WAIT): after an acquire (of any primitive), wait until this many replicas have its
  // write, at most wait_replicas_timeout; fewer give back what it granted and fail the acquire with
  // error::not_replicated.
  // 0: do not wait. It narrows, never closes, the window in which a failover loses a hold.
  std::uint32_t wait_replicas = 0;
  std::chrono::milliseconds wait_replicas_timeout{1000};
  // Releases a master acknowledged this long (at most a hold's lease) before the client saw
  // another master take over its slot are made again on the new master, which may never have
  // received them; so is the release of a hold given up for lost whose lock the server may still
  // keep. The last 16,384 such releases are kept. 0: none.
  std::chrono::milliseconds failover_window{10000};

  // Locks.
  std::chrono::milliseconds watchdog_lease{30000};      // lease of a lock acquired without one
  // Keep a channel after its last waiter, until then or an unlock message nobody here wants.
  std::chrono::milliseconds subscription_linger{1000};
  std::chrono::milliseconds wait_poll_cap{30000};       // longest sleep between two tries
  std::chrono::milliseconds watchdog_tick{25};          // resolution of the timing wheel
  std::uint32_t max_local_handoffs = 64;  // consecutive in-process hand-offs before a real release
  // While a client has fair lock waiters, it keeps a key of its own alive on the server with a
  // beat every third of this (one per client, whatever its number of waiters); the waiters of a
  // client whose key lapsed (judged by Redis server time) are dropped from the queue.
  // A read-write lock's waiting writers are judged alive the same way, by the same beats.
  std::chrono::milliseconds fair_waiter_liveness{1000};
  // A read-write lock's waiting writer keeps new readers of redisync clients out until it has had
  // its turn, so that overlapping readers cannot starve it (Redisson's readers do not look).
  // false: readers share whenever no writer holds, as in Redisson.
  bool prefer_writers = true;
  // A lock's fencing counter (`redisson_lock_token:{name}`) expires after the lease of the hold it
  // numbers, never before server time has passed its value, so no key outlives its lock for long.
  // true: it never expires (a counter shared with a peer that needs it, say).
  bool persistent_fencing_counter = false;

  // Runs the connection, the watchdog and the waiters on a thread of the client's own, so that
  // renewals and replies never wait behind the application's work: the choice for a service that
  // runs one thread and computes between its awaits. Handlers still complete on their own
  // executors (or the client's). false: the client runs on the executor it was made with.
  bool own_thread = false;

  // Receives events about holds (event.hpp); called on the client's strand (with own_thread, on
  // that thread): keep it short. Empty: silent.
  event_handler on_event{};

  // Metrics (metrics.hpp) count lock names by group too when this is set: a name's group is its
  // part before the first separator ("orders:42" with ":" is "orders"), "other" without one. At
  // most metrics_group_limit groups; later ones count as "other". Empty: by primitive only.
  std::string metrics_group_separator{};
  std::size_t metrics_group_limit = 100;

  // Parses redis://[user:password@]host[:port][/db] and rediss://... (TLS, with the tls_ query
  // parameters above); redis-cluster://[user:password@]host:port[,host:port...] (and
  // rediss-cluster://); redis-sentinel://[user:password@]host:port[,host:port...]/MASTER_NAME (and
  // rediss-sentinel://, with ?sentinel_username=...&sentinel_password=... for the Sentinels'
  // own AUTH; user:password are the data nodes'). Throws
  // boost::system::system_error with error::invalid_argument on a malformed URL, saying which part.
  static config from_url(std::string_view url);
  static config from_url(std::string_view url, boost::system::error_code& ec);
  // What is wrong with `url` (the scheme, host, port, database or a parameter), or empty if it parses.
  static std::string url_problem(std::string_view url);

  std::string endpoint() const;  // host:port, for logs
  // Where to start: `seeds`, or host and port alone.
  std::vector<node_address> seed_nodes() const;
  // The same settings for the data node at `at` (a cluster node, a Sentinel's master).
  config for_node(node_address const& at) const;
  // The settings for talking to the Sentinel at `at`: its own credentials, no database.
  config for_sentinel(node_address const& at) const;

  // The first setting out of range, named with its bound; empty if every setting is fine. A
  // connection is never made with a configuration that has one.
  std::string problem() const;
};

}  // namespace redisync
