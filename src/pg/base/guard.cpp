#include "pg/base/guard.hpp"

#include "pg/base/pg.hpp"

namespace shardid::pg {

// The one place core error kinds become SQLSTATEs.
static int sqlstate_of(Error error)
{
    switch (error) {
    case Error::not_configured:
    case Error::clock_lead_exceeded:
    case Error::wait_exceeded:
    case Error::not_claimed: return ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE;
    case Error::out_of_range:
    case Error::time_exhausted: return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
    case Error::invalid_parameter: return ERRCODE_INVALID_PARAMETER_VALUE;
    case Error::invalid_text: return ERRCODE_INVALID_TEXT_REPRESENTATION;
    case Error::interrupted:
        return ERRCODE_QUERY_CANCELED;  // only if an interrupt was pending but raised nothing itself
    case Error::out_of_memory: return ERRCODE_OUT_OF_MEMORY;
    case Error::limit_exceeded: return ERRCODE_CONFIGURATION_LIMIT_EXCEEDED;
    case Error::none:
    case Error::internal: break;
    }
    return ERRCODE_INTERNAL_ERROR;
}

void raise(const Status& status)
{
    ereport(ERROR,
            (errcode(sqlstate_of(status.error)), errmsg("%s", status.message),
             status.detail[0] ? errdetail("%s", status.detail) : 0, status.hint[0] ? errhint("%s", status.hint) : 0));
    pg_unreachable();
}

}  // namespace shardid::pg
