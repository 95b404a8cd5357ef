"""Draws bench-containers.sh's figures as a bar chart and prints them as a Markdown table.

Usage: python3 plot-bench-containers.py [CSV] [PNG]
  CSV  default docker-benchmark/results/bench-containers.csv (written by bench-containers.sh)
  PNG  default docker-benchmark/results/bench-containers.png

Needs matplotlib (pip install matplotlib).
"""

import csv
import os
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_CSV = os.path.join(HERE, "results", "bench-containers.csv")
DEFAULT_PNG = os.path.join(HERE, "results", "bench-containers.png")


def read(path):
    with open(path, newline="") as file:
        lines = file.read().splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else ""
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    assert rows, f"{path} holds no figures"
    return title, rows


def markdown(rows):
    out = ["| test | pipeline | Redis 7 (rps) | Meridian (rps) | Meridian / Redis |", "|---|---|---:|---:|---:|"]
    for row in rows:
        out.append(
            f"| {row['test']} | P={row['pipeline']} | {int(row['redis_rps']):,} | "
            f"{int(row['meridian_rps']):,} | **{float(row['ratio']):.2f}** |"
        )
    return "\n".join(out)


def plot(title, rows, png):
    labels = [f"{row['test']} P={row['pipeline']}" for row in rows]
    redis = [int(row["redis_rps"]) / 1000 for row in rows]
    meridian = [int(row["meridian_rps"]) / 1000 for row in rows]
    positions = range(len(rows))
    width = 0.38
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=120)
    axes.bar([p - width / 2 for p in positions], redis, width, label="Redis 7 (container)", color="#c0392b")
    axes.bar([p + width / 2 for p in positions], meridian, width, label="Meridian (container)", color="#2471a3")
    for p, row, height in zip(positions, rows, meridian):
        axes.annotate(f"{float(row['ratio']):.2f}x", (p + width / 2, height), ha="center", va="bottom", fontsize=9)
    axes.set_xticks(list(positions), labels)
    axes.set_ylabel("thousand requests per second (median)")
    axes.set_title("Same --cpus, --memory and core, same run; label: Meridian / Redis", fontsize=10)
    figure.suptitle("redis-benchmark -c 50 -r 1000000 against each container", fontsize=11)
    if title:
        figure.text(0.5, 0.01, "\n".join(textwrap.wrap(title, 110)), ha="center", fontsize=7, color="#555555")
    axes.legend()
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout(rect=(0, 0.06, 1, 1))
    figure.savefig(png)


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_CSV
    png = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_PNG
    title, rows = read(path)
    plot(title, rows, png)
    print(markdown(rows))
    print(f"\nchart: {png}")


if __name__ == "__main__":
    main()
