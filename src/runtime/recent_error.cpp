#include "runtime/recent_error.h"

#include <cstdarg>
#include <cstdio>
#include <utility>

#include "acl/acl_base.h"

namespace gs3d {
namespace {
// The message not yet read, and the one handed out by the last aclGetRecentErrMsg (kept
// alive until the next call, as CANN specifies).
thread_local std::string pending_message;
thread_local std::string returned_message;
}  // namespace

void SetRecentError(std::string message) { pending_message = std::move(message); }

int RecordError(int code, const char* format, ...) {
    char buffer[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(buffer, sizeof buffer, format, args);
    va_end(args);
    SetRecentError(std::string(buffer) + " (code " + std::to_string(code) + ")");
    return code;
}

}  // namespace gs3d

extern "C" const char* aclGetRecentErrMsg(void) {
    gs3d::returned_message = std::move(gs3d::pending_message);
    gs3d::pending_message.clear();
    return gs3d::returned_message.empty() ? nullptr : gs3d::returned_message.c_str();
}
