#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "pg/hwm.hpp"

extern "C" {
#include <fcntl.h>
#include <unistd.h>

#include "lib/stringinfo.h"
#include "storage/fd.h"
}

namespace shardid::pg {

namespace {
constexpr const char* header_v1 = "shardid high-water mark v1\n";
constexpr const char* header_v2 = "shardid node state v2\n";
constexpr size_t max_file = 16384;

bool parse_int(const char*& p, long long* out)
{
    char* end = nullptr;
    errno = 0;
    const long long v = strtoll(p, &end, 10);
    if (errno != 0 || end == p)
        return false;
    *out = v;
    p = end;
    return true;
}

bool parse_v2(const char* p, NodeState* st)
{
    bool have_mark = false;
    while (*p != '\0') {
        long long v[9];
        if (strncmp(p, "mark ", 5) == 0) {
            p += 5;
            if (!parse_int(p, &v[0]) || v[0] < 0)
                return false;
            st->mark_ms = v[0];
            have_mark = true;
        } else if (strncmp(p, "generator ", 10) == 0) {
            p += 10;
            if (!parse_int(p, &v[0]) || v[0] < -1)
                return false;
            st->generator_floor = v[0];
        } else if (strncmp(p, "run ", 4) == 0) {
            p += 4;
            if (!parse_int(p, &v[0]) || v[0] < -1)
                return false;
            st->run_floor = v[0];
        } else if (strncmp(p, "slot ", 5) == 0) {
            p += 5;
            if (st->n_slots == max_slot_marks)
                return false;
            SlotMark& m = st->slots[st->n_slots];
            size_t n = strcspn(p, " \n");
            if (n == 0 || n >= sizeof m.name)
                return false;
            memcpy(m.name, p, n);
            m.name[n] = '\0';
            p += n;
            for (int i = 0; i < 8; i++)
                if (*p++ != ' ' || !parse_int(p, &v[i]) || v[i] < 0)
                    return false;
            if (v[1] < 1 || v[2] > 63 || v[3] > 63 || v[4] > 63 || v[5] > 1 || v[6] > 1)
                return false;
            m.epoch_ms = v[0];
            m.unit_ms = v[1];
            m.time_bits = uint8_t(v[2]);
            m.shard_bits = uint8_t(v[3]);
            m.sequence_bits = uint8_t(v[4]);
            m.sequence_first = uint8_t(v[5]);
            m.wraps = v[6] != 0;
            m.word = uint64_t(v[7]);
            st->n_slots++;
        } else {
            return false;
        }
        if (*p++ != '\n')
            return false;
    }
    return have_mark;
}
}  // namespace

bool node_state_parse(const char* text, size_t len, NodeState* st)
{
    *st = NodeState{};
    if (strnlen(text, len) != len)
        return false;
    char* buf = pnstrdup(text, len);
    NodeState parsed;
    bool ok;
    const size_t v1 = strlen(header_v1), v2 = strlen(header_v2);
    if (strncmp(buf, header_v1, v1) == 0) {
        const char* p = buf + v1;
        long long mark;
        ok = parse_int(p, &mark) && mark >= 0 && strcmp(p, "\n") == 0;
        parsed.mark_ms = mark;
    } else {
        ok = strncmp(buf, header_v2, v2) == 0 && parse_v2(buf + v2, &parsed);
    }
    pfree(buf);
    if (ok)
        *st = parsed;
    return ok;
}

void node_state_format(const NodeState& st, StringInfo out)
{
    appendStringInfoString(out, header_v2);
    appendStringInfo(out, "mark %lld\ngenerator %lld\nrun %lld\n", (long long)st.mark_ms,
                     (long long)st.generator_floor, (long long)st.run_floor);
    for (int i = 0; i < st.n_slots; i++) {
        const SlotMark& m = st.slots[i];
        appendStringInfo(out, "slot %s %lld %lld %u %u %u %u %u %llu\n", m.name, (long long)m.epoch_ms,
                         (long long)m.unit_ms, m.time_bits, m.shard_bits, m.sequence_bits, m.sequence_first,
                         unsigned(m.wraps), (unsigned long long)m.word);
    }
}

HwmRead hwm_read(NodeState* st)
{
    *st = NodeState{};
    const int fd = OpenTransientFile(hwm_path, O_RDONLY | PG_BINARY);
    if (fd < 0) {
        if (errno == ENOENT)
            return HwmRead::missing;
        ereport(WARNING, (errcode_for_file_access(), errmsg("could not open \"%s\": %m", hwm_path)));
        return HwmRead::corrupt;
    }
    char* buf = static_cast<char*>(palloc(max_file + 1));
    const ssize_t n = read(fd, buf, max_file);
    CloseTransientFile(fd);
    const bool ok = n > 0 && size_t(n) < max_file && node_state_parse(buf, size_t(n), st);
    pfree(buf);
    return ok ? HwmRead::ok : HwmRead::corrupt;
}

void hwm_write(const NodeState& st)
{
    char tmp_path[64];
    snprintf(tmp_path, sizeof tmp_path, "%s.tmp", hwm_path);
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
    durable_rename(tmp_path, hwm_path, ERROR);
    pfree(buf.data);
}

}  // namespace shardid::pg
