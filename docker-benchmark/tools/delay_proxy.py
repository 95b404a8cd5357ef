"""A TCP proxy that holds every chunk for a fixed time in each direction: the
inter-region latency of docker-compose.yml's `wan` profile.

Usage: delay_proxy.py ROUTE [ROUTE ...]
  ROUTE is LISTEN_PORT=HOST:PORT@ONE_WAY_MS, e.g. 7012=region2:7379@20: connections to
  this container's port 7012 go to region2:7379, each byte arriving 20 ms after it was
  sent, both ways (a round trip of 40 ms more than without the proxy).

Order within a connection is kept. Each direction holds at most QUEUE_CHUNKS_MAX chunks
of at most CHUNK_BYTES_MAX bytes; beyond that the proxy stops reading from the sender
(TCP backpressure) rather than buffering without limit.
"""

import asyncio
import sys
import time

CHUNK_BYTES_MAX = 64 * 1024
QUEUE_CHUNKS_MAX = 256
CONNECT_TIMEOUT_S = 5


def parse_route(text):
    listen, _, rest = text.partition("=")
    target, _, delay = rest.partition("@")
    host, _, port = target.rpartition(":")
    if not (listen and host and port and delay):
        raise ValueError(f"route {text!r}: expected LISTEN_PORT=HOST:PORT@ONE_WAY_MS")
    delay_ms = float(delay)
    assert delay_ms >= 0, f"route {text!r}: negative delay"
    return int(listen), host, int(port), delay_ms / 1000.0


async def pump(reader, writer, delay_s):
    """Copies reader to writer, each chunk written delay_s after it was read."""
    queue = asyncio.Queue(maxsize=QUEUE_CHUNKS_MAX)

    async def read_side():
        try:
            while True:
                chunk = await reader.read(CHUNK_BYTES_MAX)
                await queue.put((time.monotonic() + delay_s, chunk))
                if not chunk:
                    return
        except (ConnectionError, OSError):
            await queue.put((time.monotonic(), b""))

    async def write_side():
        try:
            while True:
                due, chunk = await queue.get()
                wait_s = due - time.monotonic()
                if wait_s > 0:
                    await asyncio.sleep(wait_s)
                if not chunk:
                    return
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            return
        finally:
            writer.close()

    reading = asyncio.create_task(read_side())
    await write_side()
    reading.cancel()


def handler(host, port, delay_s):
    async def handle(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_TIMEOUT_S
            )
        except (OSError, asyncio.TimeoutError):
            client_writer.close()
            return
        await asyncio.gather(
            pump(client_reader, server_writer, delay_s),
            pump(server_reader, client_writer, delay_s),
        )

    return handle


async def main(routes):
    servers = []
    for listen, host, port, delay_s in routes:
        server = await asyncio.start_server(handler(host, port, delay_s), "0.0.0.0", listen)
        servers.append(server)
        print(f"delay_proxy: :{listen} -> {host}:{port}, {delay_s * 1000:.0f} ms each way", flush=True)
    await asyncio.gather(*(server.serve_forever() for server in servers))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    asyncio.run(main([parse_route(arg) for arg in sys.argv[1:]]))
