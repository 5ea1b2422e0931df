#include "dagam/job_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace morpheus::dagam {

namespace {

bool validName(const std::string& s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

Result<int64_t> readInt(const YAML::Node& n, const std::string& field, int64_t min, int64_t max) {
  if (!n.IsScalar()) return invalidArgument(field, "must be an integer");
  int64_t v = 0;
  try {
    v = n.as<int64_t>();
  } catch (const YAML::Exception&) {
    return invalidArgument(field, "must be an integer, got '" + n.Scalar() + "'");
  }
  if (v < min) return invalidArgument(field, "must be >= " + std::to_string(min));
  if (v > max) return invalidArgument(field, "must be <= " + std::to_string(max));
  return v;
}

Result<std::string> readString(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) return invalidArgument(field, "must be a string");
  return n.Scalar();
}

Result<bool> readBool(const YAML::Node& n, const std::string& field) {
  if (!n.IsScalar()) return invalidArgument(field, "must be true or false");
  try {
    return n.as<bool>();
  } catch (const YAML::Exception&) {
    return invalidArgument(field, "must be true or false, got '" + n.Scalar() + "'");
  }
}

Result<std::vector<std::string>> readStringList(const YAML::Node& n, const std::string& field) {
  if (!n.IsSequence()) return invalidArgument(field, "must be a list of strings");
  std::vector<std::string> out;
  for (size_t i = 0; i < n.size(); ++i) {
    std::string f = field + "[" + std::to_string(i) + "]";
    MORPHEUS_ASSIGN_OR_RETURN(std::string s, readString(n[i], f));
    if (s.empty()) return invalidArgument(f, "must not be empty");
    out.push_back(std::move(s));
  }
  return out;
}

Result<Resource> readResources(const YAML::Node& n, const std::string& field) {
  if (!n.IsMap())
    return invalidArgument(field, "must be a mapping like {memory_mib: 256, vcores: 1}");
  Resource r(0, 0);
  bool have_mem = false;
  for (const auto& kv : n) {
    std::string key = kv.first.Scalar();
    std::string f = field + "." + key;
    if (key == "memory_mib") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t v, readInt(kv.second, f, 1, int64_t{1} << 40));
      r.setMemoryMib(v);
      have_mem = true;
    } else if (key == "vcores") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t v, readInt(kv.second, f, 0, 1 << 20));
      r.setVcores(v);
    } else {
      // Any other key is a named extended resource (e.g. gpu: 1).
      if (!validName(key)) return invalidArgument(f, "invalid resource name");
      MORPHEUS_ASSIGN_OR_RETURN(int64_t v, readInt(kv.second, f, 0, int64_t{1} << 40));
      r.setExtended(key, v);
    }
  }
  if (!have_mem) return invalidArgument(field + ".memory_mib", "is required");
  return r;
}

