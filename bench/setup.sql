-- Objects for scripts/bench.sh.
CREATE EXTENSION shardid;
SELECT create_layout('bench_wide', '2024-01-01', '1 ms', 41, 0, 22);  -- 4M IDs per ms: the cap never binds
CREATE SEQUENCE bench_seq_cache1 CACHE 1;
CREATE SEQUENCE bench_seq_cache1000 CACHE 1000;

-- The PL/pgSQL generator of Instagram's 2011 post, as people paste it:
-- (ms since its epoch) << 23 | shard << 10 | nextval() % 1024.
CREATE SEQUENCE bench_insta_seq;
CREATE FUNCTION bench_insta_next_id(OUT result bigint) LANGUAGE plpgsql AS $$
DECLARE
    epoch_ms bigint := 1314220021721;
    seq_id bigint;
    now_ms bigint;
    shard int := 5;
BEGIN
    SELECT nextval('bench_insta_seq') % 1024 INTO seq_id;
    SELECT floor(extract(epoch FROM clock_timestamp()) * 1000) INTO now_ms;
    result := ((now_ms - epoch_ms) << 23) | (shard << 10) | seq_id;
END $$;

CREATE TABLE bench_cost (expr text, rep int, ns float8);
-- ns per row of SELECT count(g) FROM (SELECT <expr> AS g FROM generate_series(1, n)) s
CREATE FUNCTION bench_time(expr text, n int) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    t0 := clock_timestamp();
    EXECUTE format('SELECT count(g) FROM (SELECT %s AS g FROM generate_series(1, %s) i) s', expr, n);
    RETURN extract(epoch FROM clock_timestamp() - t0) * 1e9 / n;
END $$;

-- Interleaved repetitions: every round runs every expression once, in a
-- rotated order, so drifts of the machine hit all of them alike.
CREATE PROCEDURE bench_costs(exprs text[], n int, reps int) LANGUAGE plpgsql AS $$
DECLARE k int := array_length(exprs, 1);
BEGIN
    FOR r IN 1..reps LOOP
        FOR j IN 0..k - 1 LOOP
            INSERT INTO bench_cost VALUES (exprs[1 + (j + r) % k], r, bench_time(exprs[1 + (j + r) % k], n));
        END LOOP;
        COMMIT;
    END LOOP;
END $$;

-- Tables for the insert benchmark.
CREATE TABLE bench_identity (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, payload text);
CREATE TABLE bench_uuid (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), payload text);
CREATE TABLE bench_uuidv7 (id uuid PRIMARY KEY DEFAULT next_uuidv7(), payload text);
CREATE TABLE bench_snowflake (id bigint PRIMARY KEY DEFAULT next_snowflake_id(), payload text);
CREATE TABLE bench_trace (id bigint PRIMARY KEY DEFAULT next_trace_id(), payload text);

-- The node state in WAL: one row per measured round.
CREATE EXTENSION IF NOT EXISTS pg_walinspect;
CREATE TABLE bench_wal (mode text, seconds float8, l0 pg_lsn, l1 pg_lsn, ids bigint);
