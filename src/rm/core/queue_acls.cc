#include "rm/core/queue_acls.h"

#include <sstream>

namespace morpheus::rm {

namespace {

Result<std::map<std::string, std::set<std::string>>> parseLists(
    const std::map<std::string, std::string>& raw, const std::string& key) {
  std::map<std::string, std::set<std::string>> out;
  for (const auto& [queue, users] : raw) {
    if (queue.empty() || queue.front() == '.' || queue.back() == '.') {
      return invalidArgument(key, "queue path '" + queue + "' is not a dotted queue path");
    }
    std::istringstream in(users);
    std::set<std::string> names;
    for (std::string u; in >> u;) names.insert(u);
    if (names.empty()) {
      return invalidArgument(key + "." + queue,
                             "lists no user (write '*' for everyone, space-separated names)");
    }
    auto& slot = out[QueueAcls::canonical(queue)];
    slot.insert(names.begin(), names.end());
  }
  return out;
}

}  // namespace

std::string QueueAcls::canonical(const std::string& queue) {
  if (queue == "root" || queue.rfind("root.", 0) == 0) return queue;
  return "root." + queue;
}

Result<QueueAcls> QueueAcls::parse(const std::map<std::string, std::string>& submit,
                                   const std::map<std::string, std::string>& administer,
                                   const std::string& submit_key,
                                   const std::string& administer_key) {
  QueueAcls acls;
  MORPHEUS_ASSIGN_OR_RETURN(acls.submit_, parseLists(submit, submit_key));
  MORPHEUS_ASSIGN_OR_RETURN(acls.administer_, parseLists(administer, administer_key));
  return acls;
}

bool QueueAcls::listed(const Lists& lists, const std::string& user, const std::string& queue,
                       bool* any_list) {
  *any_list = false;
  std::string path = canonical(queue);
  while (true) {
    auto it = lists.find(path);
    if (it != lists.end()) {
      *any_list = true;
      if (it->second.count(user) || it->second.count("*")) return true;
    }
    auto dot = path.rfind('.');
    if (dot == std::string::npos) return false;
    path.resize(dot);
  }
}

bool QueueAcls::mayAdminister(const std::string& user, const std::string& queue) const {
  bool any = false;
  return listed(administer_, user, queue, &any);
}

bool QueueAcls::maySubmit(const std::string& user, const std::string& queue) const {
  if (mayAdminister(user, queue)) return true;
  bool any = false;
  bool ok = listed(submit_, user, queue, &any);
  return ok || !any;
}

}  // namespace morpheus::rm
