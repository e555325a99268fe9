// The statement number (statement.hpp). Nesting is counted as
// pg_stat_statements counts it: around ExecutorRun, ExecutorFinish and
// ProcessUtility, restored on error.
#include "pg/base/statement.hpp"

extern "C" {
#include "access/xact.h"
#include "executor/executor.h"
}

namespace shardid::pg {

namespace {

uint64 number = 1;
int nesting = 0;

ExecutorStart_hook_type prev_start = nullptr;
ExecutorRun_hook_type prev_run = nullptr;
ExecutorFinish_hook_type prev_finish = nullptr;

void start_hook(QueryDesc* desc, int eflags)
{
    if (nesting == 0)
        number++;
    if (prev_start)
        prev_start(desc, eflags);
    else
        standard_ExecutorStart(desc, eflags);
}

#if PG_VERSION_NUM >= 180000
void run_hook(QueryDesc* desc, ScanDirection direction, uint64 count)
#else
void run_hook(QueryDesc* desc, ScanDirection direction, uint64 count, bool execute_once)
#endif
{
    nesting++;
    PG_TRY();
    {
#if PG_VERSION_NUM >= 180000
        if (prev_run)
            prev_run(desc, direction, count);
        else
            standard_ExecutorRun(desc, direction, count);
#else
        if (prev_run)
            prev_run(desc, direction, count, execute_once);
        else
            standard_ExecutorRun(desc, direction, count, execute_once);
#endif
    }
    PG_FINALLY();
    {
        nesting--;
    }
    PG_END_TRY();
}

void finish_hook(QueryDesc* desc)
{
    nesting++;
    PG_TRY();
    {
        if (prev_finish)
            prev_finish(desc);
        else
            standard_ExecutorFinish(desc);
    }
    PG_FINALLY();
    {
        nesting--;
    }
    PG_END_TRY();
}

// A transaction's end (a procedure's COMMIT among them) ends the statement
// as far as confirmation goes: what follows is confirmed again.
void xact_callback(XactEvent event, void*)
{
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT || event == XACT_EVENT_PREPARE ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT)
        number++;
}

}  // namespace

uint64 statement_number() { return number; }

void statement_utility_begin()
{
    if (nesting == 0)
        number++;
    nesting++;
}

void statement_utility_end()
{
    nesting--;
    if (nesting < 0)
        nesting = 0;
}

void statement_init()
{
    prev_start = ExecutorStart_hook;
    ExecutorStart_hook = start_hook;
    prev_run = ExecutorRun_hook;
    ExecutorRun_hook = run_hook;
    prev_finish = ExecutorFinish_hook;
    ExecutorFinish_hook = finish_hook;
    RegisterXactCallback(xact_callback, nullptr);
}

}  // namespace shardid::pg
