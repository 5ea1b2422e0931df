#include "common/config.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace morpheus {

namespace {

Result<int64_t> parseInt(const std::string& text, const std::string& field) {
  try {
    size_t pos = 0;
    int64_t v = std::stoll(text, &pos);
    if (pos != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    return invalidArgument(field, "'" + text + "' is not an integer");
  }
}

Result<double> parseDouble(const std::string& text, const std::string& field) {
  try {
    size_t pos = 0;
    double v = std::stod(text, &pos);
    if (pos != text.size()) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    return invalidArgument(field, "'" + text + "' is not a number");
  }
}

std::string scalarText(const YAML::Node& n) { return n.as<std::string>(); }

std::vector<std::string> splitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

}  // namespace

namespace {

// Milliseconds per `unit`, or 0 for an unknown unit.
double unitMillis(const std::string& unit) {
  if (unit.empty() || unit == "ms") return 1;
  if (unit == "s") return 1000;
  if (unit == "m" || unit == "min") return 60000;
  if (unit == "h") return 3600000;
  if (unit == "d") return 86400000;
  return 0;
}

}  // namespace

Result<Millis> parseDuration(const std::string& text, const std::string& field) {
  if (text.empty()) return invalidArgument(field, "empty duration");
  const std::string bad = "'" + text + "' is not a duration (e.g. 500ms, 10s, 2m, 1h, 1d, 5h30m)";
  double total = 0;
  size_t i = 0;
  int terms = 0;
  while (i < text.size()) {
    size_t num_start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'))
      i++;
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) i++;
    std::string num = text.substr(num_start, unit_start - num_start);
    std::string unit = text.substr(unit_start, i - unit_start);
    if (num.empty()) return invalidArgument(field, bad);
    double v = 0;
    try {
      size_t pos = 0;
      v = std::stod(num, &pos);
      if (pos != num.size()) return invalidArgument(field, bad);
    } catch (const std::exception&) {
      return invalidArgument(field, bad);
    }
    double mult = unitMillis(unit);
    if (mult == 0) {
      return invalidArgument(field, "unknown duration unit '" + unit + "' (use ms, s, m, h, d)");
    }
    // A bare number means milliseconds only on its own ("500", not "1h30").
    if (unit.empty() && (terms > 0 || i < text.size())) return invalidArgument(field, bad);
    total += v * mult;
    terms++;
  }
  // Converting a double outside int64's range is undefined behaviour: check first.
  if (!(total < 0x1p63)) return invalidArgument(field, "'" + text + "' is too large");
  return Millis(static_cast<int64_t>(total));
}

std::string formatDuration(Millis d) {
  int64_t ms = d.count();
  if (ms != 0 && ms % 86400000 == 0) return std::to_string(ms / 86400000) + "d";
  if (ms != 0 && ms % 3600000 == 0) return std::to_string(ms / 3600000) + "h";
  if (ms != 0 && ms % 60000 == 0) return std::to_string(ms / 60000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

void ConfigSchema::addInt(const std::string& key, int64_t* target, int64_t def, int64_t min,
                          int64_t max, const std::string& unit, const std::string& doc) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    auto v = parseInt(text, key);
    if (!v.isOk()) return v.status();
    if (*v < min || *v > max) {
      return invalidArgument(key, std::to_string(*v) + " is out of range [" + std::to_string(min) +
                                      ", " + std::to_string(max) + "]");
    }
    int64_t val = *v;
    return Commit([target, val] { *target = val; });
  };
  options_.push_back({key, doc + (unit.empty() ? "" : " Unit: " + unit + "."), std::to_string(def),
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (!n.IsScalar()) return invalidArgument(key, "expected an integer");
                        return parse(scalarText(n));
                      },
                      parse});
}

void ConfigSchema::addDouble(const std::string& key, double* target, double def, double min,
                             double max, const std::string& unit, const std::string& doc) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    auto v = parseDouble(text, key);
    if (!v.isOk()) return v.status();
    if (*v < min || *v > max) {
      std::ostringstream os;
      os << *v << " is out of range [" << min << ", " << max << "]";
      return invalidArgument(key, os.str());
    }
    double val = *v;
    return Commit([target, val] { *target = val; });
  };
  std::ostringstream d;
  d << def;
  options_.push_back({key, doc + (unit.empty() ? "" : " Unit: " + unit + "."), d.str(),
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (!n.IsScalar()) return invalidArgument(key, "expected a number");
                        return parse(scalarText(n));
                      },
                      parse});
}

