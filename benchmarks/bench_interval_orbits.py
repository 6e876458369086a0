"""The interval orbit certificate of a worst case alone, in-process: its construction
(verifiers/multiparty/orbit.py, orbit_interval_certificate: the uniform prior's bracket in
arb balls, then the candidates it needs: the game, the orbit LP's float hints) and the
independent check of its JSON (checker/intervals.py), seconds each, with the load average.

The members are bench_speed.py's symmetric family (the same draw: `--seed`, `--ks`,
`--members`), or the problem files given. A member whose uniform bracket closes spends
its construction in arb balls; the others also in the orbit LP (`lp` in the last column:
the certificate's notes name its float hints).

Usage: python benchmarks/bench_interval_orbits.py [--seed 1] [--ks 30,40] [--members 8]
       [--max-orbit-work N] [FILE ...]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_speed import symmetric_member  # noqa: E402

from dpverify.checker import check_certificate  # noqa: E402
from dpverify.spec import load, loads  # noqa: E402
from dpverify.verifiers.multiparty.orbit import orbit_interval_certificate  # noqa: E402
from dpverify.verifiers.options import VerifyOptions  # noqa: E402


def members(args) -> list[tuple[str, object]]:
    """(name, spec) of each member: the files given, else the family's draw."""
    if args.files:
        return [(Path(f).name, load(f)) for f in args.files]
    out = []
    rng = random.Random(args.seed)
    for k in (int(v) for v in args.ks.split(",")):
        for i in range(args.members):
            _, text = symmetric_member(rng, k)
            out.append((f"symmetric-{k}-{i}", loads(text)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ks", default="30,40")
    parser.add_argument("--members", type=int, default=8)
    parser.add_argument("--max-orbit-work", type=int, default=None)
    args = parser.parse_args()
    options = (VerifyOptions(max_orbit_work=args.max_orbit_work) if args.max_orbit_work
               else VerifyOptions())
    print("| member | agent | orbits x outputs | build (s) | check (s) | width | load | route |")
    print("|---|---|---|---|---|---|---|---|")
    for name, spec in members(args):
        agent = spec.agents[0]
        start = time.perf_counter()
        try:
            cert = orbit_interval_certificate(spec, agent, "worst", options)
        except Exception as exc:  # a size limit, reported as such
            print(f"| {name} | {agent.name} | | refused | | | | {str(exc)[:60]} |")
            continue
        built = time.perf_counter() - start
        data = cert.to_json(spec.name)
        start = time.perf_counter()
        result = check_certificate(spec, data)
        checked = time.perf_counter() - start
        orbits = math.prod(len(c) + 1 for c in data["classes"])
        route = "lp" if any("float" in n for n in cert.notes) else "arb"
        ok = "" if result.ok else f" REJECTED: {result.message[:40]}"
        print(f"| {name} | {agent.name} | {orbits} x {len(cert.outputs)} | {built:.2f} | "
              f"{checked:.2f}{ok} | {float(cert.width):.2g} | {os.getloadavg()[0]:.1f} | "
              f"{route} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
