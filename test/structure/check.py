#!/usr/bin/env python3
"""The house's rules, checked on the tree (test/structure/check.sh runs it):

  rooms     every source file of src/ belongs to one room; a file includes
            headers of its own room or of a room below (no reaching up);
            the pure core includes no PostgreSQL, network or glue header;
  loops     no header includes, directly or not, a header that includes it;
  size      no source file of src/ over 500 lines;
  folders   rooms are folders: at most 20 source files directly in a folder;
  suites    every file under test/ is covered by a line of test/suites.list
            (none runs silently skipped), every line covers a file, and
            docs/testing.md names every suite folder;
  settings  every setting of src/pg/base/settings.cpp's table is in
            docs/settings.md's table, and every setting there is in the code;
  errors    every SQLSTATE the code raises (an ERRCODE_ of src/, a RAISE of
            the current install script, P0001 for a RAISE without one) is in
            docs/errors.md's table, and every code there is raised;
  format    src/ and the C++ tests are as .clang-format formats them;
  release   a released script (sql/released.sha256: install and upgrade
            scripts, by checksum) is never changed again: a later change
            to SQL objects goes into the next version, with an upgrade
            script from the last release; once the control file's version
            is released, CHANGELOG.md's top heading carries its date; in a
            git checkout, every tag vX.Y.0 is annotated, on a commit whose
            control file names X.Y, and its scripts are listed
            (test/versions/truth.sh checks that every file names one
            version);
  helpers   no shell function of the harness (scripts/, test/, bench/) is
            defined in two files: a helper lives once, in scripts/lib.sh
            (servers, polling, etcd), scripts/citus.sh (Citus) or a suite
            folder's lib.sh; a suite's own functions carry names of their
            own (test doubles, which record what a script would run, are
            defined as "( name() {" or on a line marked "# test double");
  root      nothing at the top of the tree but what the project's shape
            names (README.md, "The project's shape"), or what .gitignore
            ignores (build output, fuzzer artifacts): a stray file fails.

`check.py ROOT` prints PASS/FAIL lines; `check.py --self-test ROOT` plants
one defect of each kind in a copy of the tree and checks that it is caught.
"""
import fnmatch
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Rooms, lowest first: (name, rank, files as globs relative to src/).
ROOMS = [
    ("core", 0, ["core/*"]),
    ("etcd client", 1, ["etcd/*"]),
    ("glue base", 2, ["pg/base/*"]),
    ("node state", 3, ["pg/state/*"]),
    ("node-id sources", 4, ["pg/source/*"]),
    ("generation", 5, ["pg/generate/generate.*"]),
    ("layouts", 5, ["pg/generate/layouts.*", "pg/generate/carrier_deps.cpp"]),
    ("Citus", 5, ["pg/citus/*"]),
    ("etcd", 5, ["pg/etcd/*"]),
    ("SQL functions", 6, ["pg/functions/*"]),
    ("module", 7, ["pg/module.cpp"]),
]
# Rooms are folders: at most this many source files directly in one folder.
MAX_FILES_PER_FOLDER = 20
MAX_LINES = 500
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
# What the pure core may include besides itself: the C++ standard library
# and nlohmann::json (header-only text).
CORE_SYSTEM_OK = re.compile(r"^(nlohmann/json\.hpp|[a-z_]+|[a-z_]+\.h)$")
CORE_SYSTEM_BANNED = {"curl/curl.h", "unistd.h", "sys/socket.h", "netinet/in.h", "arpa/inet.h", "netdb.h"}


def room_of(rel):
    for name, rank, globs in ROOMS:
        if any(fnmatch.fnmatch(rel, g) for g in globs):
            return name, rank
    return None, None


def sources(root):
    out = []
    for path in sorted(glob.glob(os.path.join(root, "src", "**", "*"), recursive=True)):
        if path.endswith((".cpp", ".hpp")):
            out.append(os.path.relpath(path, os.path.join(root, "src")))
    return out


def includes(root, rel):
    with open(os.path.join(root, "src", rel), encoding="utf-8") as f:
        return INCLUDE.findall(f.read())


