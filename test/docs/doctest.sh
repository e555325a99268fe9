#!/usr/bin/env bash
# The doc test: every SQL example in README.md and docs/*.md runs as shown.
#
# On a throwaway server configured as the README's "Configure" section says
# (shardid preloaded, shardid.node_id = 7, shardid.launch_id = 65; timezone
# UTC; wal_level = logical, as docs/several-nodes.md configures a writer),
# each page gets a fresh database, and its ```sql blocks run in page order
# in that database, each through `psql -X -q` as a user would type it.
# A ```text block right after a ```sql block is what psql prints for it,
# errors included (psql's row-count footer is left out). On a line of it,
# "…" stands for any text (IDs and times that differ from run to run); a
# line that is only "…" stands for any number of lines. A ```sql block
# without one must run without an error. A block written
# ```sql norun: REASON is not run (it needs other servers), and REASON must
# name the test that runs it. A ```yaml block of postgres_exporter custom
# queries runs each `query:` as a ```sql block.
#   bash test/docs/doctest.sh [PAGE.md ...]
# Prints a PASS/FAIL line per block.
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh

pages=("$@")
[ ${#pages[@]} -eq 0 ] && pages=(README.md docs/*.md)

scenario_cluster 15470 "shared_preload_libraries = 'shardid'" "shardid.node_id = 7" "shardid.launch_id = 65" \
    "timezone = 'UTC'" "log_timezone = 'UTC'" "datestyle = 'ISO, MDY'" "lc_messages = 'C'" \
    "wal_level = logical"  # docs/several-nodes.md: a writer's configuration

# Splits a page into blocks: prints "LINE<TAB>KIND<TAB>FILE" per runnable
# block, KIND sql, sql+text (FILE.out holds the shown output) or norun.
split_page() {  # PAGE OUTDIR
    python3 - "$1" "$2" <<'PY'
import re, sys
page, out = sys.argv[1], sys.argv[2]
lines = open(page, encoding="utf-8").read().split("\n")
blocks, i = [], 0
while i < len(lines):
    m = re.match(r"^(\s*)```(\S*)\s*(.*)$", lines[i])
    if not m:
        i += 1
        continue
    indent, lang, info = m.group(1), m.group(2), m.group(3)
    start, body, i = i + 1, [], i + 1
    while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
        body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
        i += 1
    blocks.append((start, lang, info, body))
    i += 1
n = 0
for k, (start, lang, info, body) in enumerate(blocks):
    if lang == "yaml" and re.search(r"^\s+query:", "\n".join(body), re.M):
        # postgres_exporter's custom queries: each query runs as SQL.
        import yaml
        for metric, spec in yaml.safe_load("\n".join(body)).items():
            n += 1
            name = f"{out}/{n:03d}"
            open(name + ".sql", "w").write(spec["query"].rstrip().rstrip(";") + ";\n")
            print(f"{start}\tsql\t{name}")
        continue
    if lang != "sql":
        continue
    if info.startswith("norun"):
        print(f"{start}\tnorun\t{info}")
        continue
    n += 1
    name = f"{out}/{n:03d}"
    open(name + ".sql", "w").write("\n".join(body) + "\n")
    kind = "sql"
    if k + 1 < len(blocks) and blocks[k + 1][1] == "text":
        # only blank lines between the two blocks
        nxt = blocks[k + 1][0]
        end = start + len(body)
        if all(not l.strip() for l in lines[end + 1:nxt - 1]):
            open(name + ".out", "w").write("\n".join(blocks[k + 1][3]) + "\n")
            kind = "sql+text"
    print(f"{start}\t{kind}\t{name}")
PY
}

# Does the actual output match the shown one ("…" matches any text)?
matches() {  # SHOWN ACTUAL
    python3 - "$1" "$2" <<'PY'
import re, sys
def norm(path):
    ls = [l.rstrip() for l in open(path, encoding="utf-8").read().split("\n")]
    while ls and not ls[-1]:
        ls.pop()
    return ls
shown, actual = norm(sys.argv[1]), norm(sys.argv[2])
pattern = "".join("(?:[^\n]*\n)*" if l == "…" else "[^\n]*".join(re.escape(p) for p in l.split("…")) + "\n"
                  for l in shown)
ok = re.fullmatch(pattern, "".join(l + "\n" for l in actual)) is not None
sys.exit(0 if ok else 1)
PY
}

# Links between the pages lead to files that exist.
links_ok() {  # PAGE: prints the broken relative links
    python3 - "$1" <<'PY'
import os, re, sys
page = sys.argv[1]
text = re.sub(r"```.*?```", "", open(page, encoding="utf-8").read(), flags=re.S)
for target in re.findall(r"\]\(([^)\s]+)\)", text):
    path = target.split("#")[0]
    if path and not re.match(r"[a-z]+:", path) and not os.path.exists(os.path.join(os.path.dirname(page), path)):
        print(target)
PY
}

for page in "${pages[@]}"; do
    [ -f "$page" ] || { fail "doc page $page is missing"; continue; }
    broken=$(links_ok "$page")
    if [ -z "$broken" ]; then pass "doc $page: its links lead to files that exist"; else fail "doc $page: broken links: $broken"; fi
    work=$(mktemp -d)
    db="doc_$(basename "$page" .md | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '_')"
    cluster_psql "$dir" "$port" -c "CREATE DATABASE $db" >/dev/null
    while IFS=$'\t' read -r line kind file; do
        where="$page:$line"
        if [ "$kind" = norun ]; then
            if grep -qE 'norun: .*(test/|sql/)' <<<"$file"; then
                pass "doc $where is not run here; ${file#norun: }"
            else
                fail "doc $where: a norun block must say which test runs it"
            fi
            continue
        fi
        actual="$work/actual"
        PGOPTIONS= stdbuf -oL "$PG_BIN/psql" -X -q -P pager=off -P footer=off -h "$dir" -p "$port" -U postgres -d "$db" \
            <"$file.sql" 2>&1 | sed -E 's/^psql:<stdin>:[0-9]+: //' >"$actual"
        if [ "$kind" = "sql+text" ]; then
            if matches "$file.out" "$actual"; then
                pass "doc $where"
            else
                fail "doc $where: psql prints something else than the page shows"
                diff "$file.out" "$actual" | head -20 | sed 's/^/    /'
            fi
        elif grep -qE '^(ERROR|FATAL|WARNING):|^psql: error' "$actual"; then
            fail "doc $where: the example fails"
            head -5 "$actual" | sed 's/^/    /'
        else
            pass "doc $where"
        fi
    done < <(split_page "$page" "$work")
    rm -rf "$work"
done

# README's function reference: where a row's notes name a volatility
# (IMMUTABLE, STABLE, VOLATILE) or STRICT, every function the row names has
# it in the catalog, in every overload.
if [ ${#@} -eq 0 ]; then
    cluster_psql "$dir" "$port" -d doc_readme -c "CREATE EXTENSION IF NOT EXISTS shardid" >/dev/null 2>&1
    procs=$(cluster_psql "$dir" "$port" -d doc_readme -At -F' ' -c "
        SELECT p.proname, p.provolatile, p.proisstrict FROM pg_catalog.pg_proc p
          JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
          JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'shardid'")
    wrong=$(PROCS=$procs python3 - <<'PY'
import os, re
procs = {}
for line in os.environ["PROCS"].splitlines():
    name, vol, strict = line.split()
    procs.setdefault(name, []).append((vol, strict == "t"))
text = open("README.md", encoding="utf-8").read()
section = re.search(r"^## Function reference\n(.*?)^## ", text, re.M | re.S).group(1)
checked = 0
for row in re.findall(r"^\| (.*) \|$", section, re.M):
    cells = [c.strip() for c in row.split(" | ")]
    if len(cells) < 3:
        continue
    notes = re.match(r"^`([A-Z ]+)`", cells[2])
    if not notes:
        continue
    words = notes.group(1).split()
    vol = {"IMMUTABLE": "i", "STABLE": "s", "VOLATILE": "v"}
    for fn in re.findall(r"`([a-z_0-9]+)\(", cells[0]):
        if fn not in procs:
            print(f"{fn} (not a function of the extension)")
            continue
        for v, strict in procs[fn]:
            checked += 1
            if any(w in vol and vol[w] != v for w in words) or ("STRICT" in words and not strict):
                print(f"{fn} is {dict((b, a) for a, b in vol.items())[v]}{' STRICT' if strict else ''}, not {' '.join(words)}")
if not checked:
    print("no row of the function reference was checked")
PY
)
    if [ -z "$wrong" ]; then
        pass "doc README.md: the function reference's volatility and STRICT match the catalog"
    else
        fail "doc README.md: the function reference contradicts the catalog: $(tr '\n' ';' <<<"$wrong")"
    fi
fi
