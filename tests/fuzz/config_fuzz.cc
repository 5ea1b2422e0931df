// Fuzz target: the config loader (src/common/config.h) with the RM's schema
// (rm::declareRmOptions, every option of morpheus-rm): the whole input as a
// YAML file (loadYamlString), each "key=value" line of it as a --set override
// (set), and each line as a duration (parseDuration).
//
// Properties (config.h's contract): a rejected file or override leaves every
// bound field unchanged (all-or-nothing); an accepted duration formats back to
// text that parses to the same value.
#include <sstream>

#include "common/config.h"
#include "fuzz_util.h"
#include "rm/core/rm_options.h"

using namespace morpheus;

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += s + ",";
  return out;
}

// Every field the RM schema binds, as text: two fingerprints differ exactly
// when some bound field differs.
std::string fingerprint(const rm::RmOptions& o) {
  std::ostringstream f;
  f.precision(17);
  const auto& d = o.daemon;
  f << d.grpc_host << '|' << d.grpc_port << '|' << d.http_host << '|' << d.http_port << '|'
    << d.data_dir << '|' << d.log_level << '|' << d.log_file << '|' << o.node_expiry.count() << '|'
    << o.heartbeat_interval.count() << '|' << joined(o.reservable_queues) << '|' << joined(o.admins)
    << '|' << o.token_file << '|' << o.auth_disabled << '|' << o.state_store << '|'
    << o.state_store_location << '|' << o.inference_address << '|' << o.max_am_attempts << '|'
    << o.preemption_grace.count() << '|' << o.planner_end_points << '|';
  const auto& p = o.planner;
  f << p.step.count() << '|' << p.lcm.count() << '|' << p.one_off_horizon.count() << '|' << p.agent
    << '|' << p.agent_options.alignment_penalty << '|' << p.sharing_policy << '|'
    << p.sharing.instantaneous_max_share << '|' << p.sharing.average_share << '|'
    << p.sharing.average_window.count() << '|';
  f << o.dra.enabled << '|' << o.dra.policy << '|' << o.dra.interval.count() << '|' << o.dra.dra.rho
    << '|' << o.dra.dra.extension.count() << '|' << o.dra.dra.recent.count() << '|'
    << o.dra.jockey.slack << '|' << o.dra.jockey.dead_zone.count() << '|' << o.dra.jockey.hysteresis
    << '|';
  for (const auto& [k, v] : o.queues) f << k << '=' << v << ',';
  return f.str();
}

void fuzzYamlFile(const std::string& text) {
  rm::RmOptions opts;
  ConfigSchema schema("morpheus-rm");
  rm::declareRmOptions(schema, &opts);
  const std::string before = fingerprint(opts);
  Status st = schema.loadYamlString(text, "fuzz.yaml");
  if (!st.isOk()) {
    FUZZ_CHECK(fingerprint(opts) == before, "rejected file changed options: " + st.toString());
  }
}

void fuzzOverride(rm::RmOptions& opts, ConfigSchema& schema, const std::string& line) {
  const size_t eq = line.find('=');
  if (eq == std::string::npos) return;
  const std::string before = fingerprint(opts);
  Status st = schema.set(line.substr(0, eq), line.substr(eq + 1));
  if (!st.isOk()) {
    FUZZ_CHECK(fingerprint(opts) == before, "rejected --set changed options: " + st.toString());
  }
}

void fuzzDuration(const std::string& line) {
  auto d = parseDuration(line, "fuzz");
  if (!d.isOk()) return;
  const std::string text = formatDuration(*d);
  auto again = parseDuration(text, "fuzz");
  FUZZ_CHECK(again.isOk() && *again == *d,
             "duration '" + line + "' -> " + text + " does not parse back to the same value");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(fuzz::asText(data, size));
  fuzzYamlFile(text);
  rm::RmOptions opts;
  ConfigSchema schema("morpheus-rm");
  rm::declareRmOptions(schema, &opts);
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    fuzzOverride(opts, schema, line);
    fuzzDuration(line);
  }
  return 0;
}
