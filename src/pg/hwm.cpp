#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pg/hwm.hpp"

extern "C" {
#include <fcntl.h>
#include <unistd.h>

#include "storage/fd.h"
}

namespace shardid::pg {

namespace {
constexpr const char* header = "shardid high-water mark v1\n";
}

HwmRead hwm_read(int64* ms)
{
    *ms = 0;
    const int fd = OpenTransientFile(hwm_path, O_RDONLY | PG_BINARY);
    if (fd < 0) {
        if (errno == ENOENT)
            return HwmRead::missing;
        ereport(WARNING, (errcode_for_file_access(), errmsg("could not open \"%s\": %m", hwm_path)));
        return HwmRead::corrupt;
    }
    char buf[128];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    CloseTransientFile(fd);
    if (n <= 0)
        return HwmRead::corrupt;
    buf[n] = '\0';
    const size_t header_len = strlen(header);
    if (size_t(n) <= header_len || memcmp(buf, header, header_len) != 0)
        return HwmRead::corrupt;
    char* end = nullptr;
    errno = 0;
    const long long value = strtoll(buf + header_len, &end, 10);
    if (errno != 0 || end == buf + header_len || *end != '\n' || end[1] != '\0' || value < 0)
        return HwmRead::corrupt;
    *ms = value;
    return HwmRead::ok;
}

void hwm_write(int64 ms)
{
    char tmp_path[64];
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", hwm_path);
    char buf[128];
    const int len = snprintf(buf, sizeof buf, "%s%lld\n", header, (long long)ms);

    const int fd = OpenTransientFile(tmp_path, O_WRONLY | O_CREAT | O_TRUNC | PG_BINARY);
    if (fd < 0)
        ereport(ERROR, (errcode_for_file_access(), errmsg("could not create \"%s\": %m", tmp_path)));
    errno = 0;
    if (write(fd, buf, len) != len) {
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
    durable_rename(tmp_path, hwm_path, ERROR);
}

}  // namespace shardid::pg
