#include "harvest/harvest_forecast.h"

#include <cmath>
#include <limits>
#include <utility>

#include "common/status.h"

namespace morpheus::rm {
RangeMax::RangeMax(std::vector<double> series) {
  levels_.push_back(std::move(series));
  const size_t n = levels_[0].size();
  for (size_t len = 2; len <= n; len *= 2) {
    const auto& prev = levels_.back();
    std::vector<double> next(n - len + 1);
    for (size_t i = 0; i < next.size(); i++) next[i] = std::max(prev[i], prev[i + len / 2]);
    levels_.push_back(std::move(next));
  }
}

TenantForecast::TenantForecast(std::vector<double> history, TimePoint start, Millis step,
                               double rise_quantile)
    : history_(std::move(history)), step_(step), quantile_(rise_quantile) {
  MORPHEUS_CHECK(step_ > Millis(0), "forecast step must be > 0");
  MORPHEUS_CHECK(quantile_ >= 0 && quantile_ <= 1, "rise quantile must be in [0, 1]");
  slots_ = static_cast<size_t>((kDay + step_ - Millis(1)) / step_);
  // Per time-of-day slot the largest share the history shows, twice over,
  // so a window crossing midnight is one query.
  std::vector<double> tod(2 * slots_, 0.0);
  const Millis first = start.time_since_epoch() % kDay;
  for (size_t i = 0; i < history_.size(); i++) {
    const auto at = (first + step_ * static_cast<int64_t>(i)) % kDay;
    const auto slot = static_cast<size_t>(at / step_);
    tod[slot] = std::max(tod[slot], history_[i]);
  }
  for (size_t i = 0; i < slots_; i++) tod[slots_ + i] = tod[i];
  profile_ = RangeMax(std::move(tod));
  rise_.assign(1, 0.0);
  top_ = history_;
}

void TenantForecast::extendRise(size_t want) {
  const size_t n = history_.size();
  std::vector<double> rises;
  while (rise_.size() <= want) {
    const size_t k = rise_.size();
    rises.clear();
    for (size_t i = 0; i + k < n; i++) {
      top_[i] = std::max(top_[i], history_[i + k]);
      rises.push_back(top_[i] - history_[i]);
    }
    const auto q =
        static_cast<size_t>(std::ceil(quantile_ * static_cast<double>(rises.size() - 1)));
    std::nth_element(rises.begin(), rises.begin() + static_cast<long>(q), rises.end());
    rise_.push_back(std::max(rise_.back(), rises[q]));
  }
}

double predictedMargin(TenantForecast& forecast, UtilPattern pattern, double current,
                       double capacity, double taken, const std::vector<Millis>& ends,
                       TimePoint now, Millis run) {
  double least = std::numeric_limits<double>::infinity();
  forEachSegment(ends, run, [&](Millis, Millis to, int64_t n) {
    least = std::min(least, capacity * (1 - forecast.share(pattern, current, now, to)) - taken -
                                static_cast<double>(n));
  });
  return least;
}

}  // namespace morpheus::rm
