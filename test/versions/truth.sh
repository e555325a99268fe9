#!/usr/bin/env bash
# One version truth: shardid.control's default_version. Everything else that
# names shardid's version must agree with it:
#   - META.json (PGXN): "version" and provides.shardid.version, in SemVer
#     form (1.2 -> 1.2.0), and prereqs PostgreSQL >= 15;
#   - debian/changelog: the newest entry's upstream version;
#   - the SQL scripts: an install script plus upgrade scripts that lead from
#     every older version to default_version, and none beyond it;
#   - CHANGELOG.md: the newest heading;
#   - `make dist`: the PGXN archive's name and top directory.
# Then a negative control: the same checks on a copy whose control file was
# moved to another version must fail. Prints PASS/FAIL lines.
#   bash test/versions/truth.sh [DIR]
set -u
cd "$(dirname "$0")/../.."
. scripts/lib.sh

# checks DIR: prints PASS/FAIL lines for the tree in DIR.
truth_checks() {
    local dir=$1 v semver
    v=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" "$dir/shardid.control")
    check "control file names a version X.Y" 1 "$(grep -cE '^[0-9]+\.[0-9]+$' <<<"$v")"
    semver="$v.0"
    local meta
    meta=$(python3 - "$dir/META.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
p = m.get("provides", {}).get("shardid", {})
print(m.get("version"))
print(p.get("version"))
print(m.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL"))
print(m.get("meta-spec", {}).get("version"))
print(p.get("file"))
print(m.get("abstract"))
print(m.get("license"))
PY
) || meta=""
    local mv pv pg spec file abstract license
    { read -r mv; read -r pv; read -r pg; read -r spec; read -r file; read -r abstract; read -r license; } <<<"$meta"
    check "META.json version is the control file's" "$semver" "$mv"
    check "META.json provides shardid at the control file's version" "$semver" "$pv"
    check "META.json requires PostgreSQL 15 or later" "15.0.0" "$pg"
    check "META.json follows PGXN meta-spec 1.0.0" "1.0.0" "$spec"
    check "META.json's provided file exists" yes "$([ -n "$file" ] && [ -f "$dir/$file" ] && echo yes)"
    check "META.json's provided file is the full install script of the control file's version" \
        "sql/shardid--$v.sql" "$file"
    check "META.json's abstract is the control file's comment" \
        "$(sed -n "s/^comment *= *'\(.*\)'/\1/p" "$dir/shardid.control")" "$abstract"
    check "META.json names a license" yes "$([ -n "$license" ] && [ "$license" != None ] && echo yes)"

    local deb
    deb=$(sed -n '1s/^shardid (\([^)]*\)).*/\1/p' "$dir/debian/changelog")
    check "debian/changelog's newest upstream version is the control file's" "$semver" "${deb%-*}"

    # The SQL scripts: a chain of upgrades from the oldest install script's
    # version to default_version, and no script for a later one.
    local reached newest
    reached=$(cd "$dir/sql" && python3 - "$v" <<'PY'
import glob, re, sys
target = sys.argv[1]
key = lambda s: tuple(int(x) for x in s.split("."))
installs = [m.group(1) for f in glob.glob("shardid--*.sql")
            if (m := re.fullmatch(r"shardid--([0-9.]+)\.sql", f))]
upgrades = [m.groups() for f in glob.glob("shardid--*--*.sql")
            if (m := re.fullmatch(r"shardid--([0-9.]+)--([0-9.]+)\.sql", f))]
every = set(installs) | {a for a, _ in upgrades} | {b for _, b in upgrades}
reach = set(installs)
while True:
    more = {b for a, b in upgrades if a in reach} - reach
    if not more:
        break
    reach |= more
print("yes" if target in reach and all(v in reach for v in every) else "no")
print(max(every, key=key) if every else "")
PY
)
    { read -r reached; read -r newest; } <<<"$reached"
    check "upgrade scripts lead from every version to the control file's" yes "$reached"
    check "no SQL script is newer than the control file's version" "$v" "$newest"

    check "CHANGELOG.md's newest entry is the control file's version" "$v" \
        "$(sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' "$dir/CHANGELOG.md" | head -1)"
}

truth_checks .

# `make dist`: the PGXN archive is named after the version and holds
# META.json and the control file under shardid-<version>/.
v=$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" shardid.control)
if git rev-parse --verify -q HEAD >/dev/null 2>&1 && out=$(make -s dist 2>&1); then
    zip=build/shardid-$v.0.zip
    listing=$(python3 -c 'import sys, zipfile; print("\n".join(zipfile.ZipFile(sys.argv[1]).namelist()))' "$zip" 2>&1)
    if grep -qx "shardid-$v.0/META.json" <<<"$listing" && grep -qx "shardid-$v.0/shardid.control" <<<"$listing"; then
        echo "PASS make dist builds $zip with META.json and the control file"
    else
        echo "FAIL make dist: $zip lacks META.json or shardid.control: $(head -5 <<<"$listing")"
    fi
else
    echo "FAIL make dist: ${out:-not a git checkout}"
fi

# A build for a PostgreSQL that is not there fails loudly (it once built
# nothing and exited 0).
if make -s -C "$(pwd)" PG_CONFIG=/nonexistent/pg_config >/dev/null 2>&1; then
    echo "FAIL make with a PG_CONFIG that does not exist exits 0"
else
    echo "PASS make with a PG_CONFIG that does not exist fails"
fi

# Negative control: a release that bumps only the control file is caught.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r shardid.control META.json CHANGELOG.md sql debian "$tmp"/
sed -i "s/^default_version *=.*/default_version = '9.9'/" "$tmp/shardid.control"
drift=$(truth_checks "$tmp")
for what in "META.json version" "debian/changelog" "upgrade scripts lead" "CHANGELOG.md"; do
    if grep -q "^FAIL $what" <<<"$drift"; then
        echo "PASS negative control: a control file at 9.9 alone fails the check \"$what\""
    else
        echo "FAIL negative control: a control file at 9.9 alone passes the check \"$what\""
    fi
done

# A release found from the branch itself (README, docs/install.md: only
# main is published, without tags): scripts/release.sh names the commit
# that dated the latest release's CHANGELOG heading, and that commit's
# control file names the release. In a shallow clone, a SKIP line.
latest=$(sed -n 's/^## \([0-9][0-9.]*\) ([0-9]\{4\}-[0-9][0-9]-[0-9][0-9])$/\1/p' CHANGELOG.md | head -1)
if [ "$(git rev-parse --is-shallow-repository 2>/dev/null)" != false ]; then
    echo "SKIP release.sh: not a full git history (a shallow clone, or no .git)"
elif commit=$(bash scripts/release.sh "$latest" 2>&1); then
    check "scripts/release.sh $latest names a commit whose shardid.control is $latest and whose CHANGELOG dates it" \
        "default_version = '$latest' 1" \
        "$(git show "$commit:shardid.control" | grep -o "default_version = '[0-9.]*'") $(git show "$commit:CHANGELOG.md" | grep -cE "^## ${latest//./\\.} \([0-9]{4}-[0-9]{2}-[0-9]{2}\)$")"
    check "... and its parent does not date it (the first such commit)" "0" \
        "$(git show "$commit^:CHANGELOG.md" | grep -cE "^## ${latest//./\\.} \([0-9]{4}-[0-9]{2}-[0-9]{2}\)$")"
else
    fail "scripts/release.sh $latest: $commit"
fi
out=$(bash scripts/release.sh 0.1 2>&1) && fail "scripts/release.sh 0.1 names a commit: $out" ||
    pass "scripts/release.sh refuses a release the history does not date: $out"
