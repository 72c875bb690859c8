// The per-thread "recent error message" behind aclGetRecentErrMsg. Every layer that refuses
// a call records why here, so the caller can read one message naming the argument at fault.
#pragma once

#include <string>

namespace gs3d {

// Replaces the calling thread's pending message.
void SetRecentError(std::string message);

// Formats like printf into the pending message; returns `code` so a check can be one line:
//   return RecordError(ACLNN_ERR_PARAM_INVALID, "input: expected 5 dims, got %d", n);
int RecordError(int code, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace gs3d
