#!/usr/bin/env python3
"""Records how the real redis-cli prints replies, into format.txt.

For every case a throwaway TCP server answers redis-cli's one command with the
case's raw RESP bytes; redis-cli runs once with --no-raw and once with --raw
(FAKETTY=1 so that RESP3 push messages are shown, as on a terminal). The Rust
test tests/format_table.rs decodes the same bytes with resp::decode_reply and
must print exactly what redis-cli printed.

Usage: python3 record_format.py [path/to/redis-cli] > format.txt
"""

import os
import socket
import subprocess
import sys
import threading

REDIS_CLI = sys.argv[1] if len(sys.argv) > 1 else "redis-cli"

def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


CASES = [
    ("status", b"+OK\r\n"),
    ("status with spaces", b"+Background saving started\r\n"),
    ("error", b"-ERR wrong number of arguments for 'get' command\r\n"),
    ("error wrongtype", b"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"),
    ("integer", b":1\r\n"),
    ("integer negative", b":-9223372036854775808\r\n"),
    ("bulk", b"$5\r\nHello\r\n"),
    ("bulk empty", b"$0\r\n\r\n"),
    ("bulk escapes", bulk(b'a"b\\c\n\r\t\x07\x08\x00\x7f\xff \xc3\xa9~\x1b\x01')),
    ("bulk spaces", b"$11\r\nhello world\r\n"),
    ("bulk number", b"$4\r\n3.14\r\n"),
    ("null bulk", b"$-1\r\n"),
    ("null array", b"*-1\r\n"),
    ("resp3 null", b"_\r\n"),
    ("empty array", b"*0\r\n"),
    ("array", b"*3\r\n$1\r\na\r\n:2\r\n+three\r\n"),
    ("array with nils", b"*4\r\n$1\r\na\r\n$-1\r\n*-1\r\n$1\r\nd\r\n"),
    ("array nested", b"*3\r\n*2\r\n:1\r\n:2\r\n$3\r\nfoo\r\n*2\r\n$1\r\nx\r\n*2\r\n$1\r\ny\r\n$1\r\nz\r\n"),
    ("array nested empty", b"*2\r\n*0\r\n*1\r\n*0\r\n"),
    ("array single nested", b"*1\r\n*1\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ("array with error", b"*2\r\n+OK\r\n-ERR inner failure\r\n"),
    ("array wide", b"*12\r\n" + b"".join(b":%d\r\n" % i for i in range(11)) + b"*2\r\n$1\r\na\r\n$1\r\nb\r\n"),
    ("array wide nested wide", b"*10\r\n" + b":0\r\n" * 9 + b"*10\r\n" + b"$1\r\nv\r\n" * 10),
    ("xrange like", b"*2\r\n*2\r\n$15\r\n1526985054069-0\r\n*4\r\n$11\r\ntemperature\r\n$2\r\n36\r\n$8\r\nhumidity\r\n$2\r\n79\r\n"
        b"*2\r\n$15\r\n1526985054079-0\r\n*2\r\n$11\r\ntemperature\r\n$2\r\n37\r\n"),
    ("map", b"%2\r\n$6\r\nserver\r\n$5\r\nredis\r\n$5\r\nproto\r\n:3\r\n"),
    ("map empty", b"%0\r\n"),
    ("map multiline value", b"%2\r\n$1\r\na\r\n*2\r\n:1\r\n:2\r\n$1\r\nb\r\n*0\r\n"),
    ("map single element value", b"%1\r\n$1\r\nk\r\n*1\r\n$1\r\nv\r\n"),
    ("map nested map", b"%2\r\n$5\r\nouter\r\n%2\r\n$2\r\nk1\r\n:1\r\n$2\r\nk2\r\n%1\r\n$1\r\nx\r\n*2\r\n:7\r\n:8\r\n$4\r\nlast\r\n#t\r\n"),
    ("map aggregate key", b"%1\r\n*2\r\n:1\r\n:2\r\n$1\r\nv\r\n"),
    ("map wide", b"%10\r\n" + b"".join(b"$2\r\nk%d\r\n:%d\r\n" % (i, i) for i in range(10))),
    ("array of maps", b"*2\r\n%1\r\n$4\r\nname\r\n$1\r\na\r\n%2\r\n$4\r\nname\r\n$1\r\nb\r\n$5\r\nflags\r\n~2\r\n+x\r\n+y\r\n"),
    ("set", b"~3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"),
    ("set empty", b"~0\r\n"),
    ("set nested in array", b"*2\r\n~1\r\n:1\r\n~2\r\n:2\r\n:3\r\n"),
    ("double", b",1.5\r\n"),
    ("double integral", b",100\r\n"),
    ("double 17 digits", b",0.10000000000000001\r\n"),
    ("double exponent", b",1e+20\r\n"),
    ("double small exponent", b",3.0000000000000001e-05\r\n"),
    ("double inf", b",inf\r\n"),
    ("double minus inf", b",-inf\r\n"),
    ("double in array", b"*2\r\n$1\r\nm\r\n,2.5\r\n"),
    ("true", b"#t\r\n"),
    ("false", b"#f\r\n"),
    ("booleans in array", b"*2\r\n#t\r\n#f\r\n"),
    ("verbatim", b"=15\r\ntxt:Some string\r\n"),
    ("verbatim multiline", b"=21\r\ntxt:line one\nline two\r\n"),
    ("verbatim in array", b"*1\r\n=8\r\nmkd:# Hi\r\n"),
    ("push then reply", b">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n+OK\r\n"),
    ("push invalidate", b">2\r\n$10\r\ninvalidate\r\n*2\r\n$3\r\nfoo\r\n$3\r\nbar\r\n:1\r\n"),
    ("push invalidate null", b">2\r\n$10\r\ninvalidate\r\n_\r\n:2\r\n"),
    ("push empty", b">0\r\n$1\r\nx\r\n"),
]


def serve(sock, payload):
    conn, _ = sock.accept()
    conn.settimeout(5)
    with conn:
        conn.recv(65536)
        conn.sendall(payload)
        try:
            while conn.recv(65536):
                pass
        except OSError:
            pass


def run(payload, mode):
    for _ in range(3):
        try:
            return run_once(payload, mode)
        except subprocess.TimeoutExpired:
            pass
    raise SystemExit("redis-cli timed out three times")


def run_once(payload, mode):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    sock.settimeout(5)
    t = threading.Thread(target=serve, args=(sock, payload), daemon=True)
    t.start()
    env = dict(os.environ, FAKETTY="1")
    p = subprocess.run([REDIS_CLI, "-p", str(port), mode, "x"], capture_output=True, env=env, timeout=5)
    t.join()
    sock.close()
    if p.returncode != 0 or p.stderr:
        raise SystemExit("redis-cli failed: %r %r" % (p.returncode, p.stderr))
    return p.stdout


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


def emit_output(label, out):
    assert out.endswith(b"\n"), out
    print(label)
    for line in out[:-1].split(b"\n"):
        if all(0x20 <= c < 0x7F for c in line):
            print("| " + line.decode())
        else:
            print("|x " + escape(line))


def main():
    print("# Recorded with %s by record_format.py; do not edit by hand." % REDIS_CLI)
    print("# '<' raw RESP bytes sent by the server (escapes: \\r \\n \\\\ \\xHH);")
    print("# '| ' an output line as is, '|x ' an output line with the same escapes.")
    for name, payload in CASES:
        print()
        print("=== " + name)
        print("< " + escape(payload))
        emit_output("tty", run(payload, "--no-raw"))
        emit_output("raw", run(payload, "--raw"))


main()
