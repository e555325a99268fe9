#!/usr/bin/env bash
# Decodes per second of the client libraries (clients/, docs/clients.md),
# in one run: each scheme's decoder in JavaScript and in Python over N IDs
# given as text, with the ratio to a hand-written decode of the same
# snowflakes in the same language (in JavaScript through a Number: fast and
# wrong above 2^53). The aim on this machine: 2,000,000 a second in
# JavaScript, 300,000 in Python.
#   bash bench/clients.sh [N]          (default 1000000; Python takes N / 4)
set -eu
cd "$(dirname "$0")/.."
N=${1:-1000000}
node bench/clients/decode.mjs "$N"
/usr/bin/python3 bench/clients/decode.py "$((N / 4))"
