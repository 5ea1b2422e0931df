#include "inference/model/skyline_reshape.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string>

namespace morpheus::inference {

namespace {

Status validate(const std::vector<int64_t>& skyline, int64_t window_steps,
                int64_t max_parallelism) {
  if (window_steps < 1) return invalidArgument("window_steps", "must be >= 1");
  if (max_parallelism < 1) return invalidArgument("max_parallelism", "must be >= 1");
  for (size_t i = 0; i < skyline.size(); i++) {
    if (skyline[i] < 0)
      return invalidArgument("skyline[" + std::to_string(i) + "]", "must be >= 0");
  }
  return Status::ok();
}

// Time scaled by K / W in exact integer arithmetic: source step i covers
// [i*W, (i+1)*W) and target step k covers [k*K, (k+1)*K) on a common axis of
// K*W units; target k = ceil(sum_i s_i * overlap_i / W).
std::vector<int64_t> stretch(const std::vector<int64_t>& s, int64_t w) {
  const auto k_len = static_cast<int64_t>(s.size());
  std::vector<int64_t> out(static_cast<size_t>(w), 0);
  for (int64_t k = 0; k < w; k++) {
    const int64_t from = k * k_len, to = (k + 1) * k_len;
    int64_t units = 0;
    for (int64_t i = from / w; i < k_len && i * w < to; i++) {
      const int64_t overlap = std::min(to, (i + 1) * w) - std::max(from, i * w);
      if (overlap > 0) units += s[static_cast<size_t>(i)] * overlap;
    }
    out[static_cast<size_t>(k)] = (units + w - 1) / w;
  }
  return out;
}

// Caps every step at `cap`; the excess moves forward to steps with room, and
// what is left at the end backward from the last step.
void capAndSpill(std::vector<int64_t>& t, int64_t cap) {
  int64_t carry = 0;
  for (auto& v : t) {
    v += carry;
    carry = std::max<int64_t>(0, v - cap);
    v = std::min(v, cap);
  }
  for (auto it = t.rbegin(); it != t.rend() && carry > 0; ++it) {
    const int64_t add = std::min(carry, cap - *it);
    *it += add;
    carry -= add;
  }
}

}  // namespace

Result<std::vector<int64_t>> compressSkylineToWindow(const std::vector<int64_t>& skyline,
                                                     int64_t window_steps,
                                                     int64_t max_parallelism) {
  MORPHEUS_RETURN_IF_ERROR(validate(skyline, window_steps, max_parallelism));
  if (static_cast<int64_t>(skyline.size()) <= window_steps) return skyline;
  const int64_t area = std::accumulate(skyline.begin(), skyline.end(), int64_t{0});
  const int64_t cap = std::max(max_parallelism, *std::max_element(skyline.begin(), skyline.end()));
  if (area > window_steps * cap) {
    return infeasible("window_steps: the skyline's " + std::to_string(area) +
                      " container-steps do not fit " + std::to_string(window_steps) +
                      " steps of at most " + std::to_string(cap) + " containers");
  }
  std::vector<int64_t> out = stretch(skyline, window_steps);
  capAndSpill(out, cap);
  return out;
}

std::vector<int64_t> frontLoaded(std::vector<int64_t> compressed) {
  std::sort(compressed.begin(), compressed.end(), std::greater<>());
  return compressed;
}

Result<std::vector<int64_t>> fitSkylineToWindow(const std::vector<int64_t>& skyline,
                                                int64_t window_steps, int64_t max_parallelism) {
  MORPHEUS_ASSIGN_OR_RETURN(std::vector<int64_t> out,
                            compressSkylineToWindow(skyline, window_steps, max_parallelism));
  if (static_cast<int64_t>(skyline.size()) <= window_steps) return out;
  return frontLoaded(std::move(out));
}

}  // namespace morpheus::inference
