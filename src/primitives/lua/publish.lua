-- The command that publishes on a lock's channel: a cluster's client ends each call's arguments
-- with 'spublish' (sharded pub/sub: the message stays on the slot's node, where its listeners
-- are; PUBLISH would go to every node and miss them). The calls of a merged command all come from
-- one client, so the last argument speaks for all of them.
local publish_command = ARGV[#ARGV] == 'spublish' and 'spublish' or 'publish'
