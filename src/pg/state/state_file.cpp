#include <cstdio>
#include <cstring>

#include "pg/state/state_file.hpp"

extern "C" {
#include <fcntl.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "storage/fd.h"
}

#include "pg/base/guard.hpp"

namespace shardid::pg {

void node_state_format(const NodeState& st, StringInfo out)
{
    enlargeStringInfo(out, int(node_state_max_text));
    const size_t len = shardid::node_state_format(st, out->data + out->len, node_state_max_text);
    if (len > node_state_max_text)
        elog(ERROR, "shardid node state text is longer than %zu bytes", node_state_max_text);
    out->len += int(len);
    out->data[out->len] = '\0';
}

bool node_state_parse_checked(const char* text, size_t len, NodeState* st)
{
    Status status;
    return guarded(status, [&] { return shardid::node_state_parse(text, len, st) && node_state_check(*st).ok(); });
}

StateFileRead state_file_read(NodeState* st)
{
    *st = NodeState{};
    const int fd = OpenTransientFile(state_file_name, O_RDONLY | PG_BINARY);
    if (fd < 0) {
        if (errno == ENOENT)
            return StateFileRead::missing;
        ereport(WARNING, (errcode_for_file_access(), errmsg("could not open \"%s\": %m", state_file_name)));
        return StateFileRead::corrupt;
    }
    char* buf = static_cast<char*>(palloc(node_state_max_text + 1));
    const ssize_t n = read(fd, buf, node_state_max_text + 1);
    CloseTransientFile(fd);
    const bool ok = n > 0 && size_t(n) <= node_state_max_text && node_state_parse_checked(buf, size_t(n), st);
    pfree(buf);
    if (!ok)
        *st = NodeState{};
    return ok ? StateFileRead::ok : StateFileRead::corrupt;
}

void state_file_write(const NodeState& st)
{
    char tmp_path[64];
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", state_file_name);
    StringInfoData buf;
    initStringInfo(&buf);
    node_state_format(st, &buf);

    const int fd = OpenTransientFile(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
    if (fd < 0)
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not create \"%s\": %m", tmp_path)));
    errno = 0;
    if (write(fd, buf.data, buf.len) != buf.len) {
        if (errno == 0)
            errno = ENOSPC;
        const int save = errno;
        CloseTransientFile(fd);
        errno = save;
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not write \"%s\": %m", tmp_path)));
    }
    if (pg_fsync(fd) != 0) {
        const int save = errno;
        CloseTransientFile(fd);
        errno = save;
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not fsync \"%s\": %m", tmp_path)));
    }
    if (CloseTransientFile(fd) != 0)
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not close \"%s\": %m", tmp_path)));
    durable_rename(tmp_path, state_file_name, ERROR);
    pfree(buf.data);
}

}  // namespace shardid::pg
