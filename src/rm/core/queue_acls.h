// YARN-style queue ACLs of the RM (docs/operator/security.md): per
// queue, who may submit (applications, reservations) and who may administer
// (kill, delete, update, read logs of anyone's work in it).
//
// Contract:
//  - Queue names are dotted paths. A name that does not start with "root" is
//    read as "root.<name>", so the reservable queue "default" and the ad-hoc
//    queue "root.default" share one ACL entry.
//  - A parent's ACL applies to its children, as in YARN: a user listed on
//    root.prod may submit to (or administer) root.prod.etl.
//  - administer: only users listed on the queue or an ancestor ("*" = everyone).
//    RM admins are not consulted here; the caller checks them first.
//  - submit: a queue with no submit list on it or any ancestor is open to
//    everyone; otherwise the user must be listed on one of them. A queue's
//    administrators may also submit to it (YARN).
// Thread-safety: immutable after parse(); const methods may be called from any
// thread.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/status.h"

namespace morpheus::rm {

class QueueAcls {
 public:
  QueueAcls() = default;
  // `submit` / `administer`: queue path -> whitespace-separated user names,
  // "*" = everyone. INVALID_ARGUMENT naming `submit_key.<queue>` (or the
  // administer key) for an empty queue path or an empty user list.
  static Result<QueueAcls> parse(const std::map<std::string, std::string>& submit,
                                 const std::map<std::string, std::string>& administer,
                                 const std::string& submit_key = "rm.queue-acls.submit",
                                 const std::string& administer_key = "rm.queue-acls.administer");

  bool maySubmit(const std::string& user, const std::string& queue) const;
  bool mayAdminister(const std::string& user, const std::string& queue) const;

  // "default" -> "root.default"; "root.x" unchanged.
  static std::string canonical(const std::string& queue);

 private:
  using Lists = std::map<std::string, std::set<std::string>>;  // canonical path -> users
  // True when `user` (or "*") is listed on `queue` or an ancestor; *listed
  // tells whether any of them has a list at all.
  static bool listed(const Lists& lists, const std::string& user, const std::string& queue,
                     bool* any_list);

  Lists submit_;
  Lists administer_;
};

}  // namespace morpheus::rm
