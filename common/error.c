#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *pw_strerror(int err)
{
    switch (err) {
#define XX(name, msg)                                                                              \
    case PW_##name:                                                                                \
        return msg;
        PW_ERRNO_MAP(XX)
#undef XX
    case 0:
        return "success";
    default:
        break;
    }
    /* libuv's name-lookup errors are not errno values (include/uv/errno.h, UV__EAI_*): the
     * texts are uv_strerror's, without linking libuv into every module. */
    static const char *const eai[] = {"address family not supported",
                                      "temporary failure",
                                      "bad ai_flags value",
                                      "request canceled",
                                      "permanent failure",
                                      "ai_family not supported",
                                      "out of memory",
                                      "no address",
                                      "unknown node or service",
                                      "argument buffer overflow",
                                      "service not available for socket type",
                                      "socket type not supported",
                                      NULL,
                                      "invalid value for hints",
                                      "resolved protocol is unknown"};
    if (err <= -3000 && err >= -3014 && eai[-3000 - err] != NULL)
        return eai[-3000 - err];
    if (err < 0 && err > -4096)
        return strerror(-err);
    return "unknown error";
}

const char *pw_err_name(int err)
{
    switch (err) {
#define XX(name, msg)                                                                              \
    case PW_##name:                                                                                \
        return #name;
        PW_ERRNO_MAP(XX)
#undef XX
    case PW_ENOMEM:
        return "ENOMEM";
    case PW_EINVAL:
        return "EINVAL";
    case PW_EIO:
        return "EIO";
    case PW_ENOENT:
        return "ENOENT";
    case PW_EACCES:
        return "EACCES";
    case PW_EAGAIN:
        return "EAGAIN";
    case PW_ENOSPC:
        return "ENOSPC";
    case PW_ERANGE:
        return "ERANGE";
    case PW_ENOTSUP:
        return "ENOTSUP";
    case PW_EEXIST:
        return "EEXIST";
    case 0:
        return "OK";
    default:
        return "UNKNOWN";
    }
}

int pw_diag_set(pw_diag_t *d, int code, uint32_t line, uint64_t offset, const char *field,
                const char *fmt, ...)
{
    if (d == NULL)
        return code;
    d->code = code;
    d->line = line;
    d->offset = offset;
    snprintf(d->field, sizeof(d->field), "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
    return code;
}

void pw_diag_clear(pw_diag_t *d)
{
    if (d != NULL)
        memset(d, 0, sizeof(*d));
}
