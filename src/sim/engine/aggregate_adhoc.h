// The aggregate ad-hoc model of morpheus-sim (`--adhoc-model aggregate`): the
// ad-hoc load as capacity over time, outside the scheduler. Cluster-scale
// simulators keep the background load aggregate (Omega's lightweight
// simulator) and run the production code only where decisions are studied;
// here the periodic jobs keep the real planner, scheduler core, reservation
// queues and DRA, and the ad-hoc jobs become fluid work (sim/engine/fluid_adhoc.h)
// whose capacity is computed by this function, not by the scheduler.
//
// Per step (cluster_sim.cc, every --adhoc-step, and at once when a
// reservation below its guarantee has no room), from the scheduler's state:
//  1. reservations come first: each claims min(guarantee, used + pending)
//     (Morpheus §3: guarantees are served before the ad-hoc queues, and
//     preempt them);
//  2. what is left is shared max-min (equal weights, dominant shares of the
//     whole cluster, as the DRF queue ordering does between siblings) among
//     the ad-hoc leaf queues — each with its pools' demand plus the demand of
//     the unreserved periodic apps in it — and the reservations borrowing
//     beyond their guarantee (the RM daemon serves them as siblings of the
//     top-level ad-hoc queues at weight 1);
//  3. inside a queue, its pools and its periodic apps share its part max-min;
//  4. the ad-hoc load never takes capacity periodic containers hold (the
//     scheduler preempts only for guarantees), nor what reservations below
//     their guarantee still need: pools are capped, in order, by the free
//     capacity net of that need.
//  5. between steps, capacity periodic tasks free goes first to the unmet
//     need of step 4, then to pools below their fair share of steps 2-3
//     (refillAggregate; the task model's DRF ordering serves the queue
//     furthest below its share first), then to the periodic apps.
// What this costs against the task model (docs/experiments/simulator.md,
// "Aggregate ad-hoc model"): ad-hoc work yields to a guarantee at once (no
// preemption grace, no lost work), fair shares are reached within a step
// (the task model reaches them as short ad-hoc tasks end), and the ad-hoc
// capacity is packed onto whole nodes, so it fragments the nodes less than
// 1-vcore ad-hoc containers do.
//
// Pure function: no state, no clock; deterministic (inputs in order).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/resource.h"

namespace morpheus::sim {

struct AggregateReservation {
  Resource guarantee;  // the plan's allocation now, DRA extras included
  Resource used;       // containers its apps hold
  Resource pending;    // containers its apps ask for and do not hold
};

struct AggregatePool {
  std::string queue;   // ad-hoc leaf queue
  Resource shape;      // container shape of its jobs (non-zero)
  int64_t demand = 0;  // containers its live jobs can use now (FluidPool::demand)
};

struct AggregateQueueDemand {
  std::string queue;  // ad-hoc leaf queue
  Resource used;      // held by unreserved periodic apps in it
  Resource pending;   // asked for by them and not held
};

struct AggregateInput {
  Resource capacity;  // the whole cluster (every node's full size)
  std::vector<AggregateReservation> reservations;
  std::vector<AggregateQueueDemand> periodic;  // unreserved periodic apps per queue
  std::vector<AggregatePool> pools;
};

// The split of one step, per pool in input.pools' order.
struct AggregateSplit {
  // Containers of capacity it gets now, in [0, fair].
  std::vector<int64_t> held;
  // Its max-min fair share (steps 2-3) in containers, capped by its demand
  // but not by what periodic containers hold (step 4): what it is owed.
  std::vector<int64_t> fair;
  // What reservations below their guarantee still need (claim - used, summed):
  // capacity freed before the next step serves it before the pools.
  Resource unmet;
};

AggregateSplit aggregateAdhocSplit(const AggregateInput& input);

// Containers of capacity each pool gets (aggregateAdhocSplit's held).
std::vector<int64_t> aggregateAdhocShares(const AggregateInput& input);

// Capacity freed inside a step (periodic tasks ending on a node) goes where
// the scheduler's fair ordering would send it: first to what reservations
// below their guarantee still need (`unmet`, reduced by what it takes), then
// to the pools below their fair share (`held` raised toward `fair`, in pool
// order), the rest to the periodic apps. Returns the capacity the pools take
// out of `room`, in whole containers of their shapes.
Resource refillAggregate(Resource room, const std::vector<Resource>& shapes,
                         const std::vector<int64_t>& fair, std::vector<int64_t>& held,
                         Resource& unmet);

// Max-min fair split of `total` among demands `want` (equal weights): each
// gets min(want, level) with the level where the sum reaches `total` (or
// everything when it does not). Exposed for tests.
std::vector<double> maxMinShares(const std::vector<double>& want, double total);

}  // namespace morpheus::sim
