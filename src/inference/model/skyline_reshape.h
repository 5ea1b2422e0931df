// Fitting an LP skyline into its job's window (Morpheus §5 and §6).
//
// The skyline LP (skyline_fit.h, §5) fits the job's resource demand as the
// runs showed it: its length is that of the longest training run, long tails
// included. The window [a, d) comes from SLO inference (§4). When the skyline
// is longer than the window the reservation cannot be placed as fitted; §5's
// skyline describes a demand (an area of container-steps), and the planner
// (§6) only needs that area inside [a, d). So the skyline is reshaped to the
// window by trading time for parallelism: the same area, higher and shorter,
// never wider than the job can run, and front-loaded.
//
// Why front-loaded: runs longer than the window did not run as
// fast as the job can; they waited for capacity, so their profile says when
// capacity came, not when the job needs it. A history of runs that started
// slowly in a crowded cluster fits a skyline low early and high late; kept
// in that order, the reservation arrives after the DAG's first, widest
// stages needed it, and the job's containers beyond the then-falling
// guarantee are preempted later. A job that gets its window's capacity runs
// at full speed from its start, and a DAG at full speed is widest early (its
// first stages have no dependencies; later ones funnel into joins and
// reduces), so the compressed steps are ordered from the highest down.
// In morpheus-sim this cuts morpheus's deadline violations, most of the gain
// without the in-order alternative below (docs/experiments/simulator.md).
#pragma once

#include <cstdint>
#include <vector>

#include "common/status.h"

namespace morpheus::inference {

// The skyline compressed to `window_steps` steps when it is longer (returned
// unchanged otherwise), in the order the runs showed:
//  - time is scaled by K / W (K = skyline.size(), W = window_steps): step k
//    holds the skyline's area over [k*K/W, (k+1)*K/W), rounded up to whole
//    containers, so no area is lost and phases keep their order;
//  - no step exceeds cap = max(max_parallelism, the skyline's own peak) (a
//    skyline already above max_parallelism is not cut); what a step cannot
//    hold moves to the next steps with room, then to the last steps with room;
//  - the result's area is >= the skyline's area and <= W * cap.
// INVALID_ARGUMENT naming "window_steps" (< 1), "max_parallelism" (< 1) or
// "skyline[i]" (< 0); INFEASIBLE when the area exceeds W * cap (the job cannot
// run its demand in the window even at full parallelism).
Result<std::vector<int64_t>> compressSkylineToWindow(const std::vector<int64_t>& skyline,
                                                     int64_t window_steps, int64_t max_parallelism);

// What a reservation holds for a compressed skyline: its steps front-loaded
// (non-increasing, see above). When the plan has no room for it, its callers
// (morpheus-inference, morpheus-sim) submit the compression in order instead,
// the shape the history showed, before giving the job no reservation at all.
std::vector<int64_t> frontLoaded(std::vector<int64_t> compressed);

// frontLoaded(compressSkylineToWindow(...)) for a skyline longer than its
// window; a skyline that fits its window is returned unchanged. Same errors
// as compressSkylineToWindow.
Result<std::vector<int64_t>> fitSkylineToWindow(const std::vector<int64_t>& skyline,
                                                int64_t window_steps, int64_t max_parallelism);

}  // namespace morpheus::inference
