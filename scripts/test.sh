#!/usr/bin/env bash
# Builds redisync with AddressSanitizer and UndefinedBehaviorSanitizer and runs every test tier
# (unit, integration, fault, thread), runs the thread tier again under ThreadSanitizer, then fuzzes
# the RESP3 parser for 60 s. Installs what is missing.
#   scripts/test.sh            everything above
#   FUZZ_SECONDS=0 scripts/test.sh   skip the fuzzer
#   CTEST_ARGS='-L unit' scripts/test.sh   a subset
#   CTEST_ARGS='-L soak' scripts/test.sh   10 minutes of random faults (SOAK_SECONDS to change)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/install-deps.sh

# The interoperability test talks to a Redisson-protocol client from npm (node-redisson).
if ! cmp -s test/interop/package.json build/interop/package.json 2>/dev/null; then
  mkdir -p build/interop
  cp test/interop/package.json build/interop/package.json
  npm install --prefix build/interop --no-audit --no-fund --loglevel=error >/dev/null
fi

jobs=$(nproc)
# A failing tier's whole output is shown (ctest keeps only its first 300 KB otherwise), and its
# failed checks again at the end, where they are easy to find.
run_ctest() {
  local log
  log=$(mktemp)
  if ! ctest --test-output-size-failed 16000000 "$@" 2>&1 | tee "$log"; then
    echo "---- failed checks:"
    grep -a -E 'error: in "|fatal error|critical check|[*]{3}|Exception|Sanitizer' "$log" | tail -n 60
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}
soak=OFF
if [[ "${CTEST_ARGS:-}" == *soak* ]]; then soak=ON; fi
cmake --preset debug -DREDISYNC_SOAK_TESTS=$soak >/dev/null
cmake --build --preset debug -j "$jobs"
# Soak tests carry the label "soak" and only run when asked for (CTEST_ARGS='-L soak'); their
# report is shown afterwards.
if [[ "${CTEST_ARGS:-}" == *soak* ]]; then
  rm -f build/debug/test/soak-report.txt
  run_ctest --preset debug -j 1 ${CTEST_ARGS}
  cat build/debug/test/soak-report.txt
else
  run_ctest --preset debug -j 1 --label-exclude soak ${CTEST_ARGS:-}
fi

# The thread tier again, under ThreadSanitizer (a build of the library and that tier alone). Its
# preset builds Asio without std::atomic: with it, Asio's reference counts end in an acquire fence,
# which TSan does not model, so an executor freed on another thread than its last copy reads as a race.
if [[ -z "${CTEST_ARGS:-}" ]]; then
  cmake --preset tsan >/dev/null
  cmake --build --preset tsan -j "$jobs"
  run_ctest --preset tsan
fi

fuzz_seconds=${FUZZ_SECONDS:-60}
if [[ "$fuzz_seconds" -gt 0 ]]; then
  cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz -j "$jobs"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # New inputs go to a scratch directory; the committed seed corpus is only read.
  build/fuzz/test/fuzz/resp_parser_fuzz -max_total_time="$fuzz_seconds" -timeout=5 \
    -rss_limit_mb=2048 -print_final_stats=1 "$work" test/fuzz/corpus 2>&1 | tail -n 12
  echo "fuzzer: ${fuzz_seconds} s without a crash"
fi
