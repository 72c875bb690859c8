// Process-wide runtime state: initialisation and context options.
#pragma once

#include <cstdint>

namespace gs3d {

bool RuntimeInitialized();
// ACL_OPT_DETERMINISTIC as last set by aclrtCtxSetSysParamOpt (0 or 1).
int64_t DeterministicOption();

}  // namespace gs3d
