// Result rows of SQL functions: columns are added in order (values[i++])
// and their number is checked against the columns the function declares,
// so a column added to the SQL and not to the C++ (or the other way round)
// is an error, not a shifted row.
#pragma once

#include "pg/base/pg.hpp"

namespace shardid::pg {

// Fails (XX000) when a row has more columns than it was made for.
void row_overflow(int capacity);

template <int N>
struct Row {
    Datum values[N];
    bool nulls[N];
    int n = 0;

    Row& add(Datum d)
    {
        if (n == N)
            row_overflow(N);
        values[n] = d;
        nulls[n++] = false;
        return *this;
    }
    Row& add_null()
    {
        if (n == N)
            row_overflow(N);
        values[n] = (Datum)0;
        nulls[n++] = true;
        return *this;
    }
};

// The OUT-parameter record of the calling function; fails (XX000) unless
// `n` is the number of its declared columns.
Datum return_record(FunctionCallInfo fcinfo, Datum* values, bool* nulls, int n);
template <int N>
Datum return_row(FunctionCallInfo fcinfo, Row<N>& row)
{
    return return_record(fcinfo, row.values, row.nulls, row.n);
}

// One row of a set-returning function materialized with
// InitMaterializedSRF(); the same check, except that an older install
// script may declare the first `oldest` columns only (the rest are not
// returned).
void put_row(FunctionCallInfo fcinfo, Datum* values, bool* nulls, int n, int oldest);
template <int N>
void put_row(FunctionCallInfo fcinfo, Row<N>& row, int oldest = N)
{
    put_row(fcinfo, row.values, row.nulls, row.n, oldest);
}

}  // namespace shardid::pg
