#include "rm/runtime/dag_report.h"

#include <map>
#include <string>

#include "common/wire.h"

namespace morpheus::rm {

Result<std::vector<sched::DagStage>> dagFromStageReports(
    const google::protobuf::RepeatedPtrField<v1::StageReport>& reports) {
  std::map<std::string, size_t> index;  // unfinished stage name -> DAG index
  std::vector<sched::DagStage> dag;
  bool complete = true;
  for (int i = 0; i < reports.size(); i++) {
    const auto& r = reports[i];
    const std::string f = "stages[" + std::to_string(i) + "]";
    if (r.estimated_task_ms() < 0) return invalidArgument(f + ".estimated_task_ms", "must be >= 0");
    Resource task;
    if (r.has_task_resource()) {
      MORPHEUS_ASSIGN_OR_RETURN(task, validatedResource(r.task_resource(), f + ".task_resource"));
    }
    if (r.completed() >= r.tasks()) continue;
    const int64_t ms = r.mean_task_ms() > 0 ? r.mean_task_ms() : r.estimated_task_ms();
    complete = complete && !task.isZero() && ms > 0;
    sched::DagStage st;
    st.tasks_left = r.tasks() - r.completed();
    st.task_duration = Millis(ms);
    st.task = task;
    st.request_id = r.name();  // the DAG AM asks for a stage's tasks under its name
    index.emplace(r.name(), dag.size());
    dag.push_back(std::move(st));
  }
  if (!complete) return std::vector<sched::DagStage>{};
  size_t k = 0;
  for (const auto& r : reports) {
    if (r.completed() >= r.tasks()) continue;
    for (const auto& d : r.depends_on()) {
      auto it = index.find(d);
      if (it != index.end()) dag[k].deps.push_back(it->second);
    }
    k++;
  }
  return dag;
}

}  // namespace morpheus::rm