void ConfigSchema::addBool(const std::string& key, bool* target, bool def, const std::string& doc) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    bool v;
    if (text == "true" || text == "yes" || text == "on" || text == "1") {
      v = true;
    } else if (text == "false" || text == "no" || text == "off" || text == "0") {
      v = false;
    } else {
      return invalidArgument(key, "'" + text + "' is not a boolean (true/false)");
    }
    return Commit([target, v] { *target = v; });
  };
  options_.push_back({key, doc, def ? "true" : "false",
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (!n.IsScalar()) return invalidArgument(key, "expected a boolean");
                        return parse(scalarText(n));
                      },
                      parse});
}

void ConfigSchema::addString(const std::string& key, std::string* target, const std::string& def,
                             const std::string& doc, std::vector<std::string> allowed) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    if (!allowed.empty() && std::find(allowed.begin(), allowed.end(), text) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      return invalidArgument(key, "'" + text + "' is not one of: " + list);
    }
    return Commit([target, text] { *target = text; });
  };
  std::string full = doc;
  if (!allowed.empty()) {
    full += " One of:";
    for (const auto& a : allowed) full += " " + a;
    full += ".";
  }
  options_.push_back({key, full, "\"" + def + "\"",
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (!n.IsScalar()) return invalidArgument(key, "expected a string");
                        return parse(scalarText(n));
                      },
                      parse});
}

void ConfigSchema::addDuration(const std::string& key, Millis* target, Millis def, Millis min,
                               const std::string& doc) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    auto v = parseDuration(text, key);
    if (!v.isOk()) return v.status();
    if (*v < min) return invalidArgument(key, "must be at least " + formatDuration(min));
    Millis val = *v;
    return Commit([target, val] { *target = val; });
  };
  options_.push_back({key, doc + " Unit: duration (ms, s, m, h, d).", formatDuration(def),
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (!n.IsScalar()) return invalidArgument(key, "expected a duration");
                        return parse(scalarText(n));
                      },
                      parse});
}

void ConfigSchema::addResource(const std::string& key, Resource* target, const Resource& def,
                               const std::string& doc) {
  *target = def;
  auto parse = [=](const std::string& text) -> Result<Commit> {
    auto v = Resource::parse(text, key);
    if (!v.isOk()) return v.status();
    Resource val = *v;
    return Commit([target, val] { *target = val; });
  };
  std::string def_text =
      "memory=" + std::to_string(def.memoryMib()) + ",vcores=" + std::to_string(def.vcores());
  options_.push_back({key, doc + " Format: memory=MIB,vcores=N[,name=N].", def_text,
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (n.IsScalar()) return parse(scalarText(n));
                        if (!n.IsMap())
                          return invalidArgument(key, "expected memory=MIB,vcores=N or a mapping");
                        std::string text;
                        for (const auto& kv : n) {
                          if (!kv.second.IsScalar())
                            return invalidArgument(key, "values must be integers");
                          text += (text.empty() ? "" : ",") + kv.first.as<std::string>() + "=" +
                                  kv.second.as<std::string>();
                        }
                        return parse(text);
                      },
                      parse});
}

namespace {
// The strings of a YAML sequence; INVALID_ARGUMENT naming `key` when `n` is
// not a sequence of scalars.
Result<std::vector<std::string>> yamlStringList(const std::string& key, const YAML::Node& n) {
  if (!n.IsSequence()) return invalidArgument(key, "expected a list");
  std::vector<std::string> v;
  for (const auto& e : n) {
    if (!e.IsScalar()) return invalidArgument(key, "list items must be strings");
    v.push_back(e.as<std::string>());
  }
  return v;
}
}  // namespace

void ConfigSchema::addStringList(const std::string& key, std::vector<std::string>* target,
                                 std::vector<std::string> def, const std::string& doc) {
  std::string def_text = "[";
  for (const auto& d : def) def_text += (def_text.size() > 1 ? ", " : "") + d;
  def_text += "]";
  *target = std::move(def);
  auto commit = [target](std::vector<std::string> v) {
    return Commit([target, v] { *target = v; });
  };
  options_.push_back(
      {key, doc, def_text,
       [=](const YAML::Node& n) -> Result<Commit> {
         if (n.IsNull()) return commit({});
         MORPHEUS_ASSIGN_OR_RETURN(auto v, yamlStringList(key, n));
         return commit(v);
       },
       [=](const std::string& text) -> Result<Commit> {
         // "[a, b]" is YAML flow syntax: parse it as the list it is, rather than
         // splitting it into the items "[a" and " b]".
         if (!text.empty() && text.front() == '[') {
           YAML::Node n;
           try {
             n = YAML::Load(text);
           } catch (const YAML::Exception& e) {
             return invalidArgument(key, "'" + text + "' is not a valid list: " + e.msg);
           }
           MORPHEUS_ASSIGN_OR_RETURN(auto v, yamlStringList(key, n));
           return commit(v);
         }
         std::vector<std::string> v;
         for (const auto& item : splitComma(text)) {
           if (item.find_first_of("[]{}") != std::string::npos) {
             return invalidArgument(key, "'" + item +
                                             "' is not a list item; write the list as a,b or "
                                             "[a, b]");
           }
           v.push_back(item);
         }
         return commit(v);
       }});
}

