"""A minimal RESP2 client: one socket, one command at a time, a timeout on every call.

It must never block for longer than its timeout: the nemesis pauses and partitions
nodes, and an unanswered request is exactly what the history must record as `info`.
"""

import socket


class RespError(Exception):
    """An error reply (`-ERR ...`): the server answered, and said no."""


class Client:
    def __init__(self, host, port, timeout_s):
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def call(self, *args):
        """Send one command; return its reply (bytes, int, list or None). Raises
        RespError on an error reply and OSError (socket.timeout included) on I/O."""
        out = [b"*%d\r\n" % len(args)]
        for arg in args:
            arg = arg if isinstance(arg, bytes) else str(arg).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(arg), arg))
        self.sock.sendall(b"".join(out))
        return self._reply()

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("connection closed by the server")
        self.buf += chunk

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self._fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise ConnectionError(f"not a RESP2 reply: {line[:40]!r}")


def info(client, section):
    """INFO `section` as a dict of its `name:value` lines."""
    text = client.call("INFO", section).decode(errors="replace")
    fields = {}
    for line in text.splitlines():
        if ":" in line and not line.startswith("#"):
            name, value = line.split(":", 1)
            fields[name] = value
    return fields
