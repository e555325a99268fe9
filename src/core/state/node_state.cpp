#include "core/state/node_state.hpp"

#include <cstring>

namespace shardid {

namespace {

constexpr const char* header_v1 = "shardid high-water mark v1\n";
constexpr const char* header_prefix = "shardid node state v";
constexpr int current_version = 3;

bool plain_name_byte(unsigned char c) { return c > ' ' && c <= '~' && c != '%'; }

// A cursor over one line of the text (no NUL bytes, ends before '\n').
struct Cursor {
    const char* p;
    const char* end;

    bool at_end() const { return p == end; }
    bool space()
    {
        if (p == end || *p != ' ')
            return false;
        p++;
        return true;
    }
    bool word(const char* w)
    {
        const size_t n = std::strlen(w);
        if (size_t(end - p) < n || std::memcmp(p, w, n) != 0)
            return false;
        p += n;
        return true;
    }
    // The line's keyword: lowercase letters and '_', up to a space or the
    // end of the line; false (nothing taken) when the line starts otherwise.
    bool keyword(const char** k, size_t* n)
    {
        const char* q = p;
        while (q != end && ((*q >= 'a' && *q <= 'z') || *q == '_'))
            q++;
        if (q == p || (q != end && *q != ' '))
            return false;
        *k = p;
        *n = size_t(q - p);
        p = q;
        return true;
    }
    bool u64(uint64_t* out)
    {
        if (p == end || *p < '0' || *p > '9')
            return false;
        if (*p == '0' && p + 1 != end && p[1] >= '0' && p[1] <= '9')
            return false;  // no leading zeros: one spelling per value
        uint64_t v = 0;
        while (p != end && *p >= '0' && *p <= '9') {
            const uint64_t d = uint64_t(*p - '0');
            if (v > (UINT64_MAX - d) / 10)
                return false;
            v = v * 10 + d;
            p++;
        }
        *out = v;
        return true;
    }
    bool i64(int64_t* out)
    {
        const bool negative = p != end && *p == '-';
        if (negative)
            p++;
        uint64_t v;
        if (!u64(&v))
            return false;
        if (!negative) {
            if (v > uint64_t(INT64_MAX))
                return false;
            *out = int64_t(v);
        } else {
            if (v == 0 || v > uint64_t(INT64_MAX) + 1)
                return false;
            *out = v == uint64_t(INT64_MAX) + 1 ? INT64_MIN : -int64_t(v);
        }
        return true;
    }
    bool u8(uint8_t* out, unsigned max)
    {
        uint64_t v;
        if (!u64(&v) || v > max)
            return false;
        *out = uint8_t(v);
        return true;
    }
    int hexdigit(char c) const
    {
        if (c >= '0' && c <= '9')
            return c - '0';
        if (c >= 'A' && c <= 'F')
            return c - 'A' + 10;
        return -1;
    }
    // An escaped name (version 3), or a plain one up to the next space
    // (version 2).
    bool name(char* out, bool escaped)
    {
        size_t n = 0;
        while (p != end && *p != ' ') {
            unsigned char c = static_cast<unsigned char>(*p);
            if (escaped && c == '%') {
                if (end - p < 3 || hexdigit(p[1]) < 0 || hexdigit(p[2]) < 0)
                    return false;
                c = static_cast<unsigned char>(hexdigit(p[1]) * 16 + hexdigit(p[2]));
                if (c == 0 || plain_name_byte(c))
                    return false;  // one spelling per name
                p += 3;
            } else {
                if (!plain_name_byte(c) && !(c == '%' && !escaped))
                    return false;
                p++;
            }
            if (n == size_t(max_name_len))
                return false;
            out[n++] = char(c);
        }
        out[n] = '\0';
        return n > 0;
    }
};

bool parse_mark_line(Cursor& c, LayoutMark* m, bool escaped)
{
    uint8_t wraps = 0;
    if (!c.space() || !c.name(m->name, escaped) || !c.space() || !c.i64(&m->shape.epoch_ms) || !c.space() ||
        !c.i64(&m->shape.unit_ms) || !c.space() || !c.u8(&m->shape.time_bits, 255) || !c.space() ||
        !c.u8(&m->shape.shard_bits, 255) || !c.space() || !c.u8(&m->shape.sequence_bits, 255) || !c.space() ||
        !c.u8(&m->shape.sequence_first, 255) || !c.space() || !c.u8(&wraps, 1) || !c.space() || !c.u64(&m->word))
        return false;
    m->shape.wraps = wraps != 0;
    return c.at_end();
}

bool parse_int_line(Cursor& c, int64_t* out) { return c.space() && c.i64(out) && c.at_end(); }

// Lines of version 2 or 3, after the header.
bool parse_lines(const char* p, const char* end, int version, NodeState* st)
{
    constexpr size_t n_fields = size_t(node_state_field_count);
    bool have[n_fields] = {};
    while (p != end) {
        const char* eol = static_cast<const char*>(std::memchr(p, '\n', size_t(end - p)));
        if (eol == nullptr)
            return false;  // every line ends with a newline
        Cursor c{p, eol};
        const char* k;
        size_t n;
        if (!c.keyword(&k, &n))
            return false;
        // Keywords are matched whole: "mark_lsn" is not "mark".
        auto is = [&](const char* w) { return std::strlen(w) == n && std::memcmp(k, w, n) == 0; };
        size_t f = 0;
        while (f < n_fields && !(version >= node_state_fields[f].since && is(node_state_fields[f].keyword)))
            f++;
        if (f < n_fields) {
            if (have[f] || !parse_int_line(c, &(st->*node_state_fields[f].member)))
                return false;  // each field once
            have[f] = true;
        } else if (is(version >= 3 ? "layout" : "slot")) {
            if (st->n_marks == NodeState::max_marks || !parse_mark_line(c, &st->marks[st->n_marks], version >= 3))
                return false;
            st->n_marks++;
        } else if (version >= 3 && is("call_era")) {
            int64_t era = 0, key = 0, low = 0;
            if (!c.space() || !c.i64(&era) || !c.space() || !c.i64(&key) || !c.space() || !c.i64(&low) || !c.at_end() ||
                era > call_era_max || low < call_era_none || low > call_era_full ||
                !st->call_eras.append(int(era), key, int32_t(low)))
                return false;  // each era once, ascending
        } else if (version >= 3 && is("adopted")) {
            int64_t history = 0, at_ms = 0;
            if (!c.space() || !c.i64(&history) || !c.space() || !c.i64(&at_ms) || !c.at_end() || history <= 0 ||
                st->adopted.has(history) || !st->adopted.add(history, at_ms))
                return false;  // each history once
        }
        // Otherwise a keyword this reader does not know: skipped (see the header).
        p = eol + 1;
    }
    for (size_t f = 0; f < n_fields; f++)
        if (node_state_fields[f].required && !have[f])
            return false;
    return true;
}

bool parse(const char* text, size_t len, NodeState* st)
{
    if (std::memchr(text, '\0', len) != nullptr)
        return false;
    const char* end = text + len;
    const size_t v1 = std::strlen(header_v1);
    if (len >= v1 && std::memcmp(text, header_v1, v1) == 0) {
        Cursor c{text + v1, end};
        if (!c.i64(&st->mark_ms) || !c.word("\n") || !c.at_end())
            return false;
        return true;
    }
    const size_t hp = std::strlen(header_prefix);
    if (len < hp || std::memcmp(text, header_prefix, hp) != 0)
        return false;
    const char* eol = static_cast<const char*>(std::memchr(text, '\n', len));
    if (eol == nullptr)
        return false;
    Cursor c{text + hp, eol};
    uint64_t version;
    if (!c.u64(&version) || !c.at_end() || version < 2 || version > uint64_t(current_version))
        return false;
    return parse_lines(eol + 1, end, int(version), st);
}

}  // namespace

bool NodeState::operator==(const NodeState& o) const
{
    for (const NodeStateField& f : node_state_fields)
        if (this->*f.member != o.*f.member)
            return false;
    if (n_marks != o.n_marks)
        return false;
    for (int i = 0; i < n_marks; i++)
        if (std::strcmp(marks[i].name, o.marks[i].name) != 0 || marks[i].shape != o.marks[i].shape ||
            marks[i].word != o.marks[i].word)
            return false;
    return call_eras == o.call_eras && adopted == o.adopted;
}

namespace {

// Appends to a caller's buffer without allocating; counts what does not fit.
struct Writer {
    char* out;
    size_t cap;
    size_t len = 0;

