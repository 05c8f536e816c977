#pragma once

// What the Sentinel resolver asks a Sentinel and how it reads the answer, without sockets: the
// resolver (routing/sentinel) sends the question over a stream of its own and acts on the answer.

#include <redisync/config.hpp>
#include <redisync/resp/request.hpp>
#include <redisync/resp/value.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace redisync::detail::routing {

// One write: AUTH with the Sentinels' own credentials (if `sentinel_cfg` has a password), the
// master's address, the other Sentinels.
struct sentinel_question {
  resp::request request;
  std::size_t replies = 0;  // how many come back
  bool auth = false;
};
sentinel_question ask_sentinel(config const& sentinel_cfg, std::string const& master_name);

struct sentinel_answer {
  std::optional<node_address> master;
  std::vector<node_address> others;  // the other Sentinels it knows of
  std::string failure;               // why it named no master
};
// `replies`: the question's, in order.
sentinel_answer read_sentinel_answer(sentinel_question const& q, std::vector<resp::value> const& replies,
                                     std::string_view master_name);

// Whether the pub/sub message `push` announces a new master for `master_name` (+switch-master).
bool announces_new_master(resp::value const& push, std::string_view master_name);

}  // namespace redisync::detail::routing