def check_rooms(root):
    fails = []
    for rel in sources(root):
        name, rank = room_of(rel)
        if name is None:
            fails.append(f"src/{rel} belongs to no room (test/structure/check.py ROOMS)")
            continue
        for kind, inc in includes(root, rel):
            if kind == '"' and os.path.exists(os.path.join(root, "src", inc)):
                tname, trank = room_of(inc)
                if tname != name and trank >= rank:
                    fails.append(f"src/{rel} ({name}) includes {inc} ({tname}): a room includes only rooms below it")
            elif rel.startswith(("core/", "etcd/")) and kind == '"':
                fails.append(f"src/{rel} includes \"{inc}\", which is not shardid's own header")
            if rel.startswith("core/") and kind == "<" and (inc in CORE_SYSTEM_BANNED or not CORE_SYSTEM_OK.match(inc)):
                fails.append(f"src/{rel} (the pure core) includes <{inc}>")
    return fails


def check_loops(root):
    graph = {}
    for rel in sources(root):
        if rel.endswith(".hpp"):
            graph[rel] = [inc for kind, inc in includes(root, rel)
                          if kind == '"' and inc.endswith(".hpp") and os.path.exists(os.path.join(root, "src", inc))]
    fails, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for nxt in graph.get(node, []):
            if state.get(nxt) == "open":
                loop = path[path.index(nxt):] + [nxt]
                fails.append("header loop: " + " -> ".join(loop))
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return fails


def check_size(root):
    fails = []
    for rel in sources(root):
        with open(os.path.join(root, "src", rel), encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            fails.append(f"src/{rel} has {n} lines (at most {MAX_LINES}): split it by job")
    return fails


def check_folders(root):
    fails = []
    per_folder = {}
    for rel in sources(root):
        per_folder.setdefault(os.path.dirname(rel), []).append(rel)
    for folder, files in sorted(per_folder.items()):
        if len(files) > MAX_FILES_PER_FOLDER:
            fails.append(f"src/{folder} holds {len(files)} source files (at most {MAX_FILES_PER_FOLDER}): "
                         "give its rooms folders of their own")
    return fails


def check_basenames(root):
    fails = []
    # PGXS names each object's dependency list by the source's base name
    # (.deps/<name>.Po): two sources of one name share one list, and a
    # change to a header only one of them includes rebuilds neither.
    by_name = {}
    for rel in sources(root):
        if rel.endswith(".cpp"):
            by_name.setdefault(os.path.basename(rel), []).append(rel)
    for name, rels in sorted(by_name.items()):
        if len(rels) > 1:
            fails.append(f"{', '.join('src/' + r for r in rels)} share the base name {name}, and with it one "
                         "dependency list (.deps/): name them apart")
    return fails


def suite_lines(root):
    lines = []
    with open(os.path.join(root, "test", "suites.list"), encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                lines.append((line[0], line[1], line[2] if len(line) > 2 else ""))
    return lines


def check_suites(root):
    fails = []
    lines = suite_lines(root)
    kinds = {"script", "soak", "scenario", "tap", "unit", "fuzz", "integration", "regress", "helper"}
    for kind, pattern, lane in lines:
        if kind not in kinds:
            fails.append(f"test/suites.list: unknown kind \"{kind}\" for {pattern}")
        # scripts/test.sh runs a script suite in its lane; one in none never runs.
        if kind == "script" and lane not in ("native", "etcd", "etcd2", "citus"):
            fails.append(f"test/suites.list: {pattern} names no lane (native, etcd, etcd2 or citus) and would never run")
        if not glob.glob(os.path.join(root, pattern)):
            fails.append(f"test/suites.list: {pattern} matches no file")
    for dirpath, _, files in os.walk(os.path.join(root, "test")):
        for f in files:
            rel = os.path.relpath(os.path.join(dirpath, f), root)
            if f.endswith((".pyc", ".o")) or "__pycache__" in rel:
                continue
            if not any(fnmatch.fnmatch(rel, p) for _, p, _ in lines):
                fails.append(f"{rel} is in no line of test/suites.list: it would never run")
    with open(os.path.join(root, "docs", "testing.md"), encoding="utf-8") as f:
        testing = f.read()
    for kind, pattern, _ in lines:
        if kind == "helper":
            continue
        folder = os.path.dirname(pattern)
        if folder not in testing:
            fails.append(f"docs/testing.md does not name {folder} ({pattern})")
    return fails


def check_settings(root):
    with open(os.path.join(root, "src", "pg", "base", "settings.cpp"), encoding="utf-8") as f:
        code = set(re.findall(r'^\s*\{"(shardid\.[a-z_0-9]+)"', f.read(), re.M))
    with open(os.path.join(root, "docs", "settings.md"), encoding="utf-8") as f:
        documented = set(re.findall(r"^\| `(shardid\.[a-z_0-9]+)` \|", f.read(), re.M))
    fails = []
    if not code:
        fails.append("src/pg/base/settings.cpp: no setting found in its table")
    fails += [f"docs/settings.md's table lacks {s}" for s in sorted(code - documented)]
    fails += [f"docs/settings.md's table lists {s}, which the code does not define" for s in sorted(documented - code)]
    return fails


# PostgreSQL's server programs that Debian keeps off the PATH (they live in
# `pg_config --bindir`): a doc command naming one bare fails on a stock
# Debian machine ("pg_ctl: not found").
SERVER_PROGRAMS = ("pg_ctl", "initdb", "pg_basebackup", "pg_rewind", "pg_waldump")


def check_commands(root):
    fails = []
    docs = [os.path.join(root, "README.md")] + sorted(
        os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "docs")) for f in fs if f.endswith(".md"))
    bare = re.compile(r"(?:^\s*(?:\$ |sudo (?:-u \S+ )?)?|`)(" + "|".join(SERVER_PROGRAMS) + r")\s+-")
    for path in docs:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = bare.search(line)
                if m:
                    fails.append(f"{os.path.relpath(path, root)}:{n}: `{m.group(1)}` is not on a stock Debian PATH: "
                                 f"write $(pg_config --bindir)/{m.group(1)}")
    return fails


