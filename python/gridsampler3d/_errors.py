"""The status codes of the C API, and the exception that carries one."""

# aclnn statuses (aclnn/acl_meta.h) and ACL runtime errors (acl/acl_base.h).
STATUS_NAMES = {
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
    561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
    561103: "ACLNN_ERR_INNER_NULLPTR",
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    200000: "ACL_ERROR_BAD_ALLOC",
    200002: "ACL_ERROR_INVALID_DEVICE",
    500000: "ACL_ERROR_INTERNAL_ERROR",
    500001: "ACL_ERROR_FAILURE",
    500003: "ACL_ERROR_RT_FAILURE",
}
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002


class GridSamplerError(RuntimeError):
    """A call into the C library failed.

    status: the code it returned (an aclnn status or an ACL error);
    api: the C function;
    message: what aclGetRecentErrMsg said about it.
    A RuntimeError, as PyTorch raises for the same bad arguments.
    """

    def __init__(self, api, status, message):
        self.api, self.status, self.message = api, status, message
        name = STATUS_NAMES.get(status, "unknown status")
        # The library's messages already name the function; status and its name go after.
        text = message if message else f"{api} failed"
        super().__init__(f"{text} [status {status}: {name}]")
