// The statement: the unit in which a backend confirms what it holds (a
// key read from the ring or from the Citus coordinator is used for one
// statement, then looked at again). A number that moves at every statement
// the client sends, one message's several statements and a procedure's
// transactions included (PostgreSQL's statement_timestamp() moves only per
// protocol message, and stays through a procedure's COMMIT).
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The current statement's number: it changes when a top-level statement
// starts (executor or utility) and when a transaction ends; statements run
// inside a statement (functions, triggers, SPI) share their caller's.
uint64 statement_number();

// From _PG_init: the executor hooks that count, and the transaction
// callback.
void statement_init();

// The utility hook (module.cpp) brackets every utility statement with
// these, so that the statements inside a utility (a procedure's CALL, a DO
// block) are inside it.
void statement_utility_begin();
void statement_utility_end();

}  // namespace shardid::pg
