#include "rm/runtime/config_reload.h"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "rm/runtime/queue_policies.h"

namespace morpheus::rm {

const std::vector<std::string> kReloadableOptions = {"scheduler.queues",
                                                     "scheduler.policy",
                                                     "scheduler.max-running-apps",
                                                     "scheduler.max-resources",
                                                     "scheduler.user-max-running-apps",
                                                     "rm.queue-acls.submit",
                                                     "rm.queue-acls.administer",
                                                     "rm.admins",
                                                     "rm.token-file"};

namespace {

Result<std::string> readText(const std::string& path, const std::string& field) {
  std::ifstream in(path);
  if (!in) return invalidArgument(field, "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every leaf of a YAML document as "dotted.key" -> its text, so that
// "rm: {admins: [ops]}" and "rm.admins: [ops]" compare equal.
void flatten(const YAML::Node& node, const std::string& prefix,
             std::map<std::string, std::string>* out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      flatten(kv.second, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  YAML::Emitter e;
  e << YAML::Flow << node;
  (*out)[prefix] = e.c_str();
}

std::map<std::string, std::string> flattenText(const std::string& text) {
  std::map<std::string, std::string> out;
  try {
    YAML::Node root = YAML::Load(text);
    if (root.IsMap()) flatten(root, "", &out);
  } catch (const YAML::Exception&) {
    // The schema refused it already; an unparsable old text compares as empty.
  }
  return out;
}

// The reloadable option `key` belongs to, or "".
std::string reloadableOf(const std::string& key) {
  for (const auto& r : kReloadableOptions) {
    if (key == r || key.rfind(r + ".", 0) == 0) return r;
  }
  return "";
}

// The token table of `path` under the RM's token-file checks.
Result<std::map<std::string, Principal>> loadTokens(const std::string& path,
                                                    SecretFileCheck check) {
  if (path.empty()) {
    return invalidArgument("rm.token-file",
                           "is required (bearer tokens of users, admins and nodes); set "
                           "rm.auth-disabled: true only for tests");
  }
  MORPHEUS_RETURN_IF_ERROR(checkSecretFile(path, "rm.token-file", check));
  auto tokens = loadTokenFile(path);
  if (!tokens.isOk()) return tokens.status().withContext("rm.token-file");
  return tokens;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out.empty() ? "none" : out;
}

}  // namespace

Result<std::map<std::string, double>> parseQueueWeights(
    const std::map<std::string, std::string>& queues) {
  std::map<std::string, double> out;
  for (const auto& [path, weight] : queues) {
    char* end = nullptr;
    double w = std::strtod(weight.c_str(), &end);
    if (end == weight.c_str() || *end != '\0' || !(w > 0)) {
      return invalidArgument("scheduler.queues." + path,
                             "weight must be a number > 0, got '" + weight + "'");
    }
    out[path] = w;
  }
  return out;
}

std::set<std::string> leafQueues(const std::map<std::string, std::string>& queues) {
  std::set<std::string> leaves;
  for (const auto& [path, weight] : queues) {
    bool parent = false;
    for (const auto& [other, w2] : queues) parent = parent || other.rfind(path + ".", 0) == 0;
    if (!parent) leaves.insert(path);
  }
  if (leaves.empty()) leaves.insert("root.default");
  return leaves;
}

ConfigReloader::ConfigReloader(RmOptions running, DaemonConfigSource source, ReloadTargets targets,
                               MetricsRegistry& metrics)
    : source_(std::move(source)),
      targets_(targets),
      metrics_(metrics),
      current_(std::move(running)) {
  if (!source_.file.empty()) {
    if (auto text = readText(source_.file, "--config"); text.isOk()) file_text_ = *text;
  }
  if (!current_.auth_disabled && !current_.token_file.empty()) {
    if (auto text = readText(current_.token_file, "rm.token-file"); text.isOk())
      token_text_ = *text;
  }
}

Result<ReloadReport> ConfigReloader::reload() {
  MutexLock lk(mu_);
  auto r = reloadLocked();
  (r.isOk() ? metrics_.applied : metrics_.refused).inc();
  if (!r.isOk()) {
    spdlog::error("config reload refused, the running config is unchanged: {}",
                  r.status().message());
  } else {
    spdlog::info("config reloaded{}: applied {}; needs a restart: {}",
                 source_.file.empty() ? "" : " from " + source_.file, joined(r->changed),
                 joined(r->restart_required));
  }
  return r;
}

Result<ReloadReport> ConfigReloader::reloadLocked() {
  ReloadReport report;
  report.config_file = source_.file;
  // 1. The new options, as start-up reads them (the schema names the key and the file).
  std::string text;
  RmOptions next;
  ConfigSchema schema("morpheus-rm");
  declareRmOptions(schema, &next);
  if (!source_.file.empty()) {
    MORPHEUS_ASSIGN_OR_RETURN(text, readText(source_.file, "--config"));
    MORPHEUS_RETURN_IF_ERROR(schema.loadYamlString(text, source_.file));
  }
  for (const auto& [k, v] : source_.overrides) MORPHEUS_RETURN_IF_ERROR(schema.set(k, v));

  // 2. Validate what is applied; nothing is touched before all of it passed.
  MORPHEUS_ASSIGN_OR_RETURN(QueueAcls acls,
                            QueueAcls::parse(next.queue_acls_submit, next.queue_acls_administer));
  MORPHEUS_ASSIGN_OR_RETURN(auto weights, parseQueueWeights(next.queues));
  const std::set<std::string> leaves = leafQueues(current_.queues);
  std::set<std::string> old_paths, new_paths;
  for (const auto& [p, _] : current_.queues) old_paths.insert(p);
  for (const auto& [p, _] : next.queues) new_paths.insert(p);
  const bool queue_set_changed = old_paths != new_paths;
  if (queue_set_changed) {
    MORPHEUS_ASSIGN_OR_RETURN(weights, parseQueueWeights(current_.queues));
  }
  // scheduler.carbyne.* and scheduler.phoenix.* are read at start-up: new
  // carbyne and phoenix leaves get the running settings, and a changed key
  // is reported as needing a restart (refused now if the restart would
  // refuse it).
  MORPHEUS_RETURN_IF_ERROR(validateCarbyneRmOptions(next.carbyne));
  MORPHEUS_RETURN_IF_ERROR(validatePhoenixRmOptions(next.phoenix));
  RuntimeOptions policies;
  MORPHEUS_RETURN_IF_ERROR(resolveQueuePolicies(next.queue_policies, leaves, current_.carbyne,
                                                &policies, current_.phoenix));
  // Limits name the queues the RM runs (the set is fixed until a restart).
  const std::set<std::string> adhoc_paths = adhocQueuePaths(current_.queues);
  MORPHEUS_ASSIGN_OR_RETURN(QueueLimits limits,
                            parseQueueLimits(next.queue_max_running_apps, next.queue_max_resources,
                                             next.user_max_running_apps, adhoc_paths));
  std::optional<std::map<std::string, Principal>> tokens;
  std::string token_text;
  const bool auth_on = !current_.auth_disabled;
  if (auth_on) {
    MORPHEUS_ASSIGN_OR_RETURN(tokens, loadTokens(next.token_file, tokenFileCheck(next.daemon)));
    MORPHEUS_ASSIGN_OR_RETURN(token_text, readText(next.token_file, "rm.token-file"));
  }

  // 3. What changed: applied options by value, the others from the file.
  auto note = [&report](const std::string& key, bool changed) {
    if (changed) report.changed.push_back(key);
  };
  note("scheduler.queues", !queue_set_changed && next.queues != current_.queues);
  note("scheduler.policy", next.queue_policies != current_.queue_policies);
  note("scheduler.max-running-apps",
       next.queue_max_running_apps != current_.queue_max_running_apps);
  note("scheduler.max-resources", next.queue_max_resources != current_.queue_max_resources);
  note("scheduler.user-max-running-apps",
       next.user_max_running_apps != current_.user_max_running_apps);
  note("rm.queue-acls.submit", next.queue_acls_submit != current_.queue_acls_submit);
  note("rm.queue-acls.administer", next.queue_acls_administer != current_.queue_acls_administer);
  note("rm.admins", next.admins != current_.admins);
  note("rm.token-file",
       auth_on && (next.token_file != current_.token_file || token_text != token_text_));
  if (queue_set_changed) {
    report.restart_required.push_back("scheduler.queues (a queue added or removed)");
  }
  const auto before = flattenText(file_text_), after = flattenText(text);
  std::set<std::string> keys;
  for (const auto& [k, _] : before) keys.insert(k);
  for (const auto& [k, _] : after) keys.insert(k);
  for (const auto& k : keys) {
    auto b = before.find(k), a = after.find(k);
    bool differs = b == before.end() || a == after.end() || b->second != a->second;
    if (differs && reloadableOf(k).empty()) report.restart_required.push_back(k);
  }

  // 4. Apply. Only the runtime's two calls may refuse; they go first, and a
  // refusal of the second puts the first back.
  if (targets_.runtime != nullptr) {
    MORPHEUS_RETURN_IF_ERROR(targets_.runtime->setQueueMaxResources(limits.max_resources));
    if (Status st = targets_.runtime->setQueueConfig(weights, policies.queue_policies);
        !st.isOk()) {
      auto old = parseQueueLimits(current_.queue_max_running_apps, current_.queue_max_resources,
                                  current_.user_max_running_apps, adhoc_paths);
      // The old limits were accepted when they were applied: a refusal to
      // put them back leaves the runtime half-reloaded, and the caller hears
      // of both failures.
      Status back =
          old.isOk() ? targets_.runtime->setQueueMaxResources(old->max_resources) : old.status();
      if (!back.isOk()) {
        spdlog::error("config reload: the queue limits could not be put back after a refusal: {}",
                      back.toString());
        return internalError(st.message() +
                             "; putting back the queue limits failed: " + back.toString());
      }
      return st;
    }
  }
  if (targets_.apps != nullptr) targets_.apps->setLimits(limits);
  if (auth_on && targets_.auth != nullptr) targets_.auth->replaceTokens(std::move(*tokens));
  if (targets_.access != nullptr) {
    targets_.access->reload({next.admins.begin(), next.admins.end()}, std::move(acls));
  }
  if (!queue_set_changed) current_.queues = next.queues;
  current_.queue_policies = next.queue_policies;
  current_.queue_max_running_apps = next.queue_max_running_apps;
  current_.queue_max_resources = next.queue_max_resources;
  current_.user_max_running_apps = next.user_max_running_apps;
  current_.queue_acls_submit = next.queue_acls_submit;
  current_.queue_acls_administer = next.queue_acls_administer;
  current_.admins = next.admins;
  if (auth_on) {
    current_.token_file = next.token_file;
    token_text_ = token_text;
  }
  return report;
}

}  // namespace morpheus::rm