# What a doc names must be in the repository a user clones (issue 59:
# README named a tag, v1.2.0, that no clone of the branch has): a release
# tag vX.Y.Z that git does not list, or a path under one of the tree's
# folders, in backquotes or a link, that does not exist.
TOP_FOLDERS = ("src", "test", "scripts", "docs", "bench", "sql", "debian", ".ci")


def check_names(root):
    fails = []
    docs = [os.path.join(root, "README.md")] + sorted(
        os.path.join(d, f) for d, _, fs in os.walk(os.path.join(root, "docs")) for f in fs if f.endswith(".md"))
    tags = set()
    if os.path.isdir(os.path.join(root, ".git")):
        tags = set(subprocess.run(["git", "-C", root, "tag", "-l"], capture_output=True, text=True).stdout.split())
    tag = re.compile(r"(?<![\w.])v[0-9]+\.[0-9]+\.[0-9]+\b")
    quoted = re.compile(r"`[^`]+`|\]\([^)]+\)")
    path = re.compile(r"(?<![\w/.$~-])((?:" + "|".join(re.escape(t) for t in TOP_FOLDERS) +
                      r")/[A-Za-z0-9_./+-]*[A-Za-z0-9_/])")
    for doc in docs:
        rel_doc = os.path.relpath(doc, root)
        with open(doc, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                urls = [u.span() for u in re.finditer(r"https?://\S+", line)]
                for m in tag.finditer(line):
                    if m.group(0) not in tags and not any(a <= m.start() < b for a, b in urls):
                        fails.append(f"{rel_doc}:{n}: names the tag {m.group(0)}, which the repository lacks "
                                     f"(only the branch is published: name a commit, scripts/release.sh)")
                for q in quoted.finditer(line):
                    for m in path.finditer(q.group(0)):
                        if not os.path.exists(os.path.join(root, m.group(1))):
                            fails.append(f"{rel_doc}:{n}: names {m.group(1)}, which the repository lacks")
    return fails


def errcodes():
    """PostgreSQL's errcodes.txt: macro and condition name -> SQLSTATE."""
    paths = sorted(glob.glob("/usr/share/postgresql/*/errcodes.txt"))
    table = {}
    if not paths:
        return table
    with open(paths[-1], encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^([0-9A-Z]{5})\s+[EWS]\s+(ERRCODE_[A-Z_0-9]+)(?:\s+([a-z_0-9]+))?", line)
            if m:
                table[m.group(2)] = m.group(1)
                if m.group(3):
                    table[m.group(3)] = m.group(1)
    return table


def raised_codes(root):
    """SQLSTATEs the code can raise, each with where one is raised."""
    table = errcodes()
    found = {}
    for rel in sources(root):
        with open(os.path.join(root, "src", rel), encoding="utf-8") as f:
            for name in re.findall(r"\b(ERRCODE_[A-Z_0-9]+)\b", f.read()):
                found.setdefault(table.get(name, name), f"src/{rel} ({name})")
    with open(os.path.join(root, "shardid.control"), encoding="utf-8") if os.path.exists(
            os.path.join(root, "shardid.control")) else open(os.devnull) as f:
        m = re.search(r"default_version\s*=\s*'([^']+)'", f.read())
    script = os.path.join(root, "sql", f"shardid--{m.group(1) if m else '1.2'}.sql")
    with open(script, encoding="utf-8") as f:
        for stmt in re.findall(r"RAISE\s+EXCEPTION\b[^;]*;", f.read(), re.S):
            code = re.search(r"ERRCODE\s*=\s*'([a-z_0-9A-Z]+)'", stmt)
            name = code.group(1) if code else "raise_exception"
            found.setdefault(table.get(name, name), f"{os.path.basename(script)} ({name})")
    return found


# Codes PostgreSQL raises on shardid's behalf, from what shardid asks of it.
RAISED_BY_POSTGRES = {"42602": "MarkGUCPrefixReserved (a misspelt shardid. setting)"}


def check_errors(root):
    raised = dict(RAISED_BY_POSTGRES, **raised_codes(root))
    with open(os.path.join(root, "docs", "errors.md"), encoding="utf-8") as f:
        text = f.read()
    listed = set()
    for row in re.findall(r"^\| ([^|]+) \|", text, re.M):
        listed |= set(re.findall(r"\b([0-9A-Z]{5}) `", row))
    fails = []
    if not listed:
        fails.append("docs/errors.md has no errors table")
    if not errcodes():
        fails.append("PostgreSQL's errcodes.txt is not installed (Debian package postgresql-server-dev-N)")
    fails += [f"docs/errors.md's table lacks {c}, raised in {raised[c]}" for c in sorted(set(raised) - listed)]
    fails += [f"docs/errors.md's table lists {c}, which the code never raises" for c in sorted(listed - set(raised))]
    return fails


def cpp_files(root):
    files = sources(root)
    out = [os.path.join("src", f) for f in files]
    for pattern in ("test/unit/*.cpp", "test/unit/*.hpp", "test/fuzz/*.cpp", "test/integration/*.cpp", "bench/*.cpp"):
        out += sorted(os.path.relpath(p, root) for p in glob.glob(os.path.join(root, pattern)))
    return out


def check_format(root):
    try:
        r = subprocess.run(["clang-format", "--dry-run", "-Werror", "--style=file"] + cpp_files(root), cwd=root,
                           capture_output=True, text=True)
    except FileNotFoundError:
        return ["clang-format is not installed (Debian package clang-format)"]
    if r.returncode == 0:
        return []
    files = sorted(set(re.findall(r"^([^\s:]+\.(?:cpp|hpp)):\d+:\d+: (?:error|warning)", r.stderr, re.M)))
    return [f"{f} is not formatted: run clang-format -i {f}" for f in files] or [r.stderr.strip()[:400]]


# The top of the tree: the project's shape, and the tools' own files.
ROOT_ENTRIES = {"src", "sql", "expected", "test", "Makefile", "shardid.control", "README.md", "docs", "bench", "clients",
                "scripts", "debian", "META.json", "CHANGELOG.md", "LICENSE", ".ci", ".clang-format", ".gitignore",
                ".git"}


def ignored_patterns(root):
    try:
        with open(os.path.join(root, ".gitignore"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    return [l.strip().strip("/") for l in lines if l.strip() and not l.startswith("#") and "/" not in l.strip().strip("/")]


def check_root(root):
    patterns = ignored_patterns(root)
    return [f"{name} at the top of the tree is not part of the project's shape (move it, or remove it)"
            for name in sorted(os.listdir(root))
            if name not in ROOT_ENTRIES and not any(fnmatch.fnmatch(name, p) for p in patterns)]


def check_release(root):
    import hashlib
    fails = []
    def read(rel):
        with open(os.path.join(root, rel), encoding="utf-8") as f:
            return f.read()
    control = re.search(r"^default_version\s*=\s*'([0-9]+\.[0-9]+)'", read("shardid.control"), re.M)
    if not control:
        return ["shardid.control has no default_version 'X.Y'"]
    version = control.group(1)
    released = []
    for line in read("sql/released.sha256").splitlines():
        if not line.strip():
            continue
        digest, rel = line.split()
        released.append(rel)
        try:
            with open(os.path.join(root, rel), "rb") as f:
                same = hashlib.sha256(f.read()).hexdigest() == digest
        except FileNotFoundError:
            fails.append(f"{rel}, a released script, is missing")
            continue
        if not same:
            fails.append(f"{rel} changed after its release: put the change into the next version "
                         f"(its own install script and an upgrade script from the last release)")
    # Each release tag, where the tree is a git checkout with its tags: an
    # annotated tag vX.Y.0 on a commit whose control file names X.Y.
    if os.path.isdir(os.path.join(root, ".git")):
        tags = subprocess.run(["git", "-C", root, "tag", "-l", "v*"], capture_output=True, text=True).stdout.split()
        for tag in tags:
            m = re.fullmatch(r"v([0-9]+\.[0-9]+)\.0", tag)
            kind = subprocess.run(["git", "-C", root, "cat-file", "-t", tag], capture_output=True, text=True).stdout.strip()
            at = subprocess.run(["git", "-C", root, "show", f"{tag}:shardid.control"], capture_output=True, text=True).stdout
            if not m or kind != "tag" or f"default_version = '{m.group(1)}'" not in at:
                fails.append(f"tag {tag} is not an annotated vX.Y.0 tag on a commit whose shardid.control names X.Y")
            elif f"sql/shardid--{m.group(1)}.sql" not in released:
                fails.append(f"tag {tag} is released, but sql/released.sha256 lacks sql/shardid--{m.group(1)}.sql")
    heading = re.search(r"^## ([0-9.]+) \(([^)]*)\)", read("CHANGELOG.md"), re.M)
    if f"sql/shardid--{version}.sql" in released:
        if not heading or heading.group(1) != version or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", heading.group(2)):
            fails.append(f"{version} is released (sql/released.sha256), but CHANGELOG.md's top heading is not "
                         f"\"## {version} (YYYY-MM-DD)\"")
    elif released:
        # The version each released script brings an install to (1.1 for 1.0--1.1).
        last = max((tuple(int(x) for x in re.search(r"--([0-9.]+)\.sql$", r).group(1).split(".")) for r in released))
        last = ".".join(map(str, last))
        if not os.path.exists(os.path.join(root, "sql", f"shardid--{last}--{version}.sql")):
            fails.append(f"sql/shardid--{last}--{version}.sql is missing: {version} must upgrade from {last}, "
                         f"the last release")
    return fails


SHELL_FUNCTION = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{", re.M)


def check_helpers(root):
    fails = []
    where = {}
    for folder in ("scripts", "test", "bench"):
        for path in sorted(glob.glob(os.path.join(root, folder, "**", "*.sh"), recursive=True)):
            rel = os.path.relpath(path, root)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            # Test doubles stand in for the real function in one subshell:
            # defined as "( name() {", or on a line marked "# test double".
            doubles = set(re.findall(r"\(\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{", text))
            doubles |= set(re.findall(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\(\)\s*\{.*# test double$", text, re.M))
            for name in set(SHELL_FUNCTION.findall(text)) - doubles:
                where.setdefault(name, []).append(rel)
    for name, files in sorted(where.items()):
        if len(files) > 1:
            fails.append(f"the shell function {name}() is defined in {len(files)} files ({', '.join(files)}): "
                         f"one helper in a library, or a name of its own in each suite")
    return fails


CHECKS = [("rooms", check_rooms), ("loops", check_loops), ("size", check_size), ("folders", check_folders),
          ("basenames", check_basenames), ("suites", check_suites),
          ("settings", check_settings), ("commands", check_commands), ("names", check_names), ("errors", check_errors),
          ("format", check_format), ("release", check_release), ("helpers", check_helpers), ("root", check_root)]


def run(root):
    bad = 0
    for name, fn in CHECKS:
        fails = fn(root)
        if fails:
            bad += 1
            for f in fails:
                print(f"FAIL structure {name}: {f}")
        else:
            print(f"PASS structure {name}")
    return bad


def plant(root, name):
    """Plants one defect of kind `name` in the copy at root."""
    def append(rel, text):
        with open(os.path.join(root, rel), "a", encoding="utf-8") as f:
            f.write(text)
    if name == "rooms":
        append("src/pg/generate/generate.cpp", '#include "pg/generate/layouts.hpp"\n')
    elif name == "loops":
        append("src/pg/base/row.hpp", '#include "pg/base/guard.hpp"\n')
        append("src/pg/base/guard.hpp", '#include "pg/base/row.hpp"\n')
    elif name == "size":
        append("src/pg/functions/trace.cpp", "// padding\n" * MAX_LINES)
    elif name == "folders":
        for i in range(MAX_FILES_PER_FOLDER):
            append(f"src/pg/functions/planted_{i}.cpp", "")
    elif name == "basenames":
        append("src/pg/functions/codec.cpp", "")
    elif name == "helpers":
        append("test/faults/restart_lead.sh", "\nwait_until() { true; }\n")
    elif name == "suites":
        os.makedirs(os.path.join(root, "test", "newsuite"))
        append("test/newsuite/run.sh", "echo PASS new\n")
    elif name == "settings":
        path = os.path.join(root, "docs", "settings.md")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(re.sub(r"^\| `shardid\.etcd_prefix` \|.*\n", "", text, flags=re.M))
    elif name == "commands":
        append("docs/etcd.md", "Stop it with `pg_ctl -D /tmp/x stop`.\n")
    elif name == "names":
        append("docs/install.md", "Build it with `git checkout v9.9.0` and `bash scripts/no_such_script.sh`.\n")
    elif name == "errors":
        append("src/pg/functions/trace.cpp", "static int planted = ERRCODE_DISK_FULL;\n")
    elif name == "format":
        append("src/pg/functions/trace.cpp", "int   badly_formatted ( ) {return 0 ;}\n")
    elif name == "release":
        append("sql/shardid--1.0.sql", "-- a change after the release\n")
    elif name == "root":
        append("notes.txt", "a stray file\n")


def self_test(root):
    bad = 0
    for name, fn in CHECKS:
        with tempfile.TemporaryDirectory() as tmp:
            for part in ("src", "test", "docs", "bench", "sql", "debian", "scripts", ".ci"):
                shutil.copytree(os.path.join(root, part), os.path.join(tmp, part),
                                ignore=shutil.ignore_patterns("*.o", "__pycache__"))
            for part in ("README.md", ".clang-format", "shardid.control", ".gitignore", "META.json", "CHANGELOG.md"):
                shutil.copy(os.path.join(root, part), tmp)
            clean = fn(tmp)
            plant(tmp, name)
            caught = fn(tmp)
        if not clean and caught:
            print(f"PASS structure {name} catches a planted defect ({caught[0]})")
        else:
            bad += 1
            print(f"FAIL structure {name}: the planted defect was not caught (clean run: {clean[:1]})")
    return bad


if __name__ == "__main__":
    args = sys.argv[1:]
    selftest = bool(args) and args[0] == "--self-test"
    root = os.path.abspath((args[1:] if selftest else args or ["."])[0])
    sys.exit(1 if (self_test(root) if selftest else run(root)) else 0)
