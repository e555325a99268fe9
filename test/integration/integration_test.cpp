// Integration tests against a real server (libpqxx 6): concurrent backends
// never collide, and a backend whose clock stepped back still issues larger
// IDs. Connects to $SHARDID_TEST_DSN; prints PASS/FAIL lines.
#include <pqxx/pqxx>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

std::string dsn;
int n_failed = 0;

struct Failure {
    std::string what;
};

void check(bool ok, const std::string& what)
{
    if (!ok)
        throw Failure{what};
}

void run(const char* name, const std::function<void()>& test)
{
    try {
        test();
        std::cout << "PASS " << name << std::endl;
        return;
    } catch (const Failure& f) {
        std::cout << "FAIL " << name << ": " << f.what << std::endl;
    } catch (const std::exception& e) {
        std::cout << "FAIL " << name << ": exception: " << e.what() << std::endl;
    }
    n_failed++;
}

// Generates `batches` x `batch` IDs of `expr` on one connection, in
// generation order.
std::vector<int64_t> generate(pqxx::connection& c, const std::string& expr, int batches, int batch)
{
    std::vector<int64_t> ids;
    ids.reserve(size_t(batches) * batch);
    const std::string sql = "SELECT " + expr + " FROM generate_series(1, " + std::to_string(batch) + ")";
    for (int b = 0; b < batches; b++) {
        pqxx::nontransaction tx(c);
        for (const auto& row : tx.exec(sql))
            ids.push_back(row[0].as<int64_t>());
    }
    return ids;
}

bool strictly_increasing(const std::vector<int64_t>& v)
{
    return std::adjacent_find(v.begin(), v.end(), [](int64_t a, int64_t b) { return b <= a; }) == v.end();
}

// Runs `per_connection` on `n` connections at once; returns what each made.
std::vector<std::vector<int64_t>> in_parallel(int n, const std::function<std::vector<int64_t>(pqxx::connection&)>& body)
{
    std::vector<std::unique_ptr<pqxx::connection>> conns;
    for (int i = 0; i < n; i++)
        conns.push_back(std::make_unique<pqxx::connection>(dsn));
    std::vector<std::vector<int64_t>> out(n);
    std::vector<std::string> errors;
    std::mutex mu;
    std::vector<std::thread> threads;
    for (int i = 0; i < n; i++)
        threads.emplace_back([&, i] {
            try {
                out[i] = body(*conns[i]);
            } catch (const std::exception& e) {
                std::lock_guard<std::mutex> g(mu);
                errors.push_back(e.what());
            }
        });
    for (auto& t : threads)
        t.join();
    check(errors.empty(), errors.empty() ? "" : "a connection failed: " + errors.front());
    return out;
}

size_t duplicates(std::vector<std::vector<int64_t>> per_connection)
{
    std::vector<int64_t> all;
    for (auto& v : per_connection)
        all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end());
    return all.size() - size_t(std::unique(all.begin(), all.end()) - all.begin());
}

int64_t scalar(pqxx::connection& c, const std::string& sql)
{
    pqxx::nontransaction tx(c);
    return tx.exec(sql)[0][0].as<int64_t>();
}

void test_concurrent_trace_ids()
{
    constexpr int connections = 8, batches = 100, batch = 1000;
    auto ids =
        in_parallel(connections, [](pqxx::connection& c) { return generate(c, "next_trace_id()", batches, batch); });
    size_t total = 0;
    for (int i = 0; i < connections; i++) {
        total += ids[i].size();
        check(ids[i].size() == size_t(batches) * batch, "connection " + std::to_string(i) + " got too few IDs");
        check(strictly_increasing(ids[i]), "connection " + std::to_string(i) + " saw IDs that did not increase");
    }
    const size_t dups = duplicates(ids);
    std::cout << "  " << total << " IDs from " << connections << " connections, " << dups << " duplicates" << std::endl;
    check(total == 800000, "expected 800000 IDs");
    check(dups == 0, std::to_string(dups) + " duplicate IDs");
}

