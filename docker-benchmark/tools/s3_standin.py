"""An S3 stand-in for docker-compose.offline.yml: moto's S3 server on 0.0.0.0.

moto honours conditional writes (If-None-Match: *), so Meridian's fencing probe passes
and fencing is exercised as it would be on S3 or MinIO. Its objects live in memory:
they are gone when this container stops (MinIO keeps them in its volume).

Usage: s3_standin.py [--port 9000]
"""

import argparse

from moto.server import main as moto_main


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    moto_main(["-H", "0.0.0.0", "-p", str(args.port)])


if __name__ == "__main__":
    main()