    void put(char c)
    {
        if (len < cap)
            out[len] = c;
        len++;
    }
    void put(const char* s)
    {
        while (*s != '\0')
            put(*s++);
    }
    void put_u64(uint64_t v)
    {
        char digits[20];
        int n = 0;
        do {
            digits[n++] = char('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (n > 0)
            put(digits[--n]);
    }
    void put_i64(int64_t v)
    {
        if (v < 0) {
            put('-');
            put_u64(uint64_t(0) - uint64_t(v));
        } else {
            put_u64(uint64_t(v));
        }
    }
    void put_name(const char* name)
    {
        static const char hex[] = "0123456789ABCDEF";
        for (const unsigned char* p = reinterpret_cast<const unsigned char*>(name); *p != '\0'; p++) {
            if (plain_name_byte(*p)) {
                put(char(*p));
            } else {
                put('%');
                put(hex[*p >> 4]);
                put(hex[*p & 15]);
            }
        }
    }
    void line(const char* keyword, int64_t v)
    {
        put(keyword);
        put(' ');
        put_i64(v);
        put('\n');
    }
};

}  // namespace

size_t node_state_format(const NodeState& st, char* out, size_t cap)
{
    Writer w{out, cap};
    w.put(header_prefix);
    w.put_u64(current_version);
    w.put('\n');
    for (const NodeStateField& f : node_state_fields)
        w.line(f.keyword, st.*f.member);
    for (int i = 0; i < st.n_marks && i < NodeState::max_marks; i++) {
        const LayoutMark& m = st.marks[i];
        w.put("layout ");
        w.put_name(m.name);
        const int64_t numbers[2] = {m.shape.epoch_ms, m.shape.unit_ms};
        for (int64_t n : numbers) {
            w.put(' ');
            w.put_i64(n);
        }
        const unsigned small[5] = {m.shape.time_bits, m.shape.shard_bits, m.shape.sequence_bits, m.shape.sequence_first,
                                   m.shape.wraps ? 1u : 0u};
        for (unsigned n : small) {
            w.put(' ');
            w.put_u64(n);
        }
        w.put(' ');
        w.put_u64(m.word);
        w.put('\n');
    }
    for (int i = 0; i < st.call_eras.n && i < call_era_max; i++) {
        w.put("call_era ");
        w.put_i64(st.call_eras.list[i].era);
        w.put(' ');
        w.put_i64(st.call_eras.list[i].key);
        w.put(' ');
        w.put_i64(st.call_eras.list[i].low);
        w.put('\n');
    }
    for (int i = 0; i < st.adopted.n && i < Histories::max; i++) {
        w.put("adopted ");
        w.put_i64(st.adopted.list[i].history);
        w.put(' ');
        w.put_i64(st.adopted.list[i].at_ms);
        w.put('\n');
    }
    return w.len;
}

bool node_state_parse(const char* text, size_t len, NodeState* state)
{
    NodeState parsed;
    if (!parse(text, len, &parsed)) {
        *state = NodeState{};
        return false;
    }
    *state = parsed;
    return true;
}

Status node_state_check(const NodeState& st)
{
    for (int i = 0; i < st.n_marks; i++) {
        const LayoutMark& m = st.marks[i];
        if (m.name[0] == '\0')
            return Status::fail(Error::invalid_parameter, "layout mark %d has no name", i);
        Status s = m.shape.layout(m.name).validate();
        if (!s.ok())
            return s;
        if (!m.shape.wraps && m.shape.time_bits + m.shape.sequence_bits < 64 &&
            (m.word >> (m.shape.time_bits + m.shape.sequence_bits)))
            return Status::fail(Error::invalid_parameter, "the mark of layout \"%s\" does not fit its fields", m.name);
    }
    if (st.history < 0 || (st.awaiting != 0 && st.awaiting != 1))
        return Status::fail(Error::invalid_parameter, "the node state's history fields are invalid");
    return Status();
}

void history_text(int64_t history, char out[history_text_len + 1])
{
    static const char hex[] = "0123456789abcdef";
    const uint64_t v = uint64_t(history);
    for (int i = 0; i < history_text_len; i++)
        out[i] = hex[(v >> (4 * (history_text_len - 1 - i))) & 15];
    out[history_text_len] = '\0';
}

bool history_parse(const char* text, size_t len, int64_t* history)
{
    if (len != size_t(history_text_len))
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        const char c = text[i];
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return false;
        v = (v << 4) | uint64_t(d);
    }
    if (v == 0 || v > uint64_t(INT64_MAX))
        return false;
    *history = int64_t(v);
    return true;
}

bool history_known(const NodeState& node, int64_t history)
{
    return history > 0 && (history == node.history || node.adopted.has(history));
}

Status adopt_check(const NodeState& node, const NodeState& from)
{
    char h[history_text_len + 1];
    history_text(from.history, h);
    if (from.awaiting != 0)
        return Status::fail(Error::invalid_parameter, "the node state given awaits the state of its own predecessor")
            .with_detail("It is the state of a server pg_upgrade wrote into (history %s), not of the server it "
                         "upgraded from.",
                         h)
            .with_hint("Adopt the state of the server this one was upgraded or restored from (its shardid.hwm, read "
                       "after it stopped).");
    if (from.history != 0 && from.history == node.history && node.awaiting != 0)
        return Status::fail(Error::invalid_parameter, "the node state given is this server's own (history %s)", h)
            .with_detail("This server awaits the state of the server pg_upgrade upgraded it from; its own state "
                         "does not cover what that server issued.")
            .with_hint("Adopt the old data directory's shardid.hwm, read after the old server stopped.");
    Histories merged = node.adopted;
    bool fits = from.history == node.history || merged.add(from.history, 0);
    for (int i = 0; i < from.adopted.n && fits; i++)
        fits = from.adopted.list[i].history == node.history || merged.add(from.adopted.list[i].history, 0);
    if (!fits)
        return Status::fail(Error::limit_exceeded, "this node has adopted %d histories, the most it records",
                            Histories::max)
            .with_detail("A node records every history whose state it adopted, so that databases restored from "
                         "them generate here.")
            .with_hint("Generate in databases of fewer origins on this node.");
    return Status();
}

void adopt_histories(NodeState& node, const NodeState& from, int64_t now_ms)
{
    if (from.history != node.history)
        node.adopted.add(from.history, now_ms);
    for (int i = 0; i < from.adopted.n; i++)
        if (from.adopted.list[i].history != node.history)
            node.adopted.add(from.adopted.list[i].history, now_ms);
    node.awaiting = 0;
}

}  // namespace shardid