void ConfigSchema::addStringMap(const std::string& key, std::map<std::string, std::string>* target,
                                const std::string& doc) {
  target->clear();
  auto commit = [target](std::map<std::string, std::string> v) {
    return Commit([target, v] { *target = v; });
  };
  options_.push_back({key, doc, "{}",
                      [=](const YAML::Node& n) -> Result<Commit> {
                        if (n.IsNull()) return commit({});
                        if (!n.IsMap()) return invalidArgument(key, "expected a mapping");
                        std::map<std::string, std::string> v;
                        for (const auto& kv : n) {
                          if (!kv.second.IsScalar()) {
                            return invalidArgument(key + "." + kv.first.as<std::string>(),
                                                   "expected a scalar");
                          }
                          v[kv.first.as<std::string>()] = kv.second.as<std::string>();
                        }
                        return commit(v);
                      },
                      [=](const std::string& text) -> Result<Commit> {
                        std::map<std::string, std::string> v;
                        for (const auto& item : splitComma(text)) {
                          auto eq = item.find('=');
                          if (eq == std::string::npos || eq == 0) {
                            return invalidArgument(key, "'" + item + "' is not name=value");
                          }
                          v[item.substr(0, eq)] = item.substr(eq + 1);
                        }
                        return commit(v);
                      }});
}

const ConfigSchema::Option* ConfigSchema::find(const std::string& key) const {
  for (const auto& o : options_) {
    if (o.key == key) return &o;
  }
  return nullptr;
}

Status ConfigSchema::walk(const YAML::Node& node, const std::string& prefix,
                          const std::string& origin, std::vector<Commit>* commits) const {
  if (const Option* opt = find(prefix)) {
    auto c = opt->parse_node(node);
    if (!c.isOk()) return c.status().withContext(origin);
    commits->push_back(std::move(c).value());
    return Status::ok();
  }
  if (node.IsMap()) {
    for (const auto& kv : node) {
      std::string k = kv.first.as<std::string>();
      MORPHEUS_RETURN_IF_ERROR(
          walk(kv.second, prefix.empty() ? k : prefix + "." + k, origin, commits));
    }
    return Status::ok();
  }
  if (prefix.empty() && node.IsNull()) return Status::ok();  // empty file
  return invalidArgument(prefix.empty() ? "(top level)" : prefix,
                         "unknown " + component_ + " config key")
      .withContext(origin);
}

Status ConfigSchema::loadYamlString(const std::string& text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, origin + ": not valid YAML at line " +
                                                    std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsNull() && !root.IsMap()) {
    return Status(StatusCode::kInvalidArgument, origin + ": top level must be a mapping");
  }
  std::vector<Commit> commits;
  try {
    MORPHEUS_RETURN_IF_ERROR(walk(root, "", origin, &commits));
  } catch (const YAML::Exception& e) {
    return Status(StatusCode::kInvalidArgument, origin + ": " + e.msg);
  }
  for (auto& c : commits) c();
  return Status::ok();
}

Status ConfigSchema::loadYamlFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status(StatusCode::kInvalidArgument, "config file '" + path + "' cannot be read");
  std::stringstream ss;
  ss << in.rdbuf();
  return loadYamlString(ss.str(), path);
}

Status ConfigSchema::set(const std::string& key, const std::string& value) {
  const Option* opt = find(key);
  if (!opt) return invalidArgument(key, "unknown " + component_ + " config key");
  auto c = opt->parse_text(value);
  if (!c.isOk()) return c.status();
  (*c)();
  return Status::ok();
}

std::string ConfigSchema::describe() const {
  std::ostringstream os;
  os << "# " << component_ << " configuration. Every key may also be given as --set key=value.\n";
  for (const auto& o : options_) {
    os << "# " << o.doc << "\n" << o.key << ": " << o.default_text << "\n";
  }
  return os.str();
}

}  // namespace morpheus
