-- A node's history and a database's lineage (docs/install.md, "Upgrading
-- PostgreSQL"; src/pg/state/lineage.hpp): generation in a database whose
-- shardid_lineage names a history this node neither is nor adopted is
-- refused, and the check follows every change of the table, whoever writes
-- it (an apply of logical replication writes with session_replication_role
-- = replica).
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS shardid;
RESET client_min_messages;
\set VERBOSITY default

-- The installing node's history, and nothing unknown here.
SELECT history ~ '^[0-9a-f]{16}$' AS history_is_16_hex, awaiting_adoption, unknown_here, adopted = '{}' AS none_adopted,
       floors_from
FROM shardid_node_history();
SELECT count(*) AS rows, bool_and(history = (SELECT history FROM shardid_node_history())) AS all_own
FROM shardid_lineage;
SELECT next_trace_id() > 0 AS issues, next_decimal_id() > 0 AS decimal_issues, next_call_number() IS NOT NULL AS calls;

-- A history this node does not continue: refused, naming it, until the row
-- is gone; DecimalIds and call numbers too, though the database's
-- generator id and this session's run were taken before (the tests before
-- this one issued both in this database). Terse: the detail names this
-- node's own history, drawn at random.
\set VERBOSITY terse
INSERT INTO shardid_lineage (history) VALUES ('0123456789abcdef');
SELECT next_trace_id();
\echo :LAST_ERROR_SQLSTATE
SELECT next_decimal_id();
\echo :LAST_ERROR_SQLSTATE
SELECT next_call_number();
\echo :LAST_ERROR_SQLSTATE
SELECT unknown_here FROM shardid_node_history();
DELETE FROM shardid_lineage WHERE history = '0123456789abcdef';
SELECT next_trace_id() > 0 AS issues_again;

-- The same, written as logical replication's apply writes it.
SET session_replication_role = replica;
INSERT INTO shardid_lineage (history) VALUES ('0123456789abcdef');
SELECT next_trace_id();
\echo :LAST_ERROR_SQLSTATE
DELETE FROM shardid_lineage WHERE history = '0123456789abcdef';
SELECT next_trace_id() > 0 AS issues_again;
RESET session_replication_role;

-- Only what shardid writes is a history.
INSERT INTO shardid_lineage (history) VALUES ('not a history');
\echo :LAST_ERROR_SQLSTATE
\set VERBOSITY default

-- Adopting a state: superusers only, and only a node state.
SELECT shardid_adopt_state('not a node state');
\echo :LAST_ERROR_SQLSTATE
CREATE ROLE lineage_reader;
SET ROLE lineage_reader;
SELECT shardid_adopt_state(E'shardid node state v3\n');
\echo :LAST_ERROR_SQLSTATE
SELECT shardid_export_state();
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) >= 1 AS anyone_reads_the_lineage FROM shardid_lineage;
RESET ROLE;
DROP ROLE lineage_reader;
