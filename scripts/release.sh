#!/usr/bin/env bash
# The commit of a release, found from the branch itself (only `main` is
# published; it carries no tags): the first commit whose CHANGELOG.md dates
# the release's heading, "## X.Y (YYYY-MM-DD)".
#   bash scripts/release.sh [X.Y]     (no argument: the latest release)
#   git checkout "$(bash scripts/release.sh 1.2)"
# Prints the full commit id; exits 1 when the history has no such release
# (or is a shallow clone that lacks it).
set -eu
cd "$(dirname "$0")/.."
version=${1:-$(sed -n 's/^## \([0-9][0-9.]*\) ([0-9]\{4\}-[0-9][0-9]-[0-9][0-9])$/\1/p' CHANGELOG.md | head -1)}
if [ -z "$version" ]; then
    echo "CHANGELOG.md dates no release" >&2
    exit 1
fi
pattern="^## ${version//./\\.} \\([0-9]{4}-[0-9]{2}-[0-9]{2}\\)\$"
commit=$(git log --reverse --format=%H -G"$pattern" -- CHANGELOG.md | head -1)
if [ -z "$commit" ]; then
    echo "no commit of this history dates release $version in CHANGELOG.md$( [ "$(git rev-parse --is-shallow-repository)" = true ] && echo " (a shallow clone: git fetch --unshallow)")" >&2
    exit 1
fi
echo "$commit"
