#!/usr/bin/env python3
"""Regenerate the seed inputs in fuzz/seeds/{resp_parser,command_parser}/.

resp_parser inputs start with a little-endian u16: the top bit marks the client as
unauthenticated, the other bits choose where the rest is split into two reads; command_parser inputs are arguments separated by 0x00 bytes.
Run from anywhere: python3 fuzz/seeds/make_seeds.py

Files named crash_* and regress_* are inputs the fuzzer found (see fuzz/README.md); they
are kept by hand, not written here.
"""

import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def multibulk(*args: bytes) -> bytes:
    out = b"*%d\r\n" % len(args)
    for a in args:
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    return out


def split(at: int, body: bytes, unauthenticated: bool = False) -> bytes:
    assert at < 0x8000
    return struct.pack("<H", at | (0x8000 if unauthenticated else 0)) + body


RESP = {
    "ping": split(3, multibulk(b"PING")),
    "pipeline": split(20, multibulk(b"SET", b"k", b"v") + multibulk(b"GET", b"k") + multibulk(b"INCRBY", b"n", b"-5")),
    "inline_quotes": split(7, b'SET k "a b\\x00\\n" \'it\\\'s\'\r\nGET k\n\r\n'),
    "empty_commands": split(5, b"*0\r\n*-1\r\n\r\n   \n" + multibulk(b"PING")),
    "bulk_at_limit": split(9, multibulk(b"SET", b"k", b"x" * 1024)),
    "bulk_over_limit": split(9, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1025\r\n"),
    "query_over_limit": split(40, multibulk(*([b"y" * 1000] * 5))),
    "partial_multibulk": split(12, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhe"),
    "bad_headers": split(2, b"*1\r\n:1\r\n"),
    "bad_count": split(1, b"*x\r\n"),
    "negative_bulk": split(6, b"*1\r\n$-5\r\n"),
    "unbalanced_quote": split(4, b'SET "a\r\n'),
    "unauth_auth": split(6, multibulk(b"AUTH", b"user", b"pw"), unauthenticated=True),
    "unauth_too_many_args": split(9, multibulk(*([b"a"] * 11)), unauthenticated=True),
    "unauth_big_bulk": split(3, b"*2\r\n$4\r\nAUTH\r\n$16385\r\n", unauthenticated=True),
    "unauth_inline_many_args": split(8, b"a b c d e f g h i j k l\r\n", unauthenticated=True),
    "mixed": split(30, b"PING\r\n" + multibulk(b"ECHO", b"\r\n\x00") + b"GET 'a b'\n"),
}

COMMANDS = [
    [b"SET", b"k", b"v", b"NX", b"EX", b"10", b"GET"],
    [b"SET", b"k", b"v", b"PXAT", b"1700000000000", b"KEEPTTL"],
    [b"GETEX", b"k", b"PERSIST"],
    [b"EXPIRE", b"k", b"100", b"NX", b"GT"],
    [b"INCRBYFLOAT", b"k", b"1.5e3"],
    [b"SETRANGE", b"k", b"536870911", b"x"],
    [b"GETRANGE", b"k", b"-9223372036854775808", b"9223372036854775807"],
    [b"MSET", b"a", b"1", b"b"],
    [b"SCAN", b"0", b"MATCH", b"*a?", b"COUNT", b"10", b"TYPE", b"string"],
    [b"CLIENT", b"SETNAME", b"x y"],
    [b"CONFIG", b"GET", b"maxmemory"],
    [b"COMMAND", b"GETKEYS", b"SET", b"k", b"v"],
    [b"HELLO", b"3", b"AUTH", b"u", b"p", b"SETNAME", b"n"],
    [b"OBJECT", b"ENCODING", b"k"],
    [b"COPY", b"a", b"b", b"DB", b"0", b"REPLACE"],
    [b"nosuchcmd", b"a\r\nb", b"\xff\xfe"],
]


def main() -> None:
    for name, body in RESP.items():
        with open(os.path.join(HERE, "resp_parser", name), "wb") as f:
            f.write(body)
    for args in COMMANDS:
        name = args[0].decode().lower()
        with open(os.path.join(HERE, "command_parser", name), "wb") as f:
            f.write(b"\x00".join(args))


if __name__ == "__main__":
    main()
