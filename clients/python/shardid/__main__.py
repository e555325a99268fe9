"""shardid's command line for Python (docs/clients.md):

  python3 -m shardid decode SCHEME [--near ISO-8601] [--shard-bits N] [--layout JSON]
  python3 -m shardid encode base62|base32 [--width N]
  python3 -m shardid decode base62|base32

Reads one value a line on standard input and writes one line for each: for
a SCHEME, a JSON object whose keys are the SQL function's OUT columns. A
line that is not a valid value gets an error on stderr naming its number
and text; the exit status is then 1 (2 for a wrong command).
"""
import json
import sys
import time

from . import (SCHEMES, ShardidError, __version__, base32_decode, base32_encode, base62_decode, base62_encode,
               decode_text, layout_from_json, to_unix_ms)

USAGE = f"""usage: shardid decode SCHEME [--near ISO-8601] [--shard-bits N] [--layout JSON]
       shardid encode base62|base32 [--width N]
       shardid decode base62|base32
SCHEME: {', '.join(SCHEMES)}. One value a line on standard input, one line out for each."""


def usage(why):
    sys.stderr.write(f"shardid: {why}\n{USAGE}\n")
    sys.exit(2)


def parse_args(argv):
    if argv[:1] == ["--version"]:
        print(__version__)
        sys.exit(0)
    if argv[:1] in (["--help"], ["-h"]):
        print(USAGE)
        sys.exit(0)
    if not argv:
        usage("no command")
    command, rest = argv[0], argv[1:]
    if command not in ("decode", "encode"):
        usage(f'unknown command "{command}"')
    if not rest:
        usage(f"{command} needs a scheme")
    scheme, rest = rest[0], rest[1:]
    allowed = ({"base62": ["--width"], "base32": ["--width"]} if command == "encode" else
               {"trace": ["--near"], "uuidv7": ["--shard-bits"], "layout": ["--layout"], "base62": [], "base32": []})
    if command == "encode" and scheme not in allowed:
        usage(f'encode takes base62 or base32, not "{scheme}"')
    if command == "decode" and scheme not in SCHEMES and scheme not in allowed:
        usage(f'unknown scheme "{scheme}"')
    options = {}
    i = 0
    while i < len(rest):
        name, eq, value = rest[i].partition("=")
        if not eq:
            i += 1
            value = rest[i] if i < len(rest) else None
        i += 1
        if name not in allowed.get(scheme, []):
            usage(f"{command} {scheme} takes no option {name}")
        if value is None:
            usage(f"{name} needs a value")
        try:
            if name == "--near":
                options["near"] = to_unix_ms(value, "near")
            elif name == "--layout":
                options["layout"] = layout_from_json(value)
        except ShardidError as e:
            usage(f"{name}: {e}")
        if name in ("--shard-bits", "--width"):
            if not value.isascii() or not value.isdigit() or len(value) > 3:
                usage(f'{name} takes a whole number, not "{value}"')
            options["width" if name == "--width" else "shard_bits"] = int(value)
    if scheme == "layout" and "layout" not in options:
        usage("decode layout needs --layout (a row of shardid_layouts as JSON, or a built-in layout's name)")
    if command == "decode" and scheme == "trace" and "near" not in options:
        options["near"] = int(time.time() * 1000)
    return command, scheme, options


def main(argv=None):
    command, scheme, options = parse_args(sys.argv[1:] if argv is None else argv)
    if command == "encode":
        enc = base62_encode if scheme == "base62" else base32_encode
        width = options.get("width", 0)
        convert = lambda t: enc(t, width)  # noqa: E731
    elif scheme in ("base62", "base32"):
        dec = base62_decode if scheme == "base62" else base32_decode
        convert = lambda t: str(dec(t))  # noqa: E731
    else:
        dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
        convert = lambda t: dumps(decode_text(scheme, t, **options))  # noqa: E731
    failed = 0
    out = []
    write = sys.stdout.write
    for n, line in enumerate(sys.stdin, 1):
        text = line[:-1] if line.endswith("\n") else line
        if text.endswith("\r"):
            text = text[:-1]
        try:
            out.append(convert(text))
        except ShardidError as e:
            failed += 1
            if out:
                write("\n".join(out) + "\n")
                out = []
            sys.stdout.flush()
            shown = text if len(text) <= 100 else text[:100] + "..."
            detail = f"\n  {e.detail}" if e.detail else ""
            sys.stderr.write(f"shardid: line {n}: {json.dumps(shown)}: {e} (SQLSTATE {e.code}){detail}\n")
        if len(out) >= 4096:
            write("\n".join(out) + "\n")
            out = []
    if out:
        write("\n".join(out) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
