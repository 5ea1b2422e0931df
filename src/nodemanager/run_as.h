// Which local account a container runs as (YARN's LinuxContainerExecutor
// model). The submitting user comes only from the container token the RM
// signed (ContainerTokenInfo::user); nothing in a launch request chooses the
// account.
//
// Modes (nm.run-as):
//  - mapped: each container runs as the local account its submitter maps to:
//    the nm.run-as-map entry for the submitter, else (nm.run-as-same-name)
//    the account of the same name. Accounts below nm.run-as-min-uid (root,
//    system and daemon accounts, the NM's own) are refused. The NM must run
//    as root; the privileged launcher (launch_main.cc) re-validates the
//    account and drops to it before exec.
//  - nm-user: every container runs as the NM's own account: no isolation
//    between users, for a single-user machine. As root only with
//    nm.allow-root-containers, and then logged loudly.
//  - auto (default): mapped when the NM runs as root, else nm-user.
// Thread-safety: immutable after make(); safe to share.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace morpheus::nm {

struct RunAsOptions {
  std::string mode = "auto";                    // nm.run-as
  std::map<std::string, std::string> user_map;  // nm.run-as-map: submitter -> local account
  bool same_name = true;                        // nm.run-as-same-name
  int64_t min_uid = 1000;                       // nm.run-as-min-uid
  bool allow_root = false;                      // nm.allow-root-containers
};

// A local account a container runs as.
struct RunAsAccount {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;
};

class RunAsPolicy {
 public:
  // The default: containers run as the NM's own account, unchecked (unit
  // tests of the runtime; main() always goes through make()).
  RunAsPolicy() = default;

  // Checks `o` against the account the NM runs as (`euid`). INVALID_ARGUMENT
  // naming the option for a malformed map entry or an unknown mode;
  // FAILED_PRECONDITION for mapped mode without root, and for nm-user mode as
  // root without nm.allow-root-containers.
  static Result<RunAsPolicy> make(const RunAsOptions& o, uid_t euid);

  // True when containers run as their submitters' accounts.
  bool mapped() const { return mapped_; }
  // True when containers run as root (nm-user mode, NM is root, explicitly allowed).
  bool runsAsRoot() const { return !mapped_ && euid_ == 0; }
  uid_t minUid() const { return static_cast<uid_t>(min_uid_); }
  // The mode and mapping in one line, for the start-up log.
  std::string describe() const;

  // The account a container of `submitter` runs as. In nm-user mode the NM's
  // own. In mapped mode PERMISSION_DENIED naming the submitter when it has no
  // account here, the account is below nm.run-as-min-uid, or the submitter is
  // empty (a token issued without one); leaves no state either way.
  Result<RunAsAccount> accountFor(const std::string& submitter) const;

 private:
  bool mapped_ = false;
  uid_t euid_ = ::geteuid();
  int64_t min_uid_ = 1000;
  bool same_name_ = true;
  std::map<std::string, std::string> map_;
};

// A portable local account name: 1 to 32 of [a-z0-9_.-], starting with a
// letter or '_' (useradd's default rule, without the trailing '$').
bool validAccountName(const std::string& name);

// The account `name` from the passwd database; NOT_FOUND when none.
Result<RunAsAccount> lookupAccount(const std::string& name);

}  // namespace morpheus::nm
