"""On a machine with an NVIDIA card: the agent's NVML path (jobs/execution/agent/usage.py
``card_usage``) against a real CUDA PyTorch process; exits 1 unless it sees the process's
GPU use and memory. Needs Python with torch (CUDA) and nvidia-ml-py; no database.

    .venv/bin/python bench/usage_nvml_check.py [--card 0] [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

from scratch import django_setup

BURN = """
import torch
x = torch.randn(8192, 8192, device="cuda")  # 256 MiB, and more for the products
while True:
    y = x @ x
    torch.cuda.synchronize()
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--card", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    os.environ.setdefault("TRAINYARD_VAR_DIR", "/tmp/trainyard-nvml-check")
    django_setup()
    from jobs.execution.agent.usage import card_usage, nvml

    if nvml() is None:
        sys.exit("NVML did not load: no NVIDIA driver here")
    idle = card_usage([args.card])
    print("before:", idle)
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(args.card)}
    burner = subprocess.Popen([sys.executable, "-c", BURN], env=env)
    seen = []
    try:
        deadline = time.monotonic() + args.seconds
        while time.monotonic() < deadline:
            time.sleep(2)
            seen.append(card_usage([args.card]))
            print("burning:", seen[-1])
    finally:
        burner.kill()
    busy = [cards[0] for cards in seen if cards]
    ok = any(c["util"] > 0 for c in busy) and any(c["memory_mib"] > 256 for c in busy)
    print("OK: GPU use and memory seen" if ok else "FAILED: no GPU use or memory seen")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
