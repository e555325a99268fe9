-- shardid 1.3 -> 1.4: the node's history, which keeps a data directory made
-- anew (pg_upgrade, a dump restored into a new cluster) from issuing again
-- what its predecessor issued.
\echo Use "ALTER EXTENSION shardid UPDATE TO '1.4'" to load this file. \quit

-- The node's history (1.4; docs/install.md, "Upgrading PostgreSQL",
-- src/pg/state/lineage.hpp). Every data directory made anew (pg_upgrade, a
-- dump restored into a new cluster) starts without shardid.hwm; each
-- database records the histories its IDs came from in shardid_lineage,
-- which pg_dump dumps and pg_upgrade carries, and generation in a database
-- that names a history this node neither is nor adopted is refused until a
-- superuser adopts that history's node state.
CREATE FUNCTION shardid_node_history(OUT history text, OUT began timestamptz, OUT awaiting_adoption boolean,
                                     OUT adopted text[], OUT unknown_here text[], OUT floors_from text)
    RETURNS record
    AS 'MODULE_PATHNAME', 'shardid_node_history'
    LANGUAGE C VOLATILE;
COMMENT ON FUNCTION shardid_node_history() IS
    'this node''s history (16 hex digits) and when it began, whether it awaits the state of the server pg_upgrade '
    'upgraded it from, the histories whose states it adopted, those this database records that it does not '
    'continue (generation here is refused while there are any), and where its floors came from';
CREATE TABLE shardid_lineage (
    history     text NOT NULL CHECK (history ~ '^[0-9a-f]{16}$'),
    recorded_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE shardid_lineage IS
    'the node histories this database''s IDs came from: the installing node''s, and any a restore brought; '
    'dumped by pg_dump, carried by pg_upgrade';
REVOKE ALL ON shardid_lineage FROM PUBLIC;
GRANT SELECT ON shardid_lineage TO PUBLIC;
SELECT pg_catalog.pg_extension_config_dump('shardid_lineage', '');
CREATE TRIGGER shardid_lineage_changed
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON shardid_lineage
    FOR EACH STATEMENT EXECUTE FUNCTION shardid_catalog_changed();
-- The triggers that tell sessions to forget a cache fire whatever
-- session_replication_role is (a logical-replication apply writes with
-- "replica").
ALTER TABLE shardid_lineage ENABLE ALWAYS TRIGGER shardid_lineage_changed;
ALTER TABLE shardid_user_layout ENABLE ALWAYS TRIGGER shardid_user_layout_changed;
ALTER TABLE shardid_key ENABLE ALWAYS TRIGGER shardid_key_ring_changed;
INSERT INTO shardid_lineage (history) SELECT h.history FROM @extschema@.shardid_node_history() h;
CREATE FUNCTION shardid_export_state() RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_export_state'
    LANGUAGE C VOLATILE;
REVOKE EXECUTE ON FUNCTION shardid_export_state() FROM PUBLIC;
COMMENT ON FUNCTION shardid_export_state() IS
    'superusers: this node''s state as shardid.hwm holds it, which covers every ID issued so far (for '
    'shardid_adopt_state() on a server a database of this one is copied to)';
CREATE FUNCTION shardid_adopt_state(state text) RETURNS text
    AS 'MODULE_PATHNAME', 'shardid_adopt_state'
    LANGUAGE C VOLATILE STRICT;
REVOKE EXECUTE ON FUNCTION shardid_adopt_state(text) FROM PUBLIC;
COMMENT ON FUNCTION shardid_adopt_state(text) IS
    'superusers: merges the node state of the server this one was upgraded or restored from (its shardid.hwm, or '
    'its shardid_export_state()): every mark and floor only raised, its history adopted, durably; returns where '
    'the floors come from now';