// A setting of the whole server (no session may set shardid.clock_offset_ms)
// changed with ALTER SYSTEM and a reload ("" resets it), waited for until a
// new session has it: its pg_conf_load_time() is the postmaster's reload.
void node_setting(const std::string& name, const std::string& value)
{
    pqxx::connection c(dsn);
    pqxx::nontransaction t(c);
    t.exec("LOAD 'shardid'");  // its settings are known without preloading too
    t.exec(value.empty() ? "ALTER SYSTEM RESET " + name : "ALTER SYSTEM SET " + name + " = '" + value + "'");
    const std::string asked = t.exec("SELECT clock_timestamp()::text")[0][0].as<std::string>();
    t.exec("SELECT pg_reload_conf()");
    for (int i = 0; i < 100; i++) {
        pqxx::connection n(dsn);
        if (pqxx::nontransaction(n).exec("SELECT pg_conf_load_time() >= '" + asked + "'")[0][0].as<bool>())
            return;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    check(false, "the reload that sets " + name + " did not show within 10 s");
}

void test_clock_step_back_while_sessions_run()
{
    pqxx::connection normal(dsn);
    const int64_t before = generate(normal, "next_trace_id()", 1, 1000).back();
    node_setting("shardid.clock_offset_ms", "-60000");
    pqxx::connection stepped(dsn);
    const auto after = generate(stepped, "next_trace_id()", 10, 1000);
    check(after.front() > before, "a server whose clock stepped a minute back issued an ID below an earlier one");
    check(strictly_increasing(after), "IDs after the clock stepped back did not increase");
    node_setting("shardid.clock_offset_ms", "");

    // The clock steps back while four sessions generate: each takes the
    // reload at its next statement, so for a while some read the normal
    // clock and some the stepped one. No collision between them.
    std::string step_failed;
    std::thread step([&step_failed] {
        try {
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
            node_setting("shardid.clock_offset_ms", "-60000");
        } catch (const Failure& f) {
            step_failed = f.what;
        } catch (const std::exception& e) {
            step_failed = e.what();
        }
    });
    std::vector<std::vector<int64_t>> ids;
    try {
        ids = in_parallel(4, [](pqxx::connection& c) { return generate(c, "next_trace_id()", 50, 1000); });
    } catch (...) {
        step.join();
        throw;
    }
    step.join();
    node_setting("shardid.clock_offset_ms", "");
    check(step_failed.empty(), "stepping the clock back failed: " + step_failed);
    for (auto& v : ids)
        check(strictly_increasing(v), "IDs did not increase within a connection");
    check(duplicates(ids) == 0, "duplicates between sessions of the normal and the stepped-back clock");
}

// Every connection generates with `expr`; no duplicates, increasing per
// connection.
void check_concurrent(const std::string& expr, int connections, int batches)
{
    auto ids = in_parallel(connections, [&](pqxx::connection& c) { return generate(c, expr, batches, 1000); });
    for (auto& v : ids)
        check(strictly_increasing(v), expr + ": IDs did not increase within a connection");
    const size_t dups = duplicates(ids);
    std::cout << "  " << expr << ": " << connections * batches * 1000 << " IDs from " << connections << " connections, "
              << dups << " duplicates" << std::endl;
    check(dups == 0, expr + ": " + std::to_string(dups) + " duplicates");
}

void test_concurrent_layouts()
{
    check_concurrent("next_snowflake_id()", 4, 50);
    check_concurrent("next_instagram_id(1341)", 4, 50);
    check_concurrent("next_id('twitter', 5)", 4, 25);
    // 64 per ms per generator: time-sequential eight-byte ids read as bigints.
    check_concurrent("eightbyte_id_to_bigint(next_eightbyte_id('time_sequential'))", 4, 10);
}

void test_concurrent_counters()
{
    check_concurrent("next_decimal_id()", 4, 25);
    // Call numbers are text: 4 connections x 20,000 (each crosses a run
    // boundary at 16,384), all distinct.
    std::vector<std::unique_ptr<pqxx::connection>> conns;
    for (int i = 0; i < 4; i++)
        conns.push_back(std::make_unique<pqxx::connection>(dsn));
    std::vector<std::vector<std::string>> got(4);
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; i++)
        threads.emplace_back([&, i] {
            try {
                pqxx::nontransaction tx(*conns[i]);
                for (const auto& row : tx.exec("SELECT next_call_number() FROM generate_series(1, 20000)"))
                    got[i].push_back(row[0].as<std::string>());
            } catch (const std::exception&) {
            }
        });
    for (auto& t : threads)
        t.join();
    std::vector<std::string> all;
    for (auto& v : got)
        all.insert(all.end(), v.begin(), v.end());
    check(all.size() == 80000, "expected 80000 call numbers, got " + std::to_string(all.size()));
    std::sort(all.begin(), all.end());
    const size_t dups = all.size() - size_t(std::unique(all.begin(), all.end()) - all.begin());
    std::cout << "  next_call_number(): 80000 from 4 connections, " << dups << " duplicates" << std::endl;
    check(dups == 0, std::to_string(dups) + " duplicate call numbers");
}

