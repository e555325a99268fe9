#!/usr/bin/env bash
# Statistical tests of obfuscate_id(1..N) with Debian's tools: `ent`
# (entropy, chi-square, serial correlation) and `rngtest` (FIPS 140-2), on
# the 63-bit and the 53-bit domain. A negative control feeds the same tests
# the unobfuscated sequence, which must fail them. Prints PASS/FAIL lines and
# the figures. Run from the repository root.
set -u
. scripts/lib.sh
N=${RANDOMNESS_N:-300000}

dir=$(pg_tmpdir)
port=15440
work=$(mktemp -d)
trap 'cluster_stop "$dir" immediate; rm -rf "$dir" "$work"' EXIT
cluster_init "$dir" "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" || exit 1
cluster_start "$dir" "$port" || exit 1
export PGOPTIONS="-c client_min_messages=warning"
# A fixed key: the verdict is then the same on every run (a random key
# would fail a 1%..99% chi-square window now and then, by chance alone).
q -c "CREATE EXTENSION shardid" \
  -c "SELECT create_obfuscation_key('random_test', '\\x5368617264696420746573742d6b6579')"

# bytes FILE EXPR BYTES: the low BYTES bytes of EXPR(v) for v = 1..N, big-endian.
bytes() {
    q -c "COPY (SELECT encode(substr(int8send($2), $((9 - $3)), $3), 'hex')
                FROM generate_series(1, $N) v) TO STDOUT" \
        | python3 -c "import sys; sys.stdout.buffer.write(bytes.fromhex(''.join(l.strip() for l in sys.stdin)))" >"$1"
}
bytes "$work/o63" "obfuscate_id(v, 'random_test')" 7        # 56 low bits of a 63-bit output
bytes "$work/o53" "obfuscate_id(v, 'random_test', 53)" 6    # 48 low bits of a 53-bit output
bytes "$work/seq" "v" 7                                      # negative control: no permutation

# judge NAME FILE EXPECT(pass|fail)
judge_stream() {
    local name=$1 file=$2 expect=$3 ent_out rng_out entropy chi_pct serial failures verdict=pass
    ent_out=$(ent "$file")
    entropy=$(awk '/^Entropy/ {print $3}' <<<"$ent_out")
    chi_pct=$(grep -o 'exceed this value [<>]*[0-9.]* percent' <<<"$ent_out" | grep -o '[0-9.]*')
    serial=$(awk '/^Serial correlation/ {print $5}' <<<"$ent_out")
    rng_out=$(rngtest <"$file" 2>&1)
    failures=$(grep -o 'failures: [0-9]*' <<<"$rng_out" | head -1 | grep -o '[0-9]*')
    blocks=$(grep -o 'successes: [0-9]*' <<<"$rng_out" | head -1 | grep -o '[0-9]*')
    python3 - "$entropy" "${chi_pct:-0}" "$serial" "${failures:-999}" <<'PY' || verdict=fail
import sys
entropy, chi, serial, failures = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
ok = entropy > 7.999 and 1.0 < chi < 99.0 and abs(serial) < 0.005 and failures <= 3
sys.exit(0 if ok else 1)
PY
    local figures="entropy $entropy bits/byte, chi-square exceeded ${chi_pct:-?}% of the time, serial correlation $serial, rngtest FIPS 140-2: $failures failures in $((${blocks:-0} + ${failures:-0})) blocks"
    if [ "$verdict" = "$expect" ]; then
        echo "PASS $name ($figures)"
    else
        echo "FAIL $name: expected the tests to $expect ($figures)"
    fi
}
judge_stream "obfuscate_id_63_bits_looks_random" "$work/o63" pass
judge_stream "obfuscate_id_53_bits_looks_random" "$work/o53" pass
judge_stream "negative_control_plain_sequence_fails" "$work/seq" fail