Result<StageSpec> readStage(const YAML::Node& n, const std::string& field) {
  if (!n.IsMap()) return invalidArgument(field, "must be a mapping");
  StageSpec s;
  bool have_tasks = false;
  for (const auto& kv : n) {
    std::string key = kv.first.Scalar();
    const YAML::Node& v = kv.second;
    std::string f = field + "." + key;
    if (key == "name") {
      MORPHEUS_ASSIGN_OR_RETURN(s.name, readString(v, f));
      if (!validName(s.name)) {
        return invalidArgument(f, "'" + s.name + "' must be non-empty and use only [A-Za-z0-9_.-]");
      }
    } else if (key == "tasks") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t t, readInt(v, f, 1, 100000));
      s.tasks = static_cast<int>(t);
      have_tasks = true;
    } else if (key == "command") {
      MORPHEUS_ASSIGN_OR_RETURN(s.command, readString(v, f));
    } else if (key == "resources") {
      MORPHEUS_ASSIGN_OR_RETURN(s.resources, readResources(v, f));
    } else if (key == "depends_on") {
      MORPHEUS_ASSIGN_OR_RETURN(s.depends_on, readStringList(v, f));
    } else if (key == "gang") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t g, readInt(v, f, 1, 100000));
      s.gang = static_cast<int>(g);
    } else if (key == "max_attempts") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t a, readInt(v, f, 1, 1000));
      s.max_attempts = static_cast<int>(a);
    } else if (key == "estimated_task_ms") {
      MORPHEUS_ASSIGN_OR_RETURN(int64_t ms, readInt(v, f, 1, int64_t{1} << 40));
      s.estimated_task = Millis(ms);
    } else if (key == "constraints") {
      if (!v.IsSequence()) return invalidArgument(f, "must be a list");
      for (size_t i = 0; i < v.size(); ++i) {
        std::string cf = f + "[" + std::to_string(i) + "]";
        if (!v[i].IsMap()) return invalidArgument(cf, "must be a mapping {key, values, hard}");
        ConstraintSpec c;
        bool have_values = false;
        for (const auto& ckv : v[i]) {
          std::string ck = ckv.first.Scalar();
          if (ck == "key") {
            MORPHEUS_ASSIGN_OR_RETURN(c.key, readString(ckv.second, cf + ".key"));
          } else if (ck == "values") {
            MORPHEUS_ASSIGN_OR_RETURN(c.values, readStringList(ckv.second, cf + ".values"));
            have_values = true;
          } else if (ck == "hard") {
            MORPHEUS_ASSIGN_OR_RETURN(c.hard, readBool(ckv.second, cf + ".hard"));
          } else if (ck == "op") {
            MORPHEUS_ASSIGN_OR_RETURN(c.op, readString(ckv.second, cf + ".op"));
            if (c.op != "in" && c.op != "at_least" && c.op != "version_at_least")
              return invalidArgument(cf + ".op", "must be in, at_least or version_at_least");
          } else {
            return invalidArgument(cf + "." + ck, "unknown field (expected key, values, hard, op)");
          }
        }
        if (c.key.empty()) return invalidArgument(cf + ".key", "is required");
        if (!have_values || c.values.empty()) {
          return invalidArgument(cf + ".values", "must list at least one value");
        }
        s.constraints.push_back(std::move(c));
      }
    } else if (key == "expected_task_ms") {
      MORPHEUS_ASSIGN_OR_RETURN(s.expected_task_ms, readInt(v, f, 0, 366LL * 24 * 3600 * 1000));
    } else if (key == "reads") {
      MORPHEUS_ASSIGN_OR_RETURN(s.reads, readStringList(v, f));
    } else if (key == "writes") {
      MORPHEUS_ASSIGN_OR_RETURN(s.writes, readStringList(v, f));
    } else if (key == "env") {
      if (!v.IsMap()) return invalidArgument(f, "must be a mapping of NAME: value");
      for (const auto& ekv : v) {
        std::string ek = ekv.first.Scalar();
        if (!validName(ek)) return invalidArgument(f + "." + ek, "invalid variable name");
        MORPHEUS_ASSIGN_OR_RETURN(s.env[ek], readString(ekv.second, f + "." + ek));
      }
    } else {
      return invalidArgument(f, "unknown field");
    }
  }
  if (s.name.empty()) return invalidArgument(field + ".name", "is required");
  if (!have_tasks) return invalidArgument(field + ".tasks", "is required");
  if (s.command.find_first_not_of(" \t\n") == std::string::npos) {
    return invalidArgument(field + ".command", "is required and must not be empty");
  }
  if (s.gang > s.tasks) {
    return invalidArgument(field + ".gang", "gang size " + std::to_string(s.gang) +
                                                " exceeds tasks " + std::to_string(s.tasks));
  }
  return s;
}

