#!/usr/bin/env python3
"""Records real redis-cli runs against a fresh real redis-server, into sessions.txt.

Two kinds of runs, executed in this order against one fresh server (state carries
over from run to run, so the Rust test tests/transcripts.rs replays them in the
same order against its own fresh server):

- "session": redis-cli with some flags and no command, reading the command lines
  of a .cmds file from stdin (the piped REPL); its stdout is recorded.
- "oneshot": redis-cli with options and a command on its command line, with an
  optional stdin; stdout, stderr and the exit status are recorded.

"{port}" in arguments stands for the server's port; "-p PORT" is put before
the arguments unless they contain -p or -u.

Usage: python3 record_sessions.py [redis-cli] [redis-server] > sessions.txt
"""

import os
import socket
import subprocess
import sys
import time

REDIS_CLI = sys.argv[1] if len(sys.argv) > 1 else "redis-cli"
REDIS_SERVER = sys.argv[2] if len(sys.argv) > 2 else "redis-server"
HERE = os.path.dirname(os.path.abspath(__file__))

RUNS = [
    ("session", "strings-resp2-tty", ["--no-raw"], "strings.cmds"),
    ("session", "strings-resp2-raw", ["--raw"], "strings.cmds"),
    ("session", "strings-resp3-tty", ["-3", "--no-raw"], "strings.cmds"),
    ("session", "strings-resp3-raw", ["-3", "--raw"], "strings.cmds"),
    ("session", "types-resp2-tty", ["--no-raw"], "types.cmds"),
    ("session", "types-resp3-tty", ["-3", "--no-raw"], "types.cmds"),
    ("session", "types-resp3-raw", ["-3"], "types.cmds"),
    ("session", "db-2-tty", ["-n", "2", "--no-raw"], "db.cmds"),
    ("oneshot", "flush", ["flushall"], None),
    ("oneshot", "setnx new", ["--no-raw", "SETNX", "mykey", "Hello"], None),
    ("oneshot", "setnx existing", ["--no-raw", "SETNX", "mykey", "World"], None),
    ("oneshot", "get tty", ["--no-raw", "GET", "mykey"], None),
    ("oneshot", "get piped is raw", ["GET", "mykey"], None),
    ("oneshot", "exists job", ["EXISTS", "job"], None),
    ("oneshot", "setnx job", ["SETNX", "job", "programmer"], None),
    ("oneshot", "setnx job again", ["SETNX", "job", "designer"], None),
    ("oneshot", "get job", ["GET", "job"], None),
    ("oneshot", "negative argument", ["--no-raw", "INCRBY", "counter", "-5"], None),
    ("oneshot", "error reply", ["--no-raw", "get"], None),
    ("oneshot", "error reply raw", ["get"], None),
    ("oneshot", "error -e", ["-e", "get"], None),
    ("oneshot", "error -e ok", ["-e", "--no-raw", "ping"], None),
    ("oneshot", "wrongtype", ["--no-raw", "lpush", "mykey", "x"], None),
    ("oneshot", "unknown command", ["--no-raw", "nosuchcmd", "a", "b"], None),
    ("oneshot", "auth failure", ["--user", "bob", "--pass", "secret", "--no-raw", "ping"], None),
    ("oneshot", "auth no warning", ["--no-auth-warning", "-a", "secret", "ping"], None),
    ("oneshot", "select db", ["-n", "3", "--no-raw", "set", "dbkey", "three"], None),
    ("oneshot", "select db get", ["-n", "3", "get", "dbkey"], None),
    ("oneshot", "select bad db", ["-n", "99", "--no-raw", "ping"], None),
    ("oneshot", "uri", ["-u", "redis://127.0.0.1:{port}/3", "--no-raw", "get", "dbkey"], None),
    ("oneshot", "stdin last arg", ["-x", "set", "fromstdin"], b"line one\nline \"two\"\n\x00\xff"),
    ("oneshot", "stdin last arg get", ["--no-raw", "get", "fromstdin"], None),
    ("oneshot", "repeat", ["-r", "3", "--no-raw", "incr", "rep"], None),
    ("oneshot", "repeat interval", ["-r", "2", "-i", "0.05", "incr", "rep"], None),
    ("oneshot", "setup hash", ["hset", "h1", "field1", "Hello", "n", "10"], None),
    ("oneshot", "setup zset", ["zadd", "z1", "1", "one", "2.5", "two", "1e300", "big"], None),
    ("oneshot", "setup list", ["rpush", "l1", "x", "y", "z"], None),
    ("oneshot", "resp3 hello-less map", ["-3", "--no-raw", "hgetall", "h1"], None),
    ("oneshot", "resp3 zrange", ["-3", "--no-raw", "zrange", "z1", "0", "-1", "withscores"], None),
    ("oneshot", "resp2 zrange", ["-2", "--no-raw", "zrange", "z1", "0", "-1", "withscores"], None),
    ("oneshot", "raw delimiters", ["--raw", "-d", ",", "-D", ";", "lrange", "l1", "0", "-1"], None),
    ("oneshot", "help", ["help", "setnx"], None),
    ("oneshot", "help group", ["help", "@hyperloglog"], None),
    ("oneshot", "refused", ["-p", "1", "ping"], None),
]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def escape(b):
    out = []
    for c in b:
        if c == 0x5C:
            out.append("\\\\")
        elif c == 0x0D:
            out.append("\\r")
        elif c == 0x0A:
            out.append("\\n")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def emit(label, data):
    """Writes output lines; a last line without newline is marked with '|-'."""
    print(label)
    lines = data.split(b"\n")
    for i, line in enumerate(lines):
        last = i == len(lines) - 1
        if last and line == b"":
            break
        tag = "|" if not last else "|-"
        if all(0x20 <= c < 0x7F for c in line):
            print(tag + " " + line.decode())
        else:
            print(tag + "x " + escape(line))


def main():
    port = free_port()
    server = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.05)
        env = {k: v for k, v in os.environ.items() if k not in ("FAKETTY", "REDISCLI_AUTH")}
        print("# Recorded with %s against %s by record_sessions.py; do not edit by hand." % (REDIS_CLI, REDIS_SERVER))
        print("# Output lines: '| ' as is, '|x ' escaped (\\r \\n \\\\ \\xHH); '|-' marks a last line without newline.")
        for kind, name, args, extra in RUNS:
            print()
            print("=== %s %s" % (kind, name))
            for a in args:
                print("arg " + a)
            if kind == "session":
                print("cmds " + extra)
                with open(os.path.join(HERE, extra), "rb") as f:
                    stdin = f.read()
            else:
                stdin = extra or b""
                if extra is not None:
                    print("stdin " + escape(extra))
            argv = [REDIS_CLI] + (["-p", str(port)] if "-p" not in args and "-u" not in args else []) + \
                [a.replace("{port}", str(port)) for a in args]
            p = subprocess.run(argv, input=stdin, capture_output=True, env=env, timeout=30)
            print("rc %d" % p.returncode)
            emit("stdout", p.stdout)
            emit("stderr", p.stderr)
    finally:
        server.terminate()
        server.wait()


main()
