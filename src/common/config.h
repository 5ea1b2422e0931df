// The one config loader (docs/design/conventions.md "Names": every option documents its
// meaning, unit and default where it is declared).
//
// A component declares its options against a ConfigSchema, binding each key
// (dotted path into the YAML file, e.g. "rm.node-expiry") to a field of its
// options struct; the field receives the default immediately. loadYamlFile()
// then applies a file and set() applies a command-line override. Errors are
// INVALID_ARGUMENT naming the key; on error the bound fields are unchanged
// (values are parsed and validated into a staging copy before any is written).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "common/clock.h"
#include "common/resource.h"
#include "common/status.h"

namespace morpheus {

class ConfigSchema {
 public:
  explicit ConfigSchema(std::string component) : component_(std::move(component)) {}

  // Each add* binds `key` to `*target`, assigns the default, and records the
  // documentation. `unit` is printed in describe() ("" for unitless).
  void addInt(const std::string& key, int64_t* target, int64_t def, int64_t min, int64_t max,
              const std::string& unit, const std::string& doc);
  void addDouble(const std::string& key, double* target, double def, double min, double max,
                 const std::string& unit, const std::string& doc);
  void addBool(const std::string& key, bool* target, bool def, const std::string& doc);
  // `allowed` non-empty restricts the value to that set.
  void addString(const std::string& key, std::string* target, const std::string& def,
                 const std::string& doc, std::vector<std::string> allowed = {});
  // Durations are written with a unit suffix: "500ms", "10s", "2m", "1h", "1d",
  // or several together ("5h30m").
  void addDuration(const std::string& key, Millis* target, Millis def, Millis min,
                   const std::string& doc);
  void addResource(const std::string& key, Resource* target, const Resource& def,
                   const std::string& doc);
  // A list of strings (YAML sequence, or comma-separated on the command line).
  void addStringList(const std::string& key, std::vector<std::string>* target,
                     std::vector<std::string> def, const std::string& doc);
  // A free-form map (YAML mapping of scalars), e.g. node attributes or queue weights.
  void addStringMap(const std::string& key, std::map<std::string, std::string>* target,
                    const std::string& doc);

  // Applies a YAML file. Unknown keys, wrong types and out-of-range values are
  // INVALID_ARGUMENT naming the key and the file. All-or-nothing.
  Status loadYamlFile(const std::string& path);
  Status loadYamlString(const std::string& text, const std::string& origin);
  // Applies one override given as text ("--set key=value" or a dedicated flag).
  Status set(const std::string& key, const std::string& value);

  // Human-readable documentation of every option, as commented YAML.
  std::string describe() const;
  const std::string& component() const { return component_; }

 private:
  using Commit = std::function<void()>;
  struct Option {
    std::string key;
    std::string doc;
    std::string default_text;
    // Parses a YAML value; on success returns a closure that writes it.
    std::function<Result<Commit>(const YAML::Node&)> parse_node;
    // Parses a command-line text value.
    std::function<Result<Commit>(const std::string&)> parse_text;
  };
  const Option* find(const std::string& key) const;
  Status walk(const YAML::Node& node, const std::string& prefix, const std::string& origin,
              std::vector<Commit>* commits) const;
  std::string component_;
  std::vector<Option> options_;  // in declaration order
};

// Parses "500ms", "10s", "2m", "1h", "1d" and sums of them written together
// ("5h30m", "1d2h", "1m30s"); a bare number alone = milliseconds. Errors are
// INVALID_ARGUMENT naming `field`.
Result<Millis> parseDuration(const std::string& text, const std::string& field);
std::string formatDuration(Millis d);

}  // namespace morpheus
