// Fuzz target: run-history import, "native" format (src/inference/model/run_import.h),
// as `morpheusctl history import --format native` and the inference service read it.
#include "history_fuzz.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  morpheus::fuzz::quietLogs();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return morpheus::fuzz::fuzzRunHistory(data, size, "native");
}
