"""Creates a bucket on the S3 stand-in (moto checks no signatures), waiting for the
server to answer first. Exits 0 when the bucket exists (made now or before).

Usage: create_bucket.py ENDPOINT BUCKET [--timeout-s 60]
"""

import argparse
import sys
import time
import urllib.error
import urllib.request

REQUEST_TIMEOUT_S = 5
RETRY_INTERVAL_S = 0.5


def put_bucket(endpoint, bucket):
    request = urllib.request.Request(f"{endpoint}/{bucket}", method="PUT", data=b"")
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("endpoint")
    parser.add_argument("bucket")
    parser.add_argument("--timeout-s", type=float, default=60)
    args = parser.parse_args()
    deadline = time.monotonic() + args.timeout_s
    last = None
    while time.monotonic() < deadline:
        try:
            status = put_bucket(args.endpoint.rstrip("/"), args.bucket)
            # 409: BucketAlreadyOwnedByYou / BucketAlreadyExists.
            if status in (200, 409):
                print(f"bucket {args.bucket} ready at {args.endpoint} (HTTP {status})")
                return 0
            last = f"HTTP {status}"
        except OSError as error:
            last = str(error)
        time.sleep(RETRY_INTERVAL_S)
    print(f"bucket {args.bucket} not created within {args.timeout_s} s: {last}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
