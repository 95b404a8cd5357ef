"""Health check: exits 0 when URL answers HTTP (any status below 500) within 2 s."""

import sys
import urllib.error
import urllib.request

TIMEOUT_S = 2


def main():
    try:
        with urllib.request.urlopen(sys.argv[1], timeout=TIMEOUT_S) as response:
            return 0 if response.status < 500 else 1
    except urllib.error.HTTPError as error:
        return 0 if error.code < 500 else 1
    except OSError:
        return 1


if __name__ == "__main__":
    sys.exit(main())
