"""Unit tests of the Python decoders (python3 -m unittest discover -s tests,
from clients/python). The comparison with the extension itself, ID by ID, is
test/clients/compare.sh."""
import datetime as dt
import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import shardid  # noqa: E402
from shardid import ShardidError  # noqa: E402

UTC = dt.timezone.utc
# Every preset's row as PostgreSQL 15 prints it (SELECT row_to_json(l) FROM
# shardid_layouts l, TimeZone UTC).
PRESET_ROWS = [
    '{"name":"snowflake","builtin":true,"epoch":"2020-01-01T00:00:00+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2089-09-06T15:47:35.552+00:00"}',
    '{"name":"twitter","builtin":true,"epoch":"2010-11-04T01:42:54.657+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2080-07-10T17:30:30.209+00:00"}',
    '{"name":"icicle","builtin":true,"epoch":"2016-02-18T09:43:20.316+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2085-10-25T01:30:55.868+00:00"}',
    '{"name":"discord","builtin":true,"epoch":"2015-01-01T00:00:00+00:00","time_unit":"00:00:00.001","time_bits":41,"shard_bits":10,"sequence_bits":12,"total_bits":63,"javascript_safe":false,"shards":1024,"ids_per_tick":4096,"ends_at":"2084-09-06T15:47:35.552+00:00"}',
    '{"name":"instagram","builtin":true,"epoch":"2011-08-24T21:07:01.721+00:00","time_unit":"00:00:00.001","time_bits":40,"shard_bits":13,"sequence_bits":10,"total_bits":63,"javascript_safe":false,"shards":8192,"ids_per_tick":1024,"ends_at":"2046-06-27T17:00:49.497+00:00"}',
]


class Refuses:
    def refused(self, code, fn, *args):
        with self.assertRaises(ShardidError) as cm:
            fn(*args)
        self.assertEqual(cm.exception.code, code, str(cm.exception))


class LayoutJson(unittest.TestCase, Refuses):
    def test_every_preset(self):
        for row in PRESET_ROWS:
            name = json.loads(row)["name"]
            self.assertEqual(shardid.layout_from_json(row), shardid.PRESETS[name])
            self.assertEqual(shardid.layout_from_json(json.loads(row)), shardid.PRESETS[name])
            self.assertEqual(shardid.layout_from_json(name), shardid.PRESETS[name])

    def test_zones_and_interval_styles(self):
        base = json.loads(PRESET_ROWS[1])
        tw = shardid.PRESETS["twitter"]
        self.assertEqual(shardid.layout_from_json({**base, "epoch": "2010-11-04T07:12:54.657+05:30"}), tw)
        self.assertEqual(shardid.layout_from_json({**base, "epoch": "2010-11-03T18:42:54.657-07:00"}), tw)
        self.assertEqual(shardid.layout_from_json({**base, "time_unit": "PT0.001S"}), tw)
        self.assertEqual(shardid.layout_from_json({**base, "time_unit": "0:00:00.001"}), tw)
        for text, ms in (("1 day", 86400000), ("1 day 02:00:00", 93600000), ("P1DT2H", 93600000),
                         ("1 2:00:00", 93600000), ("00:00:01", 1000)):
            self.assertEqual(shardid.parse_interval(text), ms, text)

    def test_refused(self):
        base = json.loads(PRESET_ROWS[0])
        self.refused("22P02", shardid.layout_from_json, '{"name":')
        self.refused("22023", shardid.layout_from_json, "[1]")
        for change in ({"shards": 2048}, {"total_bits": 62}, {"javascript_safe": True}, {"time_bits": 42},
                       {"time_bits": 41.5}, {"time_bits": True}, {"time_unit": "1 mon"},
                       {"time_unit": "00:00:00.0005"}, {"time_unit": "@ 1 sec"},
                       {"epoch": "1969-12-31T23:59:59+00:00"}, {"epoch": "2020-01-01T00:00:00.0001+00:00"}):
            self.refused("22023", shardid.layout_from_json, {**base, **change})
        self.refused("22007", shardid.layout_from_json, {**base, "epoch": "2020-01-01 00:00:00"})
        self.refused("22023", shardid.layout_from_json, {k: v for k, v in base.items() if k != "epoch"})


