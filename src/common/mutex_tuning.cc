#include "common/mutex_tuning.h"

#include <absl/synchronization/mutex.h>

namespace morpheus {

void disableAbseilDeadlockDetection() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace morpheus
