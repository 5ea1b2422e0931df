// Division by a divisor used many times, without the division's latency.
#pragma once

#include <cstdint>

namespace morpheus::sched {

// a / b rounded down, for 0 <= a and 0 < b, given `inv` = 1.0 / b. Below
// 2^52 the product a * inv is within one of the quotient and the two
// corrections make it exact; a larger `a` is divided. Scheduler::Impl's kill
// re-check walk divides twice per node that takes containers, and the
// division's latency led its profile.
inline int64_t floorDiv(int64_t a, int64_t b, double inv) {
  if (a >= (int64_t{1} << 52)) return a / b;
  auto q = static_cast<int64_t>(static_cast<double>(a) * inv);
  if (q * b > a) q--;
  if ((q + 1) * b <= a) q++;
  return q;
}

}  // namespace morpheus::sched