// Resolves depends_on to indices and rejects cycles, naming one.
Status resolveDependencies(JobSpec* job) {
  std::map<std::string, int> index;
  for (size_t i = 0; i < job->stages.size(); ++i) index[job->stages[i].name] = static_cast<int>(i);
  for (size_t i = 0; i < job->stages.size(); ++i) {
    auto& s = job->stages[i];
    std::set<int> seen;
    for (const auto& d : s.depends_on) {
      std::string f = "stages[" + std::to_string(i) + "].depends_on";
      auto it = index.find(d);
      if (it == index.end()) return invalidArgument(f, "unknown stage '" + d + "'");
      if (it->second == static_cast<int>(i)) {
        return invalidArgument(f, "dependency cycle: stage '" + d + "' depends on itself");
      }
      if (seen.insert(it->second).second) s.deps.push_back(it->second);
    }
  }
  // DFS with colours; on a back edge report the cycle path.
  std::vector<int> colour(job->stages.size(), 0);  // 0 new, 1 on stack, 2 done
  std::vector<int> stack;
  std::string cycle;
  std::function<bool(int)> dfs = [&](int u) {
    colour[u] = 1;
    stack.push_back(u);
    for (int v : job->stages[u].deps) {
      if (colour[v] == 1) {
        auto it = std::find(stack.begin(), stack.end(), v);
        for (; it != stack.end(); ++it) cycle += job->stages[*it].name + " -> ";
        cycle += job->stages[v].name;
        return true;
      }
      if (colour[v] == 0 && dfs(v)) return true;
    }
    stack.pop_back();
    colour[u] = 2;
    return false;
  };
  for (size_t i = 0; i < job->stages.size(); ++i) {
    if (colour[i] == 0 && dfs(static_cast<int>(i))) {
      return invalidArgument("stages", "dependency cycle: " + cycle + " (X -> Y: X depends on Y)");
    }
  }
  return Status::ok();
}

}  // namespace

Result<JobSpec> parseJobSpec(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return invalidArgument(origin, std::string("not valid YAML: ") + e.what());
  }
  if (!root.IsMap()) return invalidArgument(origin, "must be a YAML mapping with name and stages");
  JobSpec job;
  bool have_stages = false;
  try {
    for (const auto& kv : root) {
      std::string key = kv.first.Scalar();
      if (key == "name") {
        MORPHEUS_ASSIGN_OR_RETURN(job.name, readString(kv.second, "name"));
        if (!validName(job.name)) {
          return invalidArgument(
              "name", "'" + job.name + "' must be non-empty and use only [A-Za-z0-9_.-]");
        }
      } else if (key == "stages") {
        if (!kv.second.IsSequence()) return invalidArgument("stages", "must be a list of stages");
        have_stages = true;
        for (size_t i = 0; i < kv.second.size(); ++i) {
          MORPHEUS_ASSIGN_OR_RETURN(StageSpec s,
                                    readStage(kv.second[i], "stages[" + std::to_string(i) + "]"));
          job.stages.push_back(std::move(s));
        }
      } else {
        return invalidArgument(key, "unknown field (expected name, stages)");
      }
    }
  } catch (const YAML::Exception& e) {
    return invalidArgument(origin, std::string("malformed YAML: ") + e.what());
  }
  if (job.name.empty()) return invalidArgument("name", "is required");
  if (!have_stages || job.stages.empty()) {
    return invalidArgument("stages", "at least one stage is required");
  }
  std::set<std::string> names;
  for (size_t i = 0; i < job.stages.size(); ++i) {
    if (!names.insert(job.stages[i].name).second) {
      return invalidArgument("stages[" + std::to_string(i) + "].name",
                             "duplicate stage name '" + job.stages[i].name + "'");
    }
  }
  MORPHEUS_RETURN_IF_ERROR(resolveDependencies(&job));
  return job;
}

Result<JobSpec> loadJobSpec(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalidArgument(path, "cannot read job file");
  std::stringstream ss;
  ss << in.rdbuf();
  auto r = parseJobSpec(ss.str(), path);
  if (!r.isOk() && r.status().message().rfind(path + ":", 0) != 0) {
    return r.status().withContext(path);
  }
  return r;
}

}  // namespace morpheus::dagam