class Decoders(unittest.TestCase, Refuses):
    def test_known_values(self):
        self.assertEqual(shardid.snowflake_decode(1234567890123456789),
                         {"created_at": dt.datetime(2029, 4, 29, 18, 12, 2, 167000, UTC), "shard": 664, "sequence": 277})
        self.assertEqual(shardid.instagram_decode("1"),
                         {"created_at": dt.datetime(2011, 8, 24, 21, 7, 1, 721000, UTC), "shard": 0, "sequence": 1})
        self.assertEqual(shardid.trace_id_decode(7000000000000000001, "2026-02-01T00:00:00Z"),
                         {"created_at": dt.datetime(2025, 1, 13, 4, 18, 3, tzinfo=UTC), "node_no": 42574,
                          "counter": 3932161})
        self.assertEqual(shardid.decimal_id_decode(14150009200065), {"counter": 1415, "generator_id": 92, "launch_id": 65})
        self.assertEqual(shardid.eightbyte_id_decode(bytes.fromhex("0123456789abcdef")),
                         {"created_at": dt.datetime(2024, 9, 12, 14, 28, 32, 512000, UTC), "sequence": 43,
                          "generator_id": 1758, "cluster_id": 15, "mode": "spread"})
        self.assertEqual(shardid.uuidv7_decode("01890A5D-AC96-774B-BCCE-B302099A8057", 8),
                         {"created_at": dt.datetime(2023, 6, 30, 3, 34, 18, 518000, UTC), "counter": 1867, "shard": 243})
        self.assertEqual(shardid.uuidv7_decode("01890a5d-ac96-774b-bcce-b302099a8057", 32)["shard"], 4080716808)
        self.assertEqual(shardid.base62_encode(123456789, 11), "0000008M0kX")
        self.assertEqual(shardid.base62_decode("AzL8n0Y58m7"), 9223372036854775807)
        self.assertEqual(shardid.base32_decode("ilo"), 1056)
        self.assertEqual(shardid.base32_encode(9223372036854775807), "7ZZZZZZZZZZZZ")

    def test_wrong_input(self):
        r = self.refused
        r("22023", shardid.snowflake_decode, 1.5e18)  # a float has lost the ID's low bits
        r("22023", shardid.snowflake_decode, True)
        r("22P02", shardid.snowflake_decode, "12a")
        r("22P02", shardid.snowflake_decode, "")
        r("22P02", shardid.snowflake_decode, " 1 x")
        self.assertEqual(shardid.snowflake_decode(" +1 "), shardid.snowflake_decode(1))
        r("22003", shardid.snowflake_decode, "9223372036854775808")
        r("22003", shardid.snowflake_decode, 1 << 63)
        r("22003", shardid.snowflake_decode, 0)
        r("22003", shardid.snowflake_decode, -1)
        r("22023", shardid.trace_id_decode, 1 << 22)
        r("22023", shardid.decimal_id_decode, 9999999999)
        r("22023", shardid.decimal_id_decode, 9223372036854775807)
        r("22023", shardid.eightbyte_id_decode, "0123")
        r("22023", shardid.eightbyte_id_decode, "0123456789abcdeg")
        r("22023", shardid.eightbyte_id_decode, bytes(7))
        r("22P02", shardid.uuidv7_decode, "not a uuid")
        r("22023", shardid.uuidv7_decode, "b3e1c4c8-0f7e-4c39-9d65-3c8e2f2a8d11")
        r("22023", shardid.uuidv7_decode, "01890a5d-ac96-774b-ccce-b302099a8057")
        r("22023", shardid.uuidv7_decode, "01890a5d-ac96-774b-bcce-b302099a8057", 33)
        r("22P02", shardid.base62_decode, "abc!")
        r("22P02", shardid.base62_decode, "")
        r("22003", shardid.base62_decode, "AzL8n0Y58m8")
        r("22003", shardid.base32_encode, -1)
        r("22023", shardid.base32_encode, 1, 65)
        r("22023", shardid.decode_text, "nope", "1")
        r("22023", shardid.decode_text, "layout", "1")

    def test_iso_text(self):
        self.assertEqual(shardid.iso_string(0, "s"), "1970-01-01T00:00:00Z")
        self.assertEqual(shardid.iso_string(-1), "1969-12-31T23:59:59.999Z")
        self.assertEqual(shardid.iso_string(253402300800000), "+010000-01-01T00:00:00.000Z")
        self.assertEqual(shardid.iso_string(1709164800000), "2024-02-29T00:00:00.000Z")
        far = shardid.layout("far", 1577836800000, 86400000, 27, 0, 1)
        tid = 100500000 << 1
        self.assertRegex(shardid.decode_text("layout", str(tid), layout=far)["created_at"], r"^\+277[0-9]{3}-")
        self.refused("22008", shardid.id_decode, far, tid)  # past datetime's year 9999
        self.refused("22008", shardid.decode_text, "layout", str(((1 << 27) - 1) << 1), None, 0, far)

    def test_wide_fields(self):
        wide = shardid.layout("wide_shard", 1704067200000, 1000, 30, 32, 1)
        self.assertEqual(shardid.id_decode(wide, (5 << 33) | (2147483647 << 1) | 1)["shard"], 2147483647)
        self.refused("22003", shardid.id_decode, wide, (5 << 33) | (2147483648 << 1) | 1)


if __name__ == "__main__":
    unittest.main()
