// The AM's stage reports (AllocateRequest.stages) as the scheduler core's DAG
// (Carbyne OSDI'16 §4.2: the job's remaining stages, task counts,
// task durations and resources). Unfinished stages only, dependencies
// re-indexed among them (a finished dependency no longer constrains).
#pragma once

#include <google/protobuf/repeated_ptr_field.h>

#include <vector>

#include "common/status.h"
#include "morpheus/v1/application_master.pb.h"
#include "scheduler/types.h"

namespace morpheus::rm {

// `reports` must have passed the runtime's stage validation (unique names,
// known dependencies, tasks > 0, completed in [0, tasks]). Returns an empty
// DAG (no plan: the app is ordered by DRF) when some unfinished stage lacks
// task_resource, or has neither mean_task_ms nor estimated_task_ms.
// INVALID_ARGUMENT naming the field for a negative task_resource
// ("stages[1].task_resource.memory_mib") or estimated_task_ms
// ("stages[1].estimated_task_ms").
Result<std::vector<sched::DagStage>> dagFromStageReports(
    const google::protobuf::RepeatedPtrField<v1::StageReport>& reports);

}  // namespace morpheus::rm