// A key dropped and made again in one session is not used stale by
// another session that had it cached.
void test_key_rotation_reaches_other_sessions()
{
    pqxx::connection admin(dsn), user(dsn);
    pqxx::nontransaction(admin).exec(
        "DROP TABLE IF EXISTS it_k; SELECT drop_obfuscation_key(name) FROM shardid_key WHERE name = 'it_rot'; "
        "SELECT create_obfuscation_key('it_rot', '\\x00112233445566778899aabbccddeeff')");
    const int64_t before = scalar(user, "SELECT obfuscate_id(42, 'it_rot')");  // cached in `user` now
    pqxx::nontransaction(admin).exec("SELECT drop_obfuscation_key('it_rot'); "
                                     "SELECT create_obfuscation_key('it_rot', '\\xffeeddccbbaa99887766554433221100')");
    const int64_t expected = scalar(admin, "SELECT obfuscate_id(42, 'it_rot')");
    const int64_t after = scalar(user, "SELECT obfuscate_id(42, 'it_rot')");
    check(before != expected, "the two keys gave the same output");
    check(after == expected, "another session kept using the dropped key");
}

void test_concurrent_column_defaults()
{
    pqxx::connection setup(dsn);
    pqxx::nontransaction(setup).exec(
        "DROP TABLE IF EXISTS it_orders; "
        "CREATE TABLE it_orders (id bigint PRIMARY KEY DEFAULT next_trace_id(), conn int, n int)");
    in_parallel(4, [](pqxx::connection& c) {
        const int64_t me = scalar(c, "SELECT pg_backend_pid()");
        for (int b = 0; b < 20; b++) {
            pqxx::work tx(c);
            tx.exec("INSERT INTO it_orders (conn, n) SELECT " + std::to_string(me) +
                    ", g FROM generate_series(1, 500) g");
            tx.commit();
        }
        return std::vector<int64_t>{};
    });
    check(scalar(setup, "SELECT count(*) FROM it_orders") == 40000, "expected 40000 rows");
    check(scalar(setup, "SELECT count(DISTINCT id) FROM it_orders") == 40000, "duplicate keys");
    pqxx::nontransaction(setup).exec("DROP TABLE it_orders");

    // Spread eight-byte ids as a bytea primary key, inserted from 4 connections.
    pqxx::nontransaction(setup).exec(
        "DROP TABLE IF EXISTS it_kv; CREATE TABLE it_kv (id bytea PRIMARY KEY DEFAULT next_eightbyte_id(), n int)");
    in_parallel(4, [](pqxx::connection& c) {
        for (int b = 0; b < 10; b++) {
            pqxx::work tx(c);
            tx.exec("INSERT INTO it_kv (n) SELECT g FROM generate_series(1, 500) g");
            tx.commit();
        }
        return std::vector<int64_t>{};
    });
    check(scalar(setup, "SELECT count(DISTINCT id) FROM it_kv") == 20000, "eight-byte keys missing or duplicated");
    pqxx::nontransaction(setup).exec("DROP TABLE it_kv");
}

}  // namespace

int main()
{
    const char* env = std::getenv("SHARDID_TEST_DSN");
    if (env == nullptr) {
        std::cerr << "set SHARDID_TEST_DSN to a libpq connection string" << std::endl;
        return 2;
    }
    dsn = env;
    try {
        pqxx::connection c(dsn);
        pqxx::nontransaction(c).exec("CREATE EXTENSION IF NOT EXISTS shardid");
    } catch (const std::exception& e) {
        std::cerr << "cannot set up: " << e.what() << std::endl;
        return 2;
    }
    run("concurrent_trace_ids_8x100000", test_concurrent_trace_ids);
    run("clock_step_back_while_sessions_run", test_clock_step_back_while_sessions_run);
    run("concurrent_column_defaults", test_concurrent_column_defaults);
    run("concurrent_snowflake_instagram_twitter", test_concurrent_layouts);
    run("concurrent_decimal_ids_and_call_numbers", test_concurrent_counters);
    run("key_rotation_reaches_other_sessions", test_key_rotation_reaches_other_sessions);
    return n_failed == 0 ? 0 : 1;
}
