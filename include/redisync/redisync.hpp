#pragma once

#include <redisync/client.hpp>
#include <redisync/config.hpp>
#include <redisync/error.hpp>
#include <redisync/event.hpp>
#include <redisync/fair_lock.hpp>
#include <redisync/election.hpp>
#include <redisync/held.hpp>
#include <redisync/latch.hpp>
#include <redisync/lock.hpp>
#include <redisync/multi_lock.hpp>
#include <redisync/owner.hpp>
#include <redisync/permits.hpp>
#include <redisync/semaphore.hpp>
#include <redisync/with_lock.hpp>
#include <redisync/with_locks.hpp>
#include <redisync/with_permit.hpp>
